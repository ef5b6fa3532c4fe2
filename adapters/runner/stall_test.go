package runner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// hang is a command the validator accepts that really hangs: select=0 lets no frame through,
// so FFmpeg reads its endless source for ever and never writes the frame that would reach -t.
const hang = "ffmpeg -f lavfi -i testsrc=s=64x64:r=25 -vf select=0 -t 5 out.mp4"

// TestStallWatchdog: a run whose frames, media time and bytes written do not move for the
// stall time is stopped, well before its time limit, and fails RUNNER_STALLED, retryable; a
// run slower than the stall time that keeps writing is not stopped; a chain names the step.
func TestStallWatchdog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Four seconds: on a loaded 2-vCPU machine FFmpeg took over 2 s to start in the sandbox
	// and write its first progress, which a stall time of 2 s took for a stall.
	const stall = 4
	caps := workqueue.Limits{StallSeconds: stall}

	t.Run("a hang is stopped", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		res := b.runCapped(t, "", hang, 2*time.Minute, caps)
		took := time.Since(began)
		e := failed(res)
		if e == nil || e.Code != problem.CodeRunnerStalled || !e.Retryable || !strings.Contains(e.Message, "for 4 seconds") || len(res.Files) != 0 {
			t.Fatalf("error %+v, files %v; want RUNNER_STALLED, retryable, naming the 4 seconds", e, res.Files)
		}
		if took > (stall+5)*time.Second {
			t.Errorf("the hang was stopped after %v, want within the stall time (%d s) plus 5 s", took, stall)
		}
	})

	t.Run("a slow run that writes is not", func(t *testing.T) {
		t.Parallel()
		// -re reads the source at its own rate: 8 seconds of writing, twice the stall time.
		res := b.runCapped(t, "", "ffmpeg -re -f lavfi -i testsrc=d=8:s=64x64:r=25 -c:v libx264 -preset ultrafast -tune zerolatency out.mp4", time.Minute, caps)
		if res.Failure != nil {
			t.Fatalf("a run that kept writing failed: %+v", failed(res))
		}
	})

	t.Run("a hung step of a chain", func(t *testing.T) {
		t.Parallel()
		res := b.runParams(t, "", map[string]any{"steps": []string{"ffmpeg -f lavfi -i testsrc=d=1:s=64x64 a.mp4", hang}}, 2*time.Minute, caps)
		if e := failed(res); e == nil || e.Code != problem.CodeRunnerStalled || !strings.HasPrefix(e.Message, "step 2 of 2: ") {
			t.Fatalf("error %+v, want RUNNER_STALLED naming step 2 of 2", e)
		}
	})
}
