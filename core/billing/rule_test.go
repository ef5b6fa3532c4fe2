package billing_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// TestBillFor reads as the billing rule of docs/api.md: every terminal outcome, what it costs.
// Default pricing: 1 credit per CPU second, 10 per GPU second, rounded up, 1 s minimum.
func TestBillFor(t *testing.T) {
	t.Parallel()
	p := billing.Default()
	const (
		ran    = true
		notRan = false
	)
	tests := []struct {
		name    string
		status  job.Status
		code    problem.Code
		started bool
		ms      int64
		class   job.Class
		want    int64
	}{
		{"complete: compute used, rounded up", job.StatusComplete, "", ran, 2300, job.ClassCPU, 3},
		{"complete: whole seconds stay whole", job.StatusComplete, "", ran, 3000, job.ClassCPU, 3},
		{"complete: a very short run pays the 1 s minimum", job.StatusComplete, "", ran, 40, job.ClassCPU, 1},
		{"complete: a run measured as 0 ms pays the minimum", job.StatusComplete, "", ran, 0, job.ClassCPU, 1},
		{"complete on GPU: the GPU rate", job.StatusComplete, "", ran, 2300, job.ClassGPU, 30},
		{"RUNNER_ERROR: FFmpeg exited non-zero, compute used", job.StatusFailed, problem.CodeRunnerError, ran, 1500, job.ClassCPU, 2},
		{"VALIDATION_ERROR found at run time after the step started", job.StatusFailed, problem.CodeValidation, ran, 10, job.ClassCPU, 1},
		{"VALIDATION_ERROR found at run time before anything ran", job.StatusFailed, problem.CodeValidation, notRan, 0, job.ClassCPU, 0},
		{"LIMIT_EXCEEDED: a per-job cap stopped it", job.StatusFailed, problem.CodeLimitExceeded, ran, 4100, job.ClassCPU, 5},
		{"RUNNER_TIMEOUT is free", job.StatusFailed, problem.CodeRunnerTimeout, ran, 300000, job.ClassCPU, 0},
		{"RUNNER_TIMEOUT on GPU is free", job.StatusFailed, problem.CodeRunnerTimeout, ran, 300000, job.ClassGPU, 0},
		{"RUNNER_STALLED is free", job.StatusFailed, problem.CodeRunnerStalled, ran, 60000, job.ClassCPU, 0},
		{"INPUT_FETCH_FAILED is free", job.StatusFailed, problem.CodeInputFetchFailed, notRan, 0, job.ClassCPU, 0},
		{"RUNNER_LOST is free, even after compute ran", job.StatusFailed, problem.CodeRunnerLost, ran, 9000, job.ClassCPU, 0},
		{"INTERNAL_ERROR (a full disk, storage) is free", job.StatusFailed, problem.CodeInternal, ran, 9000, job.ClassCPU, 0},
		{"INSUFFICIENT_CREDITS before dispatch is free", job.StatusFailed, problem.CodeInsufficientCredits, notRan, 0, job.ClassCPU, 0},
		{"an unknown failure code is free", job.StatusFailed, "SOMETHING_NEW", ran, 9000, job.ClassCPU, 0},
		{"cancelled while waiting or dispatched is free", job.StatusCancelled, "", notRan, 0, job.ClassCPU, 0},
		{"cancelled while running: compute up to the stop", job.StatusCancelled, "", ran, 2500, job.ClassCPU, 3},
		{"cancelled on GPU while running", job.StatusCancelled, "", ran, 100, job.ClassGPU, 10},
		{"not terminal: nothing yet", job.StatusRunning, "", ran, 5000, job.ClassCPU, 0},
	}
	for _, tc := range tests {
		got := p.BillFor(billing.Outcome{Status: tc.status, Code: tc.code, Started: tc.started, ComputeMs: tc.ms, Class: tc.class})
		if got.Amount != tc.want {
			t.Errorf("%s: %d credits (%s), want %d", tc.name, got.Amount, got.Reason, tc.want)
		}
		if got.Free() != (tc.want == 0) || got.Reason == "" {
			t.Errorf("%s: Free() %v, reason %q", tc.name, got.Free(), got.Reason)
		}
	}
}

func TestBillableSecondsRounding(t *testing.T) {
	t.Parallel()
	p := billing.Default()
	for ms, want := range map[int64]int64{-5: 1, 0: 1, 1: 1, 999: 1, 1000: 1, 1001: 2, 59999: 60} {
		if got := p.BillableSeconds(ms); got != want {
			t.Errorf("BillableSeconds(%d) = %d, want %d", ms, got, want)
		}
	}
}
