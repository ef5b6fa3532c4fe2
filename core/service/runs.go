package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/redact"
	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// RunsPorts are what the control plane's side of the work queue needs.
type RunsPorts struct {
	Jobs     job.Store
	Accounts account.Store
	Assets   asset.Store
	Blobs    blob.Store
	Ledger   billing.Ledger
	Pricing  *billing.Pricing
	Clock    clock.Clock
	Tokens   workqueue.Tokens
	// Registry records the runners that claim, so that every replica knows which compute
	// classes have capacity.
	Registry workqueue.Registry
	// Lease is how long a runner holds a job without a heartbeat.
	Lease time.Duration
	// AssetURLPrefix is "{base_url}/assets/", as jobs' inputs name uploaded assets.
	AssetURLPrefix string
	// RunnerURL is the base URL at which remote runners reach the control plane's
	// /internal/runner endpoints (downloads of assets, uploads of outputs); empty: the
	// assignments carry no such URLs (in-process runners only).
	RunnerURL string
	Log       *slog.Logger
	// Observer hears of dispatched and finished jobs (NoObserver to hear nothing).
	Observer Observer
}

// Runs is the control plane's side of the work queue (workqueue.Queue): it hands out jobs with
// leases, keeps them through heartbeats, takes results, and fails or requeues the jobs of lost
// runners (Sweep). The in-process runner calls it directly; the HTTP and broker transports are
// drivers of the same methods.
type Runs struct {
	p    RunsPorts
	bill biller
	// wake holds, per class, a channel closed when work of the class may be waiting.
	mu   sync.Mutex
	wake map[job.Class]chan struct{}
	// stopping is closed when the control plane stops: waiting claims return at once.
	stopping chan struct{}
	stopOnce sync.Once
	// seen throttles the registry's writes: a runner is recorded at most every few seconds.
	seenMu sync.Mutex
	seen   map[string]time.Time
}

var _ workqueue.Queue = (*Runs)(nil)

// NewRuns returns the Runs use case.
func NewRuns(p RunsPorts) (*Runs, error) {
	err := need("Runs", port{"a job store", p.Jobs}, port{"an account store", p.Accounts}, port{"an asset store", p.Assets},
		port{"a blob store", p.Blobs}, port{"a ledger", p.Ledger}, port{"pricing", p.Pricing}, port{"a clock", p.Clock},
		port{"a runner registry", p.Registry}, port{"an observer", p.Observer})
	if !p.Tokens.Valid(workqueue.Lease{JobID: "probe", Token: p.Tokens.Issue("probe", 0)}) {
		err = errors.Join(err, errors.New("Runs needs lease tokens (workqueue.NewTokens)"))
	}
	if p.Lease <= 0 {
		err = errors.Join(err, errors.New("Runs needs a positive lease"))
	}
	if err != nil {
		return nil, err
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	return &Runs{p: p, bill: biller{p.Pricing}, wake: map[job.Class]chan struct{}{}, stopping: make(chan struct{}),
		seen: map[string]time.Time{}}, nil
}

// Stop ends every claim waiting for work, and the waits of claims to come: the control plane
// is shutting down, and a long poll must not hold it up. The runners claim again elsewhere.
func (s *Runs) Stop() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

// Wake tells the runners waiting in Claim for work of class c that some may be there. It is
// the Waker of this replica's submits; hints from other replicas arrive through the bus.
func (s *Runs) Wake(_ context.Context, c job.Class) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.wake[c]; ok {
		close(ch)
		delete(s.wake, c)
	}
}

func (s *Runs) waitFor(c job.Class) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.wake[c]
	if !ok {
		ch = make(chan struct{})
		s.wake[c] = ch
	}
	return ch
}

