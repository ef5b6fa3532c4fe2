package service

import (
	"context"
	"errors"
	"log/slog"
	"math"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// CancelPorts are what cancelling a job needs.
type CancelPorts struct {
	Jobs job.Store
	// Blobs hold the files of a split job's parts, deleted when the job is cancelled.
	Blobs   blob.Store
	Pricing *billing.Pricing
	Clock   clock.Clock
	Stopper Stopper
	Viewer  Viewer
	// Observer hears of cancelled jobs (NoObserver to hear nothing).
	Observer Observer
}

// Cancel is POST /jobs/{id}/cancel.
type Cancel struct {
	jobs    job.Store
	blobs   blob.Store
	bill    biller
	clock   clock.Clock
	stopper Stopper
	viewer  Viewer
	obs     Observer
}

// NewCancel returns the Cancel use case.
func NewCancel(p CancelPorts) (*Cancel, error) {
	err := errors.Join(need("Cancel", port{"a job store", p.Jobs}, port{"a blob store", p.Blobs}, port{"pricing", p.Pricing}, port{"a clock", p.Clock},
		port{"a stopper", p.Stopper}, port{"an observer", p.Observer}), p.Viewer.check())
	if err != nil {
		return nil, err
	}
	return &Cancel{jobs: p.Jobs, blobs: p.Blobs, bill: biller{pricing: p.Pricing}, clock: p.Clock, stopper: p.Stopper, viewer: p.Viewer, obs: p.Observer}, nil
}

// Cancel stops the account's job and returns it as GET /jobs/{id} does, cost included. A waiting
// or dispatched job never runs and costs nothing; a running one is killed and, once its compute
// had begun, billed for the compute used up to now, measured by the control plane from when the
// runner said its compute began. job.cancelled goes to subscribers. A job already terminal is a
// CONFLICT.
func (s *Cancel) Cancel(ctx context.Context, a account.Account, id string) (View, error) {
	own, err := ownJob(ctx, s.jobs, a, id)
	if err != nil {
		return View{}, err
	}
	var (
		parts      []*job.Job
		j          *job.Job
		wasRunning bool
	)
	for try := 1; ; try++ {
		parts = splitParts(ctx, s.jobs, own)
		j, wasRunning, err = s.cancel(ctx, id, own, parts, try < 3)
		if !errors.Is(err, errCutMeanwhile) {
			break
		}
		// The job was cut into parts since it was read: its parts are read again, so that they
		// are charged and stopped with it.
		if own, err = s.jobs.Get(ctx, id); err != nil {
			return View{}, err
		}
	}
	if errors.Is(err, job.ErrIllegalTransition) {
		cur, gerr := s.jobs.Get(ctx, id)
		if gerr != nil {
			return View{}, gerr
		}
		return View{}, problem.Reject(problem.CodeConflict, "job %s is %s and can no longer be cancelled", id, cur.Status)
	}
	if err != nil {
		return View{}, err
	}
	s.obs.JobFinished(j)
	if wasRunning || j.DispatchedAt != nil {
		s.stopper.Stop(ctx, j.ID)
	}
	endParts(ctx, s.jobs, s.blobs, s.clock, slog.Default(), parts)
	for _, p := range parts {
		if p.Status == job.StatusDispatched || p.Status == job.StatusRunning {
			s.stopper.Stop(ctx, p.ID)
		}
	}
	return s.viewer.View(j), nil
}

// errCutMeanwhile is a cancel's update finding the job cut into parts since it was read.
var errCutMeanwhile = errors.New("the job was cut into parts meanwhile")

// cancel moves job id to cancelled, charging what it and parts (its parts as read from own)
// used up to now, and says whether it was running; with recheck, errCutMeanwhile when the job
// has been cut since own was read.
func (s *Cancel) cancel(ctx context.Context, id string, own *job.Job, parts []*job.Job, recheck bool) (_ *job.Job, wasRunning bool, _ error) {
	j, err := s.jobs.Update(ctx, id, func(j *job.Job) error {
		if recheck && j.Split.Cut() != own.Split.Cut() {
			return errCutMeanwhile
		}
		now := s.clock.Now()
		wasRunning = j.Status == job.StatusRunning
		if err := j.Cancel(now); err != nil {
			return err
		}
		// What ran is counted from the executing heartbeat, at most the timeout, as a report
		// is (chargeableMs): a runner that kept beating past it adds nothing.
		if j.ExecStartedAt != nil && !j.Split.Cut() {
			// A split job's own time is mostly its wait for its parts, which are its compute.
			j.ComputeMs = chargeableMs(j, math.MaxInt64, now)
		}
		for _, p := range parts {
			// A split job's parts are its compute too: what they used up to now.
			j.ComputeMs += p.ComputeMs
			if p.Status == job.StatusRunning && p.ExecStartedAt != nil {
				j.ComputeMs += chargeableMs(p, math.MaxInt64, now)
			}
		}
		return finished(j, s.bill, webhook.EventJobCancelled)
	})
	return j, wasRunning, err
}
