package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/redact"
	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// errUnchanged ends an Update that has nothing to write.
var errUnchanged = errors.New("unchanged")

// refused is the error of a call on a lease the control plane no longer honours. The cause
// goes to the operator's log; the runner learns only that the lease is gone.
func (s *Runs) refused(who workqueue.Identity, l workqueue.Lease, why string) error {
	s.p.Log.Warn("runner lease refused", "job", l.JobID, "attempt", l.Attempt, "worker", who.Name, "worker_id", who.ID, "reason", why)
	return fmt.Errorf("%w: job %s attempt %d: %s", workqueue.ErrLeaseRefused, l.JobID, l.Attempt, why)
}

// holds checks that j is still held by l: the token is the attempt's own, and the attempt is
// current. A lease is honoured until the job leaves it: until the sweep expires it, another
// attempt takes the job, or the job finishes. Only the worker that claimed the attempt holds it:
// a token that reached another credential opens nothing.
func (s *Runs) holds(j *job.Job, who workqueue.Identity, l workqueue.Lease) error {
	switch {
	case !s.p.Tokens.Valid(l):
		return s.refused(who, l, "forged lease token")
	case j.Attempt != l.Attempt:
		return s.refused(who, l, fmt.Sprintf("attempt %d is not the current one (%d)", l.Attempt, j.Attempt))
	case j.Status == job.StatusWaiting:
		return s.refused(who, l, "the job went back to the queue")
	case j.Worker != "" && j.Worker != who.ID:
		return s.refused(who, l, "the attempt is held by worker "+j.Worker)
	}
	return nil
}

// start moves a dispatched job to running, with its job.running event.
func (s *Runs) start(j *job.Job, now time.Time) error {
	if err := j.Start(now, s.p.Lease); err != nil {
		return err
	}
	return emit(j, webhook.EventJobRunning)
}