// Claim hands up to p.Max waiting jobs of a class to a runner, oldest first, each under a new
// lease, waiting up to p.Wait for one to appear.
func (s *Runs) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	if p.Max <= 0 {
		return nil, nil
	}
	if p.Class != job.ClassCPU && p.Class != job.ClassGPU {
		return nil, problem.Reject(problem.CodeValidation, "class %q is not cpu or gpu", p.Class)
	}
	s.record(ctx, p)
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := time.NewTimer(p.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		woken := s.waitFor(p.Class) // before claiming, so a wake-up during the claim is not lost
		out, err := s.claim(ctx, p)
		if err != nil || len(out) > 0 || deadline == nil {
			return out, err
		}
		select {
		case <-woken:
		case <-deadline:
			return nil, nil
		case <-ctx.Done():
			return nil, nil
		case <-s.stopping:
			return nil, nil
		}
	}
}

// record tells the registry that a runner of the class asked for work, at most every few
// seconds per runner. A failure costs only the capacity answer's freshness.
func (s *Runs) record(ctx context.Context, p workqueue.ClaimParams) {
	name := p.Worker
	if name == "" {
		name = "unnamed-" + string(p.Class)
	}
	now := s.p.Clock.Now()
	s.seenMu.Lock()
	last, ok := s.seen[name]
	fresh := ok && now.Sub(last) < 5*time.Second
	if !fresh {
		s.seen[name] = now
	}
	s.seenMu.Unlock()
	if fresh {
		return
	}
	if err := s.p.Registry.Seen(ctx, workqueue.Worker{Name: name, Class: p.Class, At: now}); err != nil {
		s.p.Log.Warn("recording a runner failed", "worker", name, "err", err)
	}
}

// Capacity tells, per compute class, whether a runner of the class asked for work within
// workqueue.LiveWithin: whether a job of the class can run now.
func (s *Runs) Capacity(ctx context.Context) (map[job.Class]bool, error) {
	live, err := s.p.Registry.Live(ctx, s.p.Clock.Now().Add(-workqueue.LiveWithin))
	if err != nil {
		return nil, err
	}
	return map[job.Class]bool{job.ClassCPU: live[job.ClassCPU] > 0, job.ClassGPU: live[job.ClassGPU] > 0}, nil
}

func (s *Runs) claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	var out []workqueue.Assignment
	plans := map[string]account.Plan{}
	// Jobs failed for want of credits free their place: claim again, a bounded number of times.
	for range 8 {
		jobs, err := s.p.Jobs.Claim(ctx, job.ClaimParams{Class: p.Class, Limit: p.Max - len(out), Lease: s.p.Lease, Now: s.p.Clock.Now(),
			Concurrency: s.p.Pricing.Concurrency()})
		if err != nil {
			return out, err
		}
		claimed := len(jobs)
		jobs = s.funded(ctx, jobs)
		for _, j := range jobs {
			if j.DispatchedAt != nil {
				s.p.Observer.JobDispatched(j, j.DispatchedAt.Sub(j.CreatedAt))
			}
			plan, ok := plans[j.AccountID]
			if !ok {
				a, err := s.p.Accounts.GetAccount(ctx, j.AccountID)
				if err != nil {
					// Unknown plan: the strictest caps. The job runs all the same.
					a.Plan = account.PlanFree
				}
				plan, plans[j.AccountID] = a.Plan, a.Plan
			}
			out = append(out, s.assignment(j, plan))
		}
		if claimed == 0 || len(jobs) == claimed || len(out) >= p.Max {
			break
		}
	}
	return out, nil
}

func (s *Runs) assignment(j *job.Job, plan account.Plan) workqueue.Assignment {
	pl := s.p.Pricing.Plan(plan)
	a := workqueue.Assignment{
		Lease:     workqueue.Lease{JobID: j.ID, Attempt: j.Attempt, Token: s.p.Tokens.Issue(j.ID, j.Attempt)},
		AccountID: j.AccountID, Type: j.Type, Class: j.Class, Inputs: j.Inputs, Params: j.Params,
		Timeout: j.Timeout, LeaseFor: s.p.Lease, AssetURLPrefix: s.p.AssetURLPrefix,
		Limits: workqueue.Limits{Bytes: pl.JobBytes, Files: pl.JobFiles},
	}
	if s.p.RunnerURL != "" {
		a.OutputsURL = s.p.RunnerURL + "/internal/runner/jobs/" + url.PathEscape(j.ID) + "/outputs/"
		a.AssetsURL = s.p.RunnerURL + "/internal/runner/jobs/" + url.PathEscape(j.ID) + "/assets/"
	}
	return a
}

