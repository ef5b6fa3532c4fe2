package job

import (
	"fmt"

	"github.com/mediajobs/mediajobs/core/problem"
)

// Status is one of the six job statuses of the spec.
type Status string

const (
	StatusWaiting    Status = "waiting"
	StatusDispatched Status = "dispatched"
	StatusRunning    Status = "running"
	StatusComplete   Status = "complete"
	StatusFailed     Status = "failed"
	StatusCancelled  Status = "cancelled"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusWaiting, StatusDispatched, StatusRunning, StatusComplete, StatusFailed, StatusCancelled}

// ErrIllegalTransition is returned for any move the transition table does not allow.
var ErrIllegalTransition = fmt.Errorf("illegal status transition: %w", problem.ErrConflict)

// ErrNotWaiting is returned for a change only a waiting job takes, such as its priority.
var ErrNotWaiting = fmt.Errorf("not waiting: %w", problem.ErrConflict)

// ParseStatus turns an untrusted string into a Status.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown status %q", s)
}

// Terminal reports whether no transition leaves s.
func (s Status) Terminal() bool {
	return s == StatusComplete || s == StatusFailed || s == StatusCancelled
}

// transitions is the spec's table plus our documented extensions:
//   - running → cancelled: a user cancel kills the run; billed for the compute used up to the stop.
//   - dispatched/running → failed: also reached when a runner is lost (RUNNER_LOST, retryable,
//     not charged), besides a runner's error result or the time limit.
//   - waiting → failed: a job whose account can no longer pay the minimum charge fails before
//     it runs (INSUFFICIENT_CREDITS, not charged), with the rest of that account's queue.
//   - dispatched/running → waiting: a job whose runner let its lease lapse before its compute
//     (the FFmpeg step) began, or handed it back when stopping, goes back to the queue to be
//     dispatched again, as a new attempt — once (MaxRequeues); after that it fails RUNNER_LOST.
//
// (new) → waiting is not here: New creates jobs in waiting and nothing else does.
var transitions = map[Status][]Status{
	StatusWaiting:    {StatusDispatched, StatusCancelled, StatusFailed},
	StatusDispatched: {StatusRunning, StatusCancelled, StatusFailed, StatusWaiting},
	StatusRunning:    {StatusComplete, StatusFailed, StatusCancelled, StatusWaiting},
}

// CanTransition reports whether the table allows from → to.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

func checkTransition(from, to Status) error {
	if !CanTransition(from, to) {
		return fmt.Errorf("%w: %s → %s", ErrIllegalTransition, from, to)
	}
	return nil
}
