package runner

import (
	"context"
	"fmt"
	"slices"
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
		var (
			progress []float64
			asked    []SplitAsk
		)
		h := Hooks{
			Split: func(_ context.Context, ask SplitAsk) (*workqueue.SplitPlan, error) {
				asked = append(asked, ask)
				next := answers[0]
				if len(answers) > 1 {
					answers = answers[1:]
				}
				return next, nil
			},
			Progress: func(p float64) { progress = append(progress, p) },
		}
		// Each part is read once, as soon as it is seen complete: the first while the second
		// is still running.
		var read []string
		seen := map[string]bool{}
		complete := func(name string) *workqueue.Failure {
			if !seen[name] {
				seen[name] = true
				read = append(read, fmt.Sprintf("%s at %.2f", name, progress[len(progress)-1]))
			}
			return nil
		}
		got, fail := (&FFmpeg{}).waitParts(context.Background(), plan(job.StatusWaiting, job.StatusWaiting), h, time.Second, time.Now().Add(time.Minute), time.Minute, complete)
		if fail != nil || !got.Done() {
			t.Fatalf("waitParts = %+v, %+v; want every part complete", got, fail)
		}
		// Each question asks the control plane to hold its answer until more parts are
		// complete than the runner has seen.
		if want := []SplitAsk{{Wait: time.Second}, {Wait: time.Second}, {Wait: time.Second, Complete: 1}}; !slices.Equal(asked, want) {
			t.Fatalf("asked %+v, want %+v", asked, want)
		}
		if want := []string{"split_part_001.mp4 at 0.71", "split_part_002.mp4 at 0.95"}; !slices.Equal(read, want) {
			t.Fatalf("parts read %q, want %q", read, want)
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
	t.Run("a part that cannot be read", func(t *testing.T) {
		t.Parallel()
		h := Hooks{
			Split: func(context.Context, SplitAsk) (*workqueue.SplitPlan, error) {
				return plan(job.StatusComplete, job.StatusRunning), nil
			},
			Progress: func(float64) {},
		}
		broken := &workqueue.Failure{Kind: workqueue.KindInternal, Message: "reading part split_part_001.mp4"}
		_, fail := (&FFmpeg{}).waitParts(context.Background(), plan(job.StatusRunning, job.StatusRunning), h, 0, time.Now().Add(time.Minute), time.Minute,
			func(string) *workqueue.Failure { return broken })
		if fail != broken {
			t.Fatalf("failure %+v, want the read's", fail)
		}
	})
	t.Run("past the deadline", func(t *testing.T) {
		t.Parallel()
		h := Hooks{
			Split: func(context.Context, SplitAsk) (*workqueue.SplitPlan, error) {
				return plan(job.StatusComplete, job.StatusRunning), nil
			},
			Progress: func(float64) {},
		}
		_, fail := (&FFmpeg{}).waitParts(context.Background(), plan(job.StatusRunning, job.StatusRunning), h, 0, time.Now().Add(600*time.Millisecond), 3*time.Second,
			func(string) *workqueue.Failure { return nil })
		if fail == nil || fail.Kind != workqueue.KindTimeout || !strings.Contains(fail.Message, "time limit of 3 seconds") ||
			!strings.Contains(fail.Message, "part 2 of 2 not complete") {
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
	h := Hooks{Split: func(_ context.Context, ask SplitAsk) (*workqueue.SplitPlan, error) {
		calls++
		if src := ask.Source; src == nil || src.Duration != 60 || ask.Wait != 0 {
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