// funded keeps the claimed jobs whose account can still pay the minimum charge, and fails the
// others, uncharged, with INSUFFICIENT_CREDITS: jobs queue without reserving credits, so the
// balance is checked again when a job is about to run. With the concurrency cap this bounds how
// far a balance can go below zero (see README, "Billing"). An account that cannot pay has the
// rest of its queue of that class failed with it, in bulk: each of those jobs would meet the
// same balance at its own dispatch.
//
// A job whose balance cannot be read, or whose failing does not commit, is kept dispatched: an
// unknown balance is no reason to fail work.
func (s *Runs) funded(ctx context.Context, jobs []*job.Job) []*job.Job {
	balances := map[string]int64{}
	unfunded := map[string]job.Class{}
	var fail []string
	kept := jobs[:0]
	for _, j := range jobs {
		bal, ok := balances[j.AccountID]
		if !ok {
			b, err := s.p.Ledger.Balance(ctx, j.AccountID)
			if err != nil {
				kept = append(kept, j)
				continue
			}
			bal, balances[j.AccountID] = b, b
		}
		if bal >= s.p.Pricing.MinimumCharge(j.Class) {
			kept = append(kept, j)
			continue
		}
		fail = append(fail, j.ID)
		unfunded[j.AccountID] = j.Class
	}
	if len(fail) == 0 {
		return kept
	}
	failed, err := s.p.Jobs.UpdateMany(ctx, fail, s.failUnfunded(balances, job.StatusDispatched, ""))
	if err != nil {
		s.p.Log.Warn("failing unfunded jobs did not commit; they stay dispatched until their lease ends", "err", err)
		for _, j := range jobs {
			if slices.Contains(fail, j.ID) {
				kept = append(kept, j)
			}
		}
		return kept
	}
	observeFinished(s.p.Observer, failed)
	for acct, class := range unfunded {
		s.failQueue(ctx, acct, class, balances)
	}
	return kept
}

// failQueue fails, in bulk, the waiting jobs of class of an account that cannot pay.
func (s *Runs) failQueue(ctx context.Context, accountID string, class job.Class, balances map[string]int64) {
	for cursor := ""; ; {
		page, err := s.p.Jobs.List(ctx, job.ListParams{AccountID: accountID, Status: job.StatusWaiting, Cursor: cursor, Limit: job.MaxListLimit})
		if err != nil {
			s.p.Log.Warn("listing an unfunded account's queue failed", "account", accountID, "err", err)
			return
		}
		ids := make([]string, 0, len(page.Jobs))
		for _, j := range page.Jobs {
			if j.Class == class {
				ids = append(ids, j.ID)
			}
		}
		failed, err := s.p.Jobs.UpdateMany(ctx, ids, s.failUnfunded(balances, job.StatusWaiting, class))
		if err != nil {
			s.p.Log.Warn("failing an unfunded account's queue did not commit", "account", accountID, "err", err)
			return
		}
		observeFinished(s.p.Observer, failed)
		if cursor = page.NextCursor; cursor == "" {
			return
		}
	}
}

// failUnfunded fails a job of status from (of class, if set) whose account's balance no longer
// covers its minimum charge.
func (s *Runs) failUnfunded(balances map[string]int64, from job.Status, class job.Class) func(*job.Job) error {
	return func(j *job.Job) error {
		if j.Status != from || (class != "" && j.Class != class) {
			return job.ErrSkip
		}
		bal, need := balances[j.AccountID], s.p.Pricing.MinimumCharge(j.Class)
		msg := fmt.Sprintf("the balance of %s no longer covers the minimum charge of %s; add credits and retry the job",
			billing.Format(bal), billing.Format(need))
		if err := j.Fail(s.p.Clock.Now(), job.NewError(problem.CodeInsufficientCredits, msg, nil), 0); err != nil {
			return err
		}
		return finished(j, s.bill, webhook.EventJobFailed)
	}
}

// errUnchanged ends an Update that has nothing to write.
var errUnchanged = errors.New("unchanged")

