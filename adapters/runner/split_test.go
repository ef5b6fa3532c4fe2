package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// TestWaitParts: the wait for a split's parts follows their states to the end, telling the
// job's progress as their mean, and holds the job's time limit: parts still running at its
// deadline fail the job RUNNER_TIMEOUT.
func TestWaitParts(t *testing.T) {
	t.Parallel()
	plan := func(states ...job.Status) *workqueue.SplitPlan {
		p := &workqueue.SplitPlan{}
		for i, s := range states {
			p.Parts = append(p.Parts, workqueue.PartState{Name: "split_part_00" + string(rune('1'+i)) + ".mp4", Status: s, Progress: 0.5})
		}
		return p
	}
	t.Run("to the end", func(t *testing.T) {
		t.Parallel()
		answers := []*workqueue.SplitPlan{plan(job.StatusRunning, job.StatusWaiting), plan(job.StatusComplete, job.StatusRunning), plan(job.StatusComplete, job.StatusComplete)}
		var progress []float64
		h := Hooks{
			Split: func(context.Context, *workqueue.SplitSource) (*workqueue.SplitPlan, error) {
				next := answers[0]
				if len(answers) > 1 {
					answers = answers[1:]
				}
				return next, nil
			},
			Progress: func(p float64) { progress = append(progress, p) },
		}
		got, fail := (&FFmpeg{}).waitParts(context.Background(), plan(job.StatusWaiting, job.StatusWaiting), h, time.Now().Add(time.Minute), time.Minute)
		if fail != nil || !got.Done() {
			t.Fatalf("waitParts = %+v, %+v; want every part complete", got, fail)
		}
		want := []float64{0.95 * 0.5, 0.95 * 0.75, 0.95}
		if len(progress) != len(want) {
			t.Fatalf("progress %v, want %v", progress, want)
		}
		for i := range want {
			if d := progress[i] - want[i]; d > 1e-9 || d < -1e-9 {
				t.Fatalf("progress %v, want %v", progress, want)
			}
		}
	})
	t.Run("past the deadline", func(t *testing.T) {
		t.Parallel()
		h := Hooks{
			Split: func(context.Context, *workqueue.SplitSource) (*workqueue.SplitPlan, error) {
				return plan(job.StatusRunning, job.StatusRunning), nil
			},
			Progress: func(float64) {},
		}
		_, fail := (&FFmpeg{}).waitParts(context.Background(), plan(job.StatusRunning, job.StatusRunning), h, time.Now().Add(600*time.Millisecond), 3*time.Second)
		if fail == nil || fail.Kind != workqueue.KindTimeout || !strings.Contains(fail.Message, "time limit of 3 seconds") {
			t.Fatalf("failure %+v, want a timeout", fail)
		}
	})
}

// TestTellSplitAsksAgain: a lost answer to the heartbeat that tells the input is asked for
// again, never taken as "run whole": the control plane may have cut the input already.
func TestTellSplitAsksAgain(t *testing.T) {
	t.Parallel()
	calls := 0
	want := &workqueue.SplitPlan{Parts: []workqueue.PartState{{Name: "split_part_001.mp4"}}}
	h := Hooks{Split: func(_ context.Context, src *workqueue.SplitSource) (*workqueue.SplitPlan, error) {
		calls++
		if src == nil || src.Duration != 60 {
			t.Errorf("call %d told %+v, want the source each time", calls, src)
		}
		if calls < 3 {
			return nil, workqueue.ErrUnavailable
		}
		return want, nil
	}}
	got, err := tellSplit(context.Background(), h, &workqueue.SplitSource{Duration: 60})
	if err != nil || got != want || calls != 3 {
		t.Fatalf("tellSplit = %+v, %v after %d calls; want the plan after 3", got, err, calls)
	}
}
