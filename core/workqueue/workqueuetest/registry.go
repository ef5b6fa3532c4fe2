package workqueuetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
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

// RegistryFeatures says what a workqueue.Registry adapter can do. Every adapter (memory, SQLite,
// PostgreSQL) does all the suite asks, so it has no field yet: a new adapter passes every test,
// and a field is added here only when a real adapter cannot do something the others can.
type RegistryFeatures struct{}

// RegistryConstructor returns an empty registry of its own, cleaned up by the adapter's test.
type RegistryConstructor func(t *testing.T) workqueue.Registry

// TestRegistry runs the shared workqueue.Registry suite: each test below, in parallel, against
// registries that newRegistry makes. An adapter's own test calls it once per backend.
func TestRegistry(t *testing.T, f RegistryFeatures, newRegistry RegistryConstructor) {
	t.Helper()
	tests := []func(t *testing.T, f RegistryFeatures, newRegistry RegistryConstructor){
		TestCountsLiveRunnersPerClass,
	}
	porttest.Run(t, f, newRegistry, tests...)
}

// registryBase is the time the suite's runners are last seen around.
var registryBase = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// TestCountsLiveRunnersPerClass: Live counts the runners of each class seen since a time, by their
// latest sighting; an older one changes nothing.
func TestCountsLiveRunnersPerClass(t *testing.T, f RegistryFeatures, newRegistry RegistryConstructor) {
	t.Parallel()
	r, ctx := newRegistry(t), context.Background()
	for _, w := range []workqueue.Worker{
		{Name: "cpu-1", Class: job.ClassCPU, At: registryBase},
		{Name: "cpu-2", Class: job.ClassCPU, At: registryBase.Add(-2 * time.Minute)},
		{Name: "gpu-1", Class: job.ClassGPU, At: registryBase.Add(-10 * time.Second)},
		{Name: "cpu-1", Class: job.ClassCPU, At: registryBase.Add(-time.Hour)}, // an older sighting changes nothing
	} {
		if err := r.Seen(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.Live(ctx, registryBase.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[job.Class]int{job.ClassCPU: 1, job.ClassGPU: 1}, got); d != "" {
		t.Fatalf("live (-want +got):\n%s", d)
	}
	if err := r.Seen(ctx, workqueue.Worker{Name: "cpu-2", Class: job.ClassCPU, At: registryBase}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Live(ctx, registryBase.Add(-time.Minute)); got[job.ClassCPU] != 2 {
		t.Fatalf("after cpu-2 asked again: %v", got)
	}
	if got, _ := r.Live(ctx, registryBase.Add(time.Second)); len(got) != 0 {
		t.Fatalf("nobody was seen after base: %v", got)
	}
}