// refused is the error of a call on a lease the control plane no longer honours. The cause
// goes to the operator's log; the runner learns only that the lease is gone.
func (s *Runs) refused(l workqueue.Lease, why string) error {
	s.p.Log.Warn("runner lease refused", "job", l.JobID, "attempt", l.Attempt, "reason", why)
	return fmt.Errorf("%w: job %s attempt %d: %s", workqueue.ErrLeaseRefused, l.JobID, l.Attempt, why)
}

// holds checks that j is still held by l: the token is the attempt's own, and the attempt is
// current. A lease is honoured until the job leaves it: until the sweep expires it, another
// attempt takes the job, or the job finishes.
func (s *Runs) holds(j *job.Job, l workqueue.Lease) error {
	switch {
	case !s.p.Tokens.Valid(l):
		return s.refused(l, "forged lease token")
	case j.Attempt != l.Attempt:
		return s.refused(l, fmt.Sprintf("attempt %d is not the current one (%d)", l.Attempt, j.Attempt))
	case j.Status == job.StatusWaiting:
		return s.refused(l, "the job went back to the queue")
	}
	return nil
}

// Heartbeat keeps a lease: the first moves the job to running (job.running), one with
// Executing records that its compute began, each extends the lease and records progress. A
// cancelled job answers Cancelled, so that its runner stops.
func (s *Runs) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	if !s.p.Tokens.Valid(b.Lease) {
		return workqueue.Ack{}, s.refused(b.Lease, "forged lease token")
	}
	var ack workqueue.Ack
	j, err := s.p.Jobs.Update(ctx, b.Lease.JobID, func(j *job.Job) error {
		if err := s.holds(j, b.Lease); err != nil {
			return err
		}
		now := s.p.Clock.Now()
		switch j.Status {
		case job.StatusCancelled:
			ack.Cancelled = true
			return errUnchanged
		case job.StatusDispatched:
			if err := j.Start(now, s.p.Lease); err != nil {
				return err
			}
			if err := emit(j, webhook.EventJobRunning); err != nil {
				return err
			}
		case job.StatusRunning:
		default:
			return s.refused(b.Lease, "the job is "+string(j.Status))
		}
		if b.Executing {
			if err := j.Executing(now); err != nil {
				return err
			}
		}
		return j.Heartbeat(now, s.p.Lease, b.Progress)
	})
	switch {
	case errors.Is(err, errUnchanged):
		return ack, nil
	case errors.Is(err, problem.ErrNotFound):
		return ack, s.refused(b.Lease, "no such job")
	case err != nil:
		return ack, err
	}
	ack.LeaseUntil = *j.LeaseUntil
	return ack, nil
}

