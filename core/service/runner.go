package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Assignment is a job handed to a runner: everything it needs, and no database.
type Assignment struct {
	JobID     string          `json:"jobId"`
	AccountID string          `json:"accountId"`
	Attempt   int             `json:"attempt"`
	Type      string          `json:"type"`
	Inputs    json.RawMessage `json:"inputs,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	// Timeout is the run's deadline: min(params.timeout, plan cap).
	Timeout time.Duration `json:"timeout"`
	// AssetURLPrefix tells uploaded-asset URLs from remote ones.
	AssetURLPrefix string `json:"assetUrlPrefix"`
}

// Claim hands up to limit waiting jobs of a class to a runner, oldest first, leased for
// Config.Lease.
func (s *Service) Claim(ctx context.Context, class job.Class, limit int) ([]Assignment, error) {
	jobs, err := s.Jobs.Claim(ctx, job.ClaimParams{Class: class, Limit: limit, Lease: s.Config.Lease, Now: s.Clock.Now(),
		Concurrency: s.pricing().Concurrency()})
	if err != nil {
		return nil, err
	}
	jobs = s.funded(ctx, jobs)
	out := make([]Assignment, len(jobs))
	for i, j := range jobs {
		out[i] = Assignment{JobID: j.ID, AccountID: j.AccountID, Attempt: j.Attempt, Type: j.Type, Inputs: j.Inputs, Params: j.Params,
			Timeout: j.Timeout, AssetURLPrefix: s.AssetURLPrefix()}
	}
	return out, nil
}

// Report kinds.
const (
	ReportStarted  = "started"
	ReportProgress = "progress"
	ReportResult   = "result"
)

// RunnerReport is what a runner tells the control plane about one attempt of a job.
type RunnerReport struct {
	JobID    string     `json:"jobId"`
	Attempt  int        `json:"attempt"`
	Kind     string     `json:"kind"`
	Progress float64    `json:"progress,omitempty"`
	Result   *RunResult `json:"result,omitempty"`
}

// RunResult is the end of a run: files written (already stored under OutputKey) or data, and
// the execution time measured without transfers; Error when it failed.
type RunResult struct {
	Files     []job.File      `json:"files,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	ComputeMs int64           `json:"computeMs"`
	Error     *job.Error      `json:"error,omitempty"`
}

// Event is a job event as webhooks carry it.
type Event struct {
	Event  string      `json:"event"`
	JobID  string      `json:"jobId"`
	Output *job.Output `json:"output,omitempty"`
	Cost   *job.Cost   `json:"cost,omitempty"`
	Error  *job.Error  `json:"error,omitempty"`
	Timing job.Timing  `json:"timing"`
}

// Event names.
const (
	EventRunning   = "job.running"
	EventCompleted = "job.completed"
	EventFailed    = "job.failed"
)

// HandleReport applies a runner report. Reports are idempotent: a second result for a finished
// job, or a report of an attempt that is no longer current, changes nothing.
func (s *Service) HandleReport(ctx context.Context, r RunnerReport) error {
	j, err := s.update(ctx, r.JobID, func(j *job.Job) error {
		if err := checkAttempt(j, r.Attempt); err != nil {
			return err
		}
		now := s.Clock.Now()
		switch r.Kind {
		case ReportStarted:
			if j.Status != job.StatusDispatched {
				return errUnchanged
			}
			if err := j.Start(now, s.Config.Lease); err != nil {
				return err
			}
			return s.emit(j, EventRunning)
		case ReportProgress:
			if j.Status.Terminal() {
				return errUnchanged
			}
			return j.Heartbeat(now, s.Config.Lease, r.Progress)
		case ReportResult:
			return s.finish(j, r.Result, now)
		default:
			return fmt.Errorf("unknown runner report kind %q", r.Kind)
		}
	})
	// A report of a job this store does not know (another deployment's on a shared bus, or one
	// deleted since) is nobody's to apply: dropped like a stale one, rather than nacked and
	// redelivered to no end.
	if errors.Is(err, errUnchanged) || errors.Is(err, ErrStaleReport) || errors.Is(err, problem.ErrNotFound) {
		return nil
	}
	if err == nil && r.Kind == ReportResult {
		s.settle(ctx, j)
	}
	return err
}

// update is Jobs.Update that tells the relay when the change emitted messages.
func (s *Service) update(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	emitted := false
	j, err := s.Jobs.Update(ctx, id, func(j *job.Job) error {
		if err := fn(j); err != nil {
			return err
		}
		emitted = len(j.Outbox) > 0
		return nil
	})
	if err == nil && emitted && s.OutboxNotify != nil {
		s.OutboxNotify()
	}
	return j, err
}

// errUnchanged ends an Update that has nothing to write.
var errUnchanged = errors.New("unchanged")

func (s *Service) finish(j *job.Job, res *RunResult, now time.Time) error {
	if res == nil {
		return errors.New("result report without a result")
	}
	switch {
	case j.Status == job.StatusCancelled && j.ComputeMs == 0 && res.ComputeMs > 0:
		// A run killed by a cancel still used compute; record it once, for billing.
		j.ComputeMs = res.ComputeMs
		return s.bill(j)
	case j.Status.Terminal():
		return errUnchanged
	case j.Status == job.StatusDispatched:
		// The started report was lost or overtaken: the run happened all the same.
		if err := j.Start(now, s.Config.Lease); err != nil {
			return err
		}
	}
	if res.Error != nil {
		if err := j.Fail(now, res.Error, res.ComputeMs); err != nil {
			return err
		}
		return s.billAndEmit(j, EventFailed)
	}
	out, err := job.NewOutput(res.Files, res.Data)
	if err != nil {
		if err := j.Fail(now, job.NewError(problem.CodeRunnerError, "the job produced no output: "+err.Error(), nil), res.ComputeMs); err != nil {
			return err
		}
		return s.billAndEmit(j, EventFailed)
	}
	if err := j.Complete(now, out, res.ComputeMs); err != nil {
		return err
	}
	return s.billAndEmit(j, EventCompleted)
}

// emit records a job event in the job's outbox: it is written with the change that caused it,
// and the relay hands it on after the commit. Output URLs are minted when the event is
// delivered, not here.
func (s *Service) emit(j *job.Job, name string) error {
	e := Event{Event: name, JobID: j.ID, Timing: j.Timing()}
	switch name {
	case EventCompleted:
		e.Output, e.Cost = j.Output, j.Cost
	case EventFailed:
		e.Error = j.Error
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	j.Emit(TopicEvents, name+":"+j.ID, b)
	return nil
}

// Sweep fails the jobs whose runner stopped renewing its lease, as RUNNER_LOST: retryable and
// not charged. It returns how many it failed.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	now := s.Clock.Now()
	ids, err := s.Jobs.Expired(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		_, err := s.update(ctx, id, func(j *job.Job) error {
			if j.Status.Terminal() || j.LeaseUntil == nil || !j.LeaseUntil.Before(now) {
				return errUnchanged
			}
			if err := j.Fail(now, job.NewError(problem.CodeRunnerLost, "the runner stopped reporting; the job can be retried", nil), 0); err != nil {
				return err
			}
			return s.billAndEmit(j, EventFailed)
		})
		if errors.Is(err, errUnchanged) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