// heartbeat keeps a lease: the first moves the job to running (job.running), one with
// Executing records that its compute began, each extends the lease and records progress. A
// cancelled job answers Cancelled, so that its runner stops.
func (s *Runs) heartbeat(ctx context.Context, who workqueue.Identity, b workqueue.Beat) (workqueue.Ack, error) {
	if !s.p.Tokens.Valid(b.Lease) {
		return workqueue.Ack{}, s.refused(who, b.Lease, "forged lease token")
	}
	var ack workqueue.Ack
	j, err := s.p.Jobs.Update(ctx, b.Lease.JobID, func(j *job.Job) error {
		if err := s.holds(j, who, b.Lease); err != nil {
			return err
		}
		now := s.p.Clock.Now()
		switch j.Status {
		case job.StatusCancelled:
			ack.Cancelled = true
			return errUnchanged
		case job.StatusDispatched:
			if err := s.start(j, now); err != nil {
				return err
			}
		case job.StatusRunning:
		default:
			return s.refused(who, b.Lease, "the job is "+string(j.Status))
		}
		if b.Executing {
			if err := j.Executing(now); err != nil {
				return err
			}
		}
		if err := j.Heartbeat(now, s.p.Lease, b.Progress); err != nil {
			return err
		}
		j.Processed(b.ProcessedMs)
		return nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return ack, nil
	case errors.Is(err, problem.ErrNotFound):
		return ack, s.refused(who, b.Lease, "no such job")
	case err != nil:
		return ack, err
	}
	ack.LeaseUntil = *j.LeaseUntil
	if j.IsPart() && s.orphaned(ctx, j) {
		// Its job ended, or was cut into other parts (a cut that lost a race with a cancel, a
		// control plane that died between making the parts and recording them): the part stops
		// here, unbilled work no one would read.
		s.p.Log.Info("stopping a part its split job no longer has", "job", j.ParentID, "part", j.ID)
		endParts(ctx, s.p.Jobs, s.p.Blobs, s.p.Clock, s.p.Log, []*job.Job{j})
		ack.Cancelled = true
		return ack, nil
	}
	if j.Split != nil {
		plan, stop, err := s.splitAnswer(ctx, who, b, j)
		if err != nil {
			return ack, err
		}
		ack.Split, ack.Cancelled = plan, stop
	}
	return ack, nil
}

// orphaned says whether part's job no longer has it: the job has ended, was cut into other
// parts, or runs whole. A job not yet cut has not recorded its parts yet (the cut records them
// after making them), and keeps them.
func (s *Runs) orphaned(ctx context.Context, part *job.Job) bool {
	parent, err := s.p.Jobs.Get(ctx, part.ParentID)
	switch {
	case errors.Is(err, problem.ErrNotFound):
		return true
	case err != nil:
		return false // asked again at the next heartbeat
	case parent.Status.Terminal() || parent.Split == nil || parent.Split.Reason != "":
		return true
	case !parent.Split.Cut():
		return false
	}
	for _, p := range parent.Split.Parts {
		if p.JobID == part.ID {
			return false
		}
	}
	return true
}

// report ends an attempt with its result, through the transition table: complete, or failed
// with the error workqueue.Failure.Error gives. The job is billed by the billing rule and its
// event emitted, in the same change. Reporting again is harmless; the report of a job cancelled
// meanwhile is acknowledged and changes nothing.
//
// What the worker says is checked, not believed: the compute billed is what the control plane
// observed (chargeableMs), and the files of a success must be exactly those stored under the
// lease, within the plan's caps (checkReport). A refused report leaves the job as it was.
func (s *Runs) report(ctx context.Context, who workqueue.Identity, l workqueue.Lease, r workqueue.Result) error {
	if !s.p.Tokens.Valid(l) {
		return s.refused(who, l, "forged lease token")
	}
	var (
		caps   billing.Plan
		cur    *job.Job
		inline []job.Upload
	)
	if r.Failure == nil {
		var err error
		if cur, caps, err = s.checkStored(ctx, who, l); err != nil {
			return err
		}
		if inline, err = s.storeInline(ctx, who, l, cur, caps, r.Inline); err != nil {
			return err
		}
	}
	// A split job is charged the compute of its parts besides its own.
	var (
		partsMs int64
		parts   []*job.Job
		err     error
		stored  []job.Upload // the attempt's files, as the write taking the result found them
	)
	if cur == nil || cur.Split.Cut() {
		partsMs, parts, err = s.partsCompute(ctx, l.JobID)
		if err != nil && !errors.Is(err, problem.ErrNotFound) {
			return err
		}
	}
	j, err := s.p.Jobs.Update(ctx, l.JobID, func(j *job.Job) error {
		if err := s.holds(j, who, l); err != nil {
			return err
		}
		switch {
		case j.Status == job.StatusFailed && j.Error != nil && j.Error.Code == problem.CodeRunnerLost:
			return s.refused(who, l, "the lease expired and the job failed RUNNER_LOST")
		case j.Status.Terminal():
			return errUnchanged // cancelled meanwhile, or this result was taken already
		}
		now := s.p.Clock.Now()
		if j.Status == job.StatusDispatched {
			// The first heartbeat was lost or overtaken: the run happened all the same, and
			// its subscribers hear of it as of any run; a hand-back before it began is no run.
			var err error
			if r.Failure != nil && r.Failure.Kind == workqueue.KindHandBack {
				err = j.Start(now, s.p.Lease)
			} else {
				err = s.start(j, now)
			}
			if err != nil {
				return err
			}
		}
		if r.Failure == nil {
			ups, err := addInline(j.Uploads, inline) // an upload may have landed meanwhile
			if err != nil {
				return s.refusedFiles(who, l, err)
			}
			j.Uploads = ups
			files, err := s.checkReport(j, who, r.Files, caps)
			if err != nil {
				return err
			}
			r.Files = files
		}
		r.ComputeMs = chargeableMs(j, r.ComputeMs, now) + partsMs
		if r.Failure != nil {
			// What a worker says of a failure reaches the job's error, its job.failed event and
			// every delivery of it: a URL it names loses its query's secrets here.
			f := *r.Failure
			f.Message, _ = redact.Text(f.Message)
			f.Detail, _ = redact.Text(f.Detail)
			r.Failure = &f
		}
		if r.Started && j.ExecStartedAt == nil {
			start := now.Add(-time.Duration(r.ComputeMs) * time.Millisecond)
			j.ExecStartedAt = &start
		}
		stored = j.Uploads
		return s.finish(j, r, now)
	})
	if err != nil {
		s.dropInline(ctx, l, inline) // files carried by a report not taken are not the job's
	}
	switch {
	case errors.Is(err, errUnchanged):
		return nil
	case errors.Is(err, problem.ErrNotFound):
		return s.refused(who, l, "no such job")
	case err != nil:
		return err
	}
	if j.IsPart() {
		// Parts have no events or metrics of their own: this line is how an operator times them.
		s.p.Log.Info("split part reported", "job", j.ParentID, "part", j.ID, "attempt", l.Attempt, "runner", runnerName(who, j),
			"status", string(j.Status), "compute_ms", r.ComputeMs)
		s.parts.Changed(j.ParentID)
	}
	if j.Status == job.StatusWaiting {
		s.dropAttempt(ctx, j, l.Attempt, stored)
		s.Wake(ctx, j.Class)
		return nil
	}
	s.cancelParts(ctx, parts)
	// The charge is in the ledger before the observers hear of the end, among them the
	// waits on the job (Jobs.Wait): a client that sees it complete sees its balance charged.
	s.bill.appendNow(ctx, j, s.p.Clock.Now())
	observeFinished(s.p.Observer, []*job.Job{j})
	return nil
}

// chargeableMs is the compute a report is billed for: the worker's figure is a hint, never
// more than what the control plane observed itself, from the start of the FFmpeg step a
// heartbeat told it of (or, without one, from when it handed the job out) to this report, nor
// more than the job's timeout (the params' timeout within the plan's cap). A worker holds a
// credential, not the ledger: its report cannot raise a charge.
func chargeableMs(j *job.Job, reported int64, now time.Time) int64 {
	from := j.ExecStartedAt
	if from == nil {
		from = j.DispatchedAt
	}
	if from == nil {
		from = j.StartedAt
	}
	ms := max(reported, 0)
	if from == nil {
		return 0
	}
	ms = min(ms, max(now.Sub(*from).Milliseconds(), 0))
	if j.Timeout > 0 {
		ms = min(ms, j.Timeout.Milliseconds())
	}
	return ms
}

func (s *Runs) finish(j *job.Job, r workqueue.Result, now time.Time) error {
	if r.Failure != nil && r.Failure.Kind == workqueue.KindHandBack && j.Requeue(now) == nil {
		return nil
	}
	if r.Failure != nil && j.IsPart() && j.RetryPart(now) == nil {
		return nil // a part that failed is tried once more, by whichever runner claims it first
	}
	if r.Failure != nil {
		if err := j.Fail(now, r.Failure.Error(), r.ComputeMs); err != nil {
			return err
		}
		return finished(j, s.bill, webhook.EventJobFailed)
	}
	out, err := job.NewOutput(r.Files, r.Data, j.Pattern)
	if err != nil {
		f := workqueue.Failure{Kind: workqueue.KindNoOutput, Message: err.Error()}
		if err := j.Fail(now, f.Error(), r.ComputeMs); err != nil {
			return err
		}
		return finished(j, s.bill, webhook.EventJobFailed)
	}
	if err := j.Complete(now, out, r.ComputeMs); err != nil {
		return err
	}
	return finished(j, s.bill, webhook.EventJobCompleted)
}

// Sweep acts on the jobs whose runner stopped renewing its lease, in bulk: a job whose compute
// (the FFmpeg step) never began goes back to waiting, once (a requeue is a new attempt); any
// other fails RUNNER_LOST, retryable and not charged. It returns how many it changed.
func (s *Runs) Sweep(ctx context.Context) (int, error) {
	n := 0
	for {
		now := s.p.Clock.Now()
		ids, err := s.p.Jobs.Expired(ctx, now, 100)
		if err != nil || len(ids) == 0 {
			return n, err
		}
		stored := attemptFiles{}
		changed, err := s.p.Jobs.UpdateMany(ctx, ids, func(j *job.Job) error {
			if j.Status.Terminal() || j.LeaseUntil == nil || !j.LeaseUntil.Before(now) {
				return job.ErrSkip
			}
			stored.note(j)
			return s.lose(j, now, "the runner stopped reporting; the job can be retried")
		})
		if err != nil {
			return n, err
		}
		s.lost(ctx, changed, stored)
		n += len(changed)
		if len(ids) < 100 || len(changed) == 0 {
			return n, nil
		}
	}
}

// lose takes a job from a runner that will not finish it: a job whose compute (the FFmpeg step)
// never began goes back to waiting, once (a requeue is a new attempt); any other fails
// RUNNER_LOST, retryable and not charged.
func (s *Runs) lose(j *job.Job, now time.Time, why string) error {
	// A part is tried once more even when its compute began: its job waits for it.
	if (j.ExecStartedAt == nil || j.IsPart()) && j.Requeue(now) == nil {
		return nil
	}
	if err := j.Fail(now, job.NewError(problem.CodeRunnerLost, why, nil), 0); err != nil {
		return err
	}
	return finished(j, s.bill, webhook.EventJobFailed)
}

// lost tells the observer of the jobs lose failed, cancels the parts of a split job among
// them, deletes the files of the attempts it requeued (stored, as lose found them), and wakes
// the claims of the classes it requeued.
func (s *Runs) lost(ctx context.Context, changed []*job.Job, stored attemptFiles) {
	observeFinished(s.p.Observer, changed)
	requeued := map[job.Class]bool{}
	for _, j := range changed {
		if j.Status == job.StatusWaiting {
			requeued[j.Class] = true
			if f, ok := stored[j.ID]; ok {
				s.dropAttempt(ctx, j, f.attempt, f.uploads)
			}
		}
		if j.Status.Terminal() {
			s.cancelParts(ctx, splitParts(ctx, s.p.Jobs, j)) // a split job lost: its parts are of no use
		}
	}
	for c := range requeued {
		s.Wake(ctx, c)
	}
}

// Abandon ends the leases of a worker credential just revoked, at once rather than when they
// expire: each job it holds is lost as by the sweep (requeued if its compute never began, else
// failed RUNNER_LOST and free). The worker's later calls are refused by its transport, and on
// these jobs by the lease check. It returns how many jobs it changed.
func (s *Runs) Abandon(ctx context.Context, workerID string) (int, error) {
	n := 0
	for {
		ids, err := s.p.Jobs.HeldBy(ctx, workerID, 100)
		if err != nil || len(ids) == 0 {
			return n, err
		}
		now := s.p.Clock.Now()
		stored := attemptFiles{}
		changed, err := s.p.Jobs.UpdateMany(ctx, ids, func(j *job.Job) error {
			if j.Worker != workerID || (j.Status != job.StatusDispatched && j.Status != job.StatusRunning) {
				return job.ErrSkip
			}
			stored.note(j)
			return s.lose(j, now, "the worker's credential was revoked before the job finished; the job can be retried")
		})
		if err != nil {
			return n, err
		}
		s.lost(ctx, changed, stored)
		n += len(changed)
		if len(ids) < 100 || len(changed) == 0 {
			return n, nil
		}
	}
}

// attemptFiles is, by job, the files an attempt had stored when a change ended it.
type attemptFiles map[string]storedFiles

type storedFiles struct {
	attempt int
	uploads []job.Upload
}

// note records j's attempt's files, before the change; a change tried again notes them again.
func (f attemptFiles) note(j *job.Job) {
	f[j.ID] = storedFiles{j.Attempt, slices.Clone(j.Uploads)}
}

// dropAttempt deletes the files that attempt of j stored, once a requeue or a part's retry has
// left them to no one: the next attempt stores under keys of its own (blob.AttemptOutputKey).
func (s *Runs) dropAttempt(ctx context.Context, j *job.Job, attempt int, ups []job.Upload) {
	for _, u := range ups {
		if err := s.p.Blobs.Delete(ctx, blob.AttemptOutputKey(j.AccountID, j.ID, attempt, u.Name)); err != nil {
			s.p.Log.Warn("deleting a file of an attempt requeued failed", "job", j.ID, "attempt", attempt, "file", u.Name, "err", err)
		}
	}
}

// runnerName is the runner that held a job's attempt just reported: the job's Runner, or, after
// a requeue cleared it, the runner the job now avoids.
func runnerName(who workqueue.Identity, j *job.Job) string {
	return cmp.Or(j.Runner, j.Avoid, who.ID)
}
