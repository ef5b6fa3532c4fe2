package service

import (
	"context"
	"errors"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

// SubmitPorts are what submitting a job needs.
type SubmitPorts struct {
	Gate  GatePorts
	Jobs  job.Store
	Clock clock.Clock
	// Waker wakes the runners of the job's class once the job is saved.
	Waker Waker
	// Destinations checks a job's destination and saves its delivery with it. An embedder
	// without destinations leaves it nil: a job that names one is then refused, never run
	// without its delivery.
	Destinations *Destinations
}

// Submit is POST /jobs and POST /jobs/{id}/retry: the submit gate, then the job saved in
// waiting. A rejection saves nothing.
type Submit struct {
	gate  gate
	jobs  job.Store
	clock clock.Clock
	waker Waker
	dests *Destinations
}

// NewSubmit returns the Submit use case.
func NewSubmit(p SubmitPorts) (*Submit, error) {
	g, err := newGate(p.Gate)
	err = errors.Join(err, need("Submit", port{"a job store", p.Jobs}, port{"a clock", p.Clock}, port{"a waker", p.Waker}))
	if err != nil {
		return nil, err
	}
	return &Submit{gate: g, jobs: p.Jobs, clock: p.Clock, waker: p.Waker, dests: p.Destinations}, nil
}

// Submit passes a request through the gate and saves it as a waiting job. A request that names a
// preset is rewritten to the preset's concrete command first; a retry runs the stored one.
func (s *Submit) Submit(ctx context.Context, a account.Account, req jobtype.Request) (*job.Job, error) {
	req, err := s.gate.Presets.Resolve(ctx, a, req)
	if err != nil {
		observeRejected(s.gate.Observer, err)
		return nil, err
	}
	return s.submit(ctx, a, req, "")
}

// Retry submits a failed job's request again as a new job whose retryOf names it. The new job
// passes the whole submit gate again.
func (s *Submit) Retry(ctx context.Context, a account.Account, id string) (*job.Job, error) {
	old, err := ownJob(ctx, s.jobs, a, id)
	if err != nil {
		return nil, err
	}
	if old.Status != job.StatusFailed {
		return nil, problem.Reject(problem.CodeConflict, "job %s is %s; only failed jobs can be retried", id, old.Status)
	}
	// The retry delivers where the failed job would have: its destination, checked again.
	dest, err := s.dests.carried(ctx, old.ID)
	if err != nil {
		return nil, err
	}
	return s.submit(ctx, a, jobtype.Request{Type: old.Type, Inputs: old.Inputs, Params: old.Params, Priority: string(old.Priority),
		Destination: dest}, old.ID)
}

func (s *Submit) submit(ctx context.Context, a account.Account, req jobtype.Request, retryOf string) (*job.Job, error) {
	prio, err := CheckPriority(a, "priority", req.Priority)
	if err != nil {
		observeRejected(s.gate.Observer, err)
		return nil, err
	}
	spec, invalid := s.gate.prepare(req)
	if err := s.gate.check(ctx, a, &spec, invalid); err != nil {
		observeRejected(s.gate.Observer, err)
		return nil, err
	}
	delivery, err := s.dests.plan(ctx, a, req)
	if err != nil {
		observeRejected(s.gate.Observer, err)
		return nil, err
	}
	j, err := job.New(job.NewParams{
		ID: job.NewID("job"), AccountID: a.ID, Type: req.Type, Inputs: req.Inputs, Params: req.Params,
		Class: spec.Class, Timeout: spec.Timeout, Pattern: spec.Pattern, RetryOf: retryOf, Priority: prio, Split: spec.Split, Now: s.clock.Now(),
	})
	if err != nil {
		return nil, err
	}
	if delivery != nil {
		if err := s.dests.attach(ctx, j, delivery); err != nil {
			return nil, err
		}
	}
	if err := s.jobs.Create(ctx, j); err != nil {
		return nil, err
	}
	s.gate.Observer.JobSubmitted(j)
	s.waker.Wake(ctx, j.Class)
	return j, nil
}

// ownJob returns the account's job; another account's job is NOT_FOUND, as a missing one is.
func ownJob(ctx context.Context, jobs job.Store, a account.Account, id string) (*job.Job, error) {
	j, err := jobs.Get(ctx, id)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && (j.AccountID != a.ID || j.IsPart())) {
		// A split job's parts are not jobs of the account's: only their job is.
		return nil, problem.Reject(problem.CodeNotFound, "job %q not found", id)
	}
	return j, err
}