// Report ends an attempt with its result, through the transition table: complete, or failed
// with the error workqueue.Failure.Error gives. The job is billed by the billing rule and its
// event emitted, in the same change. Reporting again is harmless; the report of a job cancelled
// meanwhile is acknowledged and changes nothing.
func (s *Runs) Report(ctx context.Context, l workqueue.Lease, r workqueue.Result) error {
	if !s.p.Tokens.Valid(l) {
		return s.refused(l, "forged lease token")
	}
	j, err := s.p.Jobs.Update(ctx, l.JobID, func(j *job.Job) error {
		if err := s.holds(j, l); err != nil {
			return err
		}
		switch {
		case j.Status == job.StatusFailed && j.Error != nil && j.Error.Code == problem.CodeRunnerLost:
			return s.refused(l, "the lease expired and the job failed RUNNER_LOST")
		case j.Status.Terminal():
			return errUnchanged // cancelled meanwhile, or this result was taken already
		}
		now := s.p.Clock.Now()
		if j.Status == job.StatusDispatched {
			// The first heartbeat was lost or overtaken: the run happened all the same.
			if err := j.Start(now, s.p.Lease); err != nil {
				return err
			}
		}
		r.ComputeMs = chargeableMs(j, r.ComputeMs, now)
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
		return s.finish(j, r, now)
	})
	switch {
	case errors.Is(err, errUnchanged):
		return nil
	case errors.Is(err, problem.ErrNotFound):
		return s.refused(l, "no such job")
	case err != nil:
		return err
	}
	if j.Status == job.StatusWaiting {
		s.Wake(ctx, j.Class)
		return nil
	}
	s.p.Observer.JobFinished(j)
	s.bill.appendNow(ctx, s.p.Ledger, j, s.p.Clock.Now())
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
	if r.Failure != nil {
		if err := j.Fail(now, r.Failure.Error(), r.ComputeMs); err != nil {
			return err
		}
		return finished(j, s.bill, webhook.EventJobFailed)
	}
	out, err := job.NewOutput(r.Files, r.Data)
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

// active returns the job a lease holds while it runs.
func (s *Runs) active(ctx context.Context, l workqueue.Lease) (*job.Job, error) {
	if !s.p.Tokens.Valid(l) {
		return nil, s.refused(l, "forged lease token")
	}
	j, err := s.p.Jobs.Get(ctx, l.JobID)
	if errors.Is(err, problem.ErrNotFound) {
		return nil, s.refused(l, "no such job")
	}
	if err != nil {
		return nil, err
	}
	if err := s.holds(j, l); err != nil {
		return nil, err
	}
	if j.Status != job.StatusDispatched && j.Status != job.StatusRunning {
		return nil, s.refused(l, "the job is "+string(j.Status))
	}
	return j, nil
}

// OpenAsset reads an uploaded asset of the job's account, for the job's runner.
func (s *Runs) OpenAsset(ctx context.Context, l workqueue.Lease, assetID string) (io.ReadCloser, error) {
	j, err := s.active(ctx, l)
	if err != nil {
		return nil, err
	}
	a, err := s.p.Assets.GetAsset(ctx, assetID)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && a.AccountID != j.AccountID) {
		return nil, problem.Reject(problem.CodeNotFound, "asset %q not found", assetID)
	}
	if err != nil {
		return nil, err
	}
	return s.p.Blobs.Open(ctx, blob.AssetKey(a.AccountID, a.ID))
}

// PutOutput stores one output file of the job, for the job's runner, capped at the plan's
// bytes per job (and at max, when smaller). The name is a plain file name (the runner collects
// only the files of its work directory).
func (s *Runs) PutOutput(ctx context.Context, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	j, err := s.active(ctx, l)
	if err != nil {
		return 0, err
	}
	if err := asset.CheckName(name); err != nil || name == "" {
		return 0, problem.Reject(problem.CodeValidation, "output name %q is not a plain file name", name)
	}
	plan := account.PlanFree
	if a, err := s.p.Accounts.GetAccount(ctx, j.AccountID); err == nil {
		plan = a.Plan
	}
	limit := s.p.Pricing.Plan(plan).JobBytes
	if max > 0 && max < limit {
		limit = max
	}
	n, err := s.p.Blobs.Put(ctx, blob.OutputKey(j.AccountID, j.ID, name), r, limit)
	if errors.Is(err, blob.ErrTooLarge) {
		return 0, problem.Reject(problem.CodePayloadTooLarge, "output %s is larger than the job's limit of %d bytes", name, limit)
	}
	return n, err
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
		changed, err := s.p.Jobs.UpdateMany(ctx, ids, func(j *job.Job) error {
			if j.Status.Terminal() || j.LeaseUntil == nil || !j.LeaseUntil.Before(now) {
				return job.ErrSkip
			}
			if j.ExecStartedAt == nil && j.Requeue(now) == nil {
				return nil
			}
			lost := job.NewError(problem.CodeRunnerLost, "the runner stopped reporting; the job can be retried", nil)
			if err := j.Fail(now, lost, 0); err != nil {
				return err
			}
			return finished(j, s.bill, webhook.EventJobFailed)
		})
		if err != nil {
			return n, err
		}
		observeFinished(s.p.Observer, changed)
		requeued := map[job.Class]bool{}
		for _, j := range changed {
			if j.Status == job.StatusWaiting {
				requeued[j.Class] = true
			}
		}
		for c := range requeued {
			s.Wake(ctx, c)
		}
		n += len(changed)
		if len(ids) < 100 || len(changed) == 0 {
			return n, nil
		}
	}
}
