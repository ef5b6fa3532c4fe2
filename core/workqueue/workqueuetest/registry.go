package workqueuetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// MemoryRegistry is a workqueue.Registry in memory.
type MemoryRegistry struct {
	mu   sync.Mutex
	seen map[string]workqueue.Worker
}

// NewMemoryRegistry returns an empty registry.
func NewMemoryRegistry() *MemoryRegistry { return &MemoryRegistry{seen: map[string]workqueue.Worker{}} }

// Seen records the runner.
func (m *MemoryRegistry) Seen(_ context.Context, w workqueue.Worker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.seen[w.Name]; !ok || w.At.After(prev.At) || w.Class != prev.Class {
		m.seen[w.Name] = w
	}
	return nil
}

// Live counts the runners seen since.
func (m *MemoryRegistry) Live(_ context.Context, since time.Time) (map[job.Class]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[job.Class]int{}
	for _, w := range m.seen {
		if !w.At.Before(since) {
			out[w.Class]++
		}
	}
	return out, nil
}

// ExerciseRegistry is the shared suite of workqueue.Registry adapters.
func ExerciseRegistry(t *testing.T, newRegistry func(t *testing.T) workqueue.Registry) {
	t.Helper()
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	t.Run("CountsLiveRunnersPerClass", func(t *testing.T) {
		t.Parallel()
		r, ctx := newRegistry(t), context.Background()
		for _, w := range []workqueue.Worker{
			{Name: "cpu-1", Class: job.ClassCPU, At: base},
			{Name: "cpu-2", Class: job.ClassCPU, At: base.Add(-2 * time.Minute)},
			{Name: "gpu-1", Class: job.ClassGPU, At: base.Add(-10 * time.Second)},
			{Name: "cpu-1", Class: job.ClassCPU, At: base.Add(-time.Hour)}, // an older sighting changes nothing
		} {
			if err := r.Seen(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		got, err := r.Live(ctx, base.Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(map[job.Class]int{job.ClassCPU: 1, job.ClassGPU: 1}, got); d != "" {
			t.Fatalf("live (-want +got):\n%s", d)
		}
		if err := r.Seen(ctx, workqueue.Worker{Name: "cpu-2", Class: job.ClassCPU, At: base}); err != nil {
			t.Fatal(err)
		}
		if got, _ := r.Live(ctx, base.Add(-time.Minute)); got[job.ClassCPU] != 2 {
			t.Fatalf("after cpu-2 asked again: %v", got)
		}
		if got, _ := r.Live(ctx, base.Add(time.Second)); len(got) != 0 {
			t.Fatalf("nobody was seen after base: %v", got)
		}
	})
}
