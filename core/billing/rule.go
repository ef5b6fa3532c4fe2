package billing

import (
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Outcome is what the billing rule needs to know of a job that reached a terminal status.
type Outcome struct {
	Status job.Status
	// Code is the error code of a failed job; empty otherwise.
	Code problem.Code
	// Started tells that the job's FFmpeg step (its compute) began: inputs fetched, the sandboxed
	// process started. A job that never got there used no compute.
	Started bool
	// ComputeMs is the measured execution time, file transfers excluded.
	ComputeMs int64
	Class     job.Class
}

// Bill is the charge of an outcome: Amount credits for Seconds billable seconds, with the rule
// that decided it. A free outcome has Amount 0.
type Bill struct {
	Amount  int64
	Seconds int64
	Reason  string
}

// Free tells an outcome that costs nothing.
func (b Bill) Free() bool { return b.Amount == 0 }

// userCaused are the failures the job itself caused: they are billed for the compute used.
var userCaused = map[problem.Code]bool{
	problem.CodeRunnerError:   true, // FFmpeg exited non-zero, or wrote no output
	problem.CodeValidation:    true, // the command was refused when the runner checked it again
	problem.CodeLimitExceeded: true, // the job passed a per-job cap (bytes or files written, memory)
}

// BillFor is THE billing rule: the charge of a job that reached a terminal status. Every place
// that charges calls it, and nothing else decides.
//
//   - complete: billed for the compute used.
//   - failed with a user-caused code (RUNNER_ERROR, VALIDATION_ERROR found at run time,
//     LIMIT_EXCEEDED): billed for the compute used.
//   - failed with RUNNER_TIMEOUT: free (the spec); so is RUNNER_STALLED, a hang stopped early.
//   - failed with any other code — service-side faults such as INPUT_FETCH_FAILED, RUNNER_LOST,
//     INTERNAL_ERROR, or INSUFFICIENT_CREDITS before dispatch: free.
//   - cancelled before its FFmpeg step started: free; cancelled while it ran: billed for the
//     compute used up to the stop.
//   - whatever the status, a job whose FFmpeg step never started used no compute: free.
//
// Compute used is priced by Price: seconds rounded up, with the plan's minimum.
func (p *Pricing) BillFor(o Outcome) Bill {
	billed := func(reason string) Bill {
		return Bill{Amount: p.Price(o.Class, o.ComputeMs), Seconds: p.BillableSeconds(o.ComputeMs), Reason: reason}
	}
	switch {
	case !o.Status.Terminal():
		return Bill{Reason: "not finished"}
	case !o.Started:
		return Bill{Reason: "no compute ran"}
	case o.Status == job.StatusComplete:
		return billed("complete")
	case o.Status == job.StatusCancelled:
		return billed("cancelled while running")
	case o.Code == problem.CodeRunnerTimeout:
		return Bill{Reason: "RUNNER_TIMEOUT is not charged"}
	case o.Code == problem.CodeRunnerStalled:
		return Bill{Reason: "RUNNER_STALLED is not charged"}
	case userCaused[o.Code]:
		return billed("failed with " + string(o.Code))
	default:
		return Bill{Reason: "service-side failure " + string(o.Code) + " is not charged"}
	}
}
