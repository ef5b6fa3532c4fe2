package httpapi

import (
	"net/http"
	"testing"

	"github.com/mediajobs/mediajobs/core/problem"
)

func TestStatusOfEveryCode(t *testing.T) {
	t.Parallel()
	want := map[problem.Code]int{
		problem.CodeValidation: 400, problem.CodePlanLimit: 403, problem.CodeRateLimited: 429,
		problem.CodeNotFound: 404, problem.CodeUnauthorized: 401, problem.CodeForbidden: 403,
		problem.CodeInsufficientCredits: 402, problem.CodeConflict: 409, problem.CodePayloadTooLarge: 413,
		problem.CodeUnavailable: 503, problem.CodeInternal: 500, problem.CodeIdempotencyKeyReused: 409,
		// Codes of failed jobs never reject a request; if one did, it is our fault.
		problem.CodeRunnerError: 500, problem.CodeRunnerTimeout: 500, problem.CodeRunnerLost: 500, problem.CodeRunnerStalled: 500,
		problem.CodeInputFetchFailed: 500, problem.CodeLimitExceeded: 500, problem.CodeCancelled: 500,
	}
	for _, c := range problem.Codes() {
		w, ok := want[c]
		if !ok {
			t.Errorf("code %s has no expected status in this test: decide its HTTP status", c)
			continue
		}
		if got := Status(c); got != w {
			t.Errorf("Status(%s) = %d, want %d", c, got, w)
		}
	}
	if Status("NOPE") != http.StatusInternalServerError {
		t.Error("an unknown code is not 500")
	}
}
