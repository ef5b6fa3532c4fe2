package service

import (
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Observer hears what the use cases did, after it committed, so that an adapter can count it
// (adapters/metrics turns it into Prometheus metrics). The core stays free of any metrics
// library, and a count never runs ahead of a change that rolled back. Calls are made on the
// request's goroutine: they must be cheap and must not block.
type Observer interface {
	// JobSubmitted: the job was saved in waiting (POST /jobs, a batch's jobs, a retry).
	JobSubmitted(j *job.Job)
	// SubmitRejected: the submit gate refused a request; err is the rejection (a
	// *problem.Problem whose Cause is a *validator.Error when the validator refused).
	SubmitRejected(err error)
	// JobDispatched: a runner claimed the job, waited after it was saved (or requeued).
	JobDispatched(j *job.Job, waited time.Duration)
	// JobFinished: the job reached a terminal status; its Cost and ComputeMs are set.
	JobFinished(j *job.Job)
}

// NoObserver observes nothing: for tools and tests that keep no metrics.
type NoObserver struct{}

func (NoObserver) JobSubmitted(*job.Job)                 {}
func (NoObserver) SubmitRejected(error)                  {}
func (NoObserver) JobDispatched(*job.Job, time.Duration) {}
func (NoObserver) JobFinished(*job.Job)                  {}

// observeRejected tells the observer of a request the gate refused; internal failures (a
// store down) are not refusals.
func observeRejected(o Observer, err error) {
	if p, ok := problem.As(err); ok && p.Code != problem.CodeInternal {
		o.SubmitRejected(err)
	}
}

// observeFinished tells the observer of the jobs of a bulk change that it made terminal; a split
// job's parts are its own business, not jobs of the account's, and are not told.
func observeFinished(o Observer, jobs []*job.Job) {
	for _, j := range jobs {
		if j.Status.Terminal() && !j.IsPart() {
			o.JobFinished(j)
		}
	}
}
