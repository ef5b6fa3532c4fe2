package problem_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

func TestRetryable(t *testing.T) {
	t.Parallel()
	want := map[problem.Code]bool{
		problem.CodeValidation: false, problem.CodePlanLimit: false, problem.CodeRateLimited: true,
		problem.CodeRunnerError: false, problem.CodeRunnerTimeout: false, problem.CodeRunnerLost: true,
		problem.CodeInputFetchFailed: true, problem.CodeLimitExceeded: false, problem.CodeInternal: true,
		problem.CodeUnavailable: true, problem.CodeCancelled: false,
	}
	for c, w := range want {
		if c.Retryable() != w || !c.Known() {
			t.Errorf("%s: retryable %v known %v, want %v", c, c.Retryable(), c.Known(), w)
		}
	}
	if problem.Code("NOPE").Known() {
		t.Error("an unknown code is known")
	}
	if len(problem.Codes()) < len(want) {
		t.Errorf("Codes() lists %d codes", len(problem.Codes()))
	}
}

func TestCodeOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want problem.Code
	}{
		{problem.Reject(problem.CodePlanLimit, "gpu needs pro"), problem.CodePlanLimit},
		{fmt.Errorf("wrapped: %w", problem.Reject(problem.CodeValidation, "x")), problem.CodeValidation},
		{fmt.Errorf("get: %w", problem.ErrNotFound), problem.CodeNotFound},
		{fmt.Errorf("x: %w", job.ErrIllegalTransition), problem.CodeConflict},
		{errors.New("disk on fire"), problem.CodeInternal},
	}
	for _, tc := range tests {
		if got := problem.CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
