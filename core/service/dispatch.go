package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// claimAs hands up to p.Max waiting jobs of a class to the worker who, oldest first, each under
// a new lease, waiting up to p.Wait for one to appear. A credential issued for one class claims
// only that class.
func (s *Runs) claimAs(ctx context.Context, who workqueue.Identity, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	if p.Max <= 0 {
		return nil, nil
	}
	if p.Class != job.ClassCPU && p.Class != job.ClassGPU {
		return nil, problem.Reject(problem.CodeValidation, "class %q is not cpu or gpu", p.Class)
	}
	if who.Class != "" && p.Class != who.Class {
		s.p.Log.Warn("runner claim refused: class not allowed for its credential", "worker", who.Name, "worker_id", who.ID, "class", p.Class)
		return nil, problem.Reject(problem.CodeForbidden, "worker credential %s may claim %s work only, not %s", who.Name, who.Class, p.Class)
	}
	s.record(ctx, who, p)
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := time.NewTimer(p.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		woken := s.waitFor(p.Class) // before claiming, so a wake-up during the claim is not lost
		// A long poll outlives its authentication: a credential revoked meanwhile takes
		// nothing more (one read by primary key a claim, for stored credentials only).
		if err := s.stillIssued(ctx, who); err != nil {
			return nil, err
		}
		out, err := s.claim(ctx, who, p)
		if err != nil || len(out) > 0 || deadline == nil {
			return out, err
		}
		recheck := time.NewTimer(cmp.Or(s.p.Recheck, job.RetryElsewhereFor))
		select {
		case <-woken:
		case <-recheck.C: // a job that avoided this runner may be its now
		case <-deadline:
			return nil, nil
		case <-ctx.Done():
			return nil, nil
		case <-s.stopping:
			return nil, nil
		}
		recheck.Stop()
	}
}

// maxSeen bounds the runners whose last sighting a replica keeps for throttling.
const maxSeen = 10_000

// stillIssued tells that who's credential was not revoked since its call was authenticated.
func (s *Runs) stillIssued(ctx context.Context, who workqueue.Identity) error {
	if who == workqueue.Local || who == workqueue.EnvToken {
		return nil
	}
	c, err := s.p.Credentials.CredentialByID(ctx, who.ID)
	switch {
	case errors.Is(err, problem.ErrNotFound) || (err == nil && c.RevokedAt != nil):
		s.p.Log.Warn("runner claim ended: its credential was revoked while it waited", "worker", who.Name, "worker_id", who.ID)
		return problem.Reject(problem.CodeUnauthorized, "the worker credential %s was revoked", who.Name)
	case err != nil:
		return err
	}
	return nil
}

// record tells the registry that a runner of the class asked for work, and the worker's
// credential its version, at most every few seconds per runner. A failure costs only the
// freshness of the capacity answer and of `workers list`.
func (s *Runs) record(ctx context.Context, who workqueue.Identity, p workqueue.ClaimParams) {
	name := p.Worker
	if name == "" {
		name = "unnamed-" + string(p.Class)
	}
	now := s.p.Clock.Now()
	s.seenMu.Lock()
	key := who.ID + "/" + name
	last, ok := s.seen[key]
	fresh := ok && now.Sub(last) < 5*time.Second
	if !fresh {
		if len(s.seen) >= maxSeen {
			// Names are the workers' own: forget the quiet ones rather than grow without end.
			for k, at := range s.seen {
				if now.Sub(at) >= workqueue.LiveWithin {
					delete(s.seen, k)
				}
			}
		}
		if len(s.seen) < maxSeen {
			s.seen[key] = now
		}
	}
	s.seenMu.Unlock()
	if fresh {
		return
	}
	if err := s.p.Registry.Seen(ctx, workqueue.Worker{Name: name, Class: p.Class, At: now}); err != nil {
		s.p.Log.Warn("recording a runner failed", "worker", name, "err", err)
	}
	if who == workqueue.Local || who == workqueue.EnvToken {
		return
	}
	if err := s.p.Credentials.TouchCredential(ctx, who.ID, workqueue.CleanVersion(p.Version), now); err != nil {
		s.p.Log.Warn("recording a worker credential's claim failed", "worker", who.Name, "err", err)
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

func (s *Runs) claim(ctx context.Context, who workqueue.Identity, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	var out []workqueue.Assignment
	plans := map[string]account.Plan{}
	// Jobs failed for want of credits free their place: claim again, a bounded number of times.
	for range 8 {
		jobs, err := s.p.Jobs.Claim(ctx, job.ClaimParams{Class: p.Class, Limit: p.Max - len(out), Lease: s.p.Lease, Now: s.p.Clock.Now(),
			Concurrency: s.p.Pricing.Concurrency(), Worker: who.ID, Runner: runnerOf(who, p)})
		if err != nil {
			return out, err
		}
		claimed := len(jobs)
		jobs = s.funded(ctx, jobs)
		for _, j := range jobs {
			if j.DispatchedAt != nil && !j.IsPart() { // a part waits from its job's submit: not a wait
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
			a := s.assignment(j, plan)
			if splitCandidate(j) {
				a.SplitParts = s.splitParts(ctx, j, s.freeSlots(ctx, who, p, j))
			} else if j.Split.Cut() {
				a.SplitParts = len(j.Split.Parts) // a new attempt of a job cut before: the same plan
			}
			if a.SplitParts > 1 {
				a.SplitWait = s.splitWait()
			}
			if j.IsPart() {
				a.Length = s.partLength(ctx, j)
			}
			out = append(out, a)
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
		Limits:      workqueue.Limits{Bytes: pl.JobBytes, Files: pl.JobFiles, StallSeconds: cmp.Or(pl.StallSeconds, billing.DefaultStallSeconds)},
		InlineBytes: inlineBytes(pl),
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
// far a balance can go below zero (see docs/api.md, "Billing, plans and limits"). An account that cannot pay has the
// rest of its queue of that class failed with it, in bulk: each of those jobs would meet the
// same balance at its own dispatch.
//
// A job whose balance cannot be read, or whose failing does not commit, is kept dispatched: an
// unknown balance is no reason to fail work. A split job's part is its job's compute, which
// was funded when the job was dispatched: it runs, as the rest of a running job does.
func (s *Runs) funded(ctx context.Context, jobs []*job.Job) []*job.Job {
	balances := map[string]int64{}
	unfunded := map[string]job.Class{}
	var fail []string
	kept := jobs[:0]
	for _, j := range jobs {
		if j.IsPart() {
			kept = append(kept, j)
			continue
		}
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
		if j.Status != from || (class != "" && j.Class != class) || j.IsPart() {
			return job.ErrSkip // a part runs for its job, funded when it was dispatched
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

// runnerOf names the claiming runner for job.Job.Runner: its credential and the name it gives
// itself, which runners sharing a credential (MEDIAJOBS_WORKER_TOKEN) tell apart by.
func runnerOf(who workqueue.Identity, p workqueue.ClaimParams) string {
	return who.ID + "/" + p.Worker
}
