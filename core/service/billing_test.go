package service_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

func TestSubmitGateOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		plan    account.Plan
		balance int64
		params  string
		want    problem.Code // "" accepted
		message string
		timeout int // the accepted job's run limit in seconds; 0 is not checked
	}{
		{"free cpu", account.PlanFree, 1, `{}`, "", "", 0},
		{"free gpu", account.PlanFree, 600, `{"gpu":true}`, problem.CodePlanLimit, "Pro plan", 0},
		{"plan before balance", account.PlanFree, 0, `{"gpu":true}`, problem.CodePlanLimit, "", 0},
		{"timeout over the cap runs to the cap", account.PlanFree, 600, `{"timeout":600}`, "", "", 300},
		{"timeout within the cap", account.PlanFree, 600, `{"timeout":120}`, "", "", 120},
		{"empty balance", account.PlanFree, 0, `{}`, problem.CodeInsufficientCredits, "minimum charge of 1 credit", 0},
		{"balance before schema", account.PlanFree, 0, `{"nonsense":1}`, problem.CodeInsufficientCredits, "", 0},
		{"schema last", account.PlanFree, 600, `{"nonsense":1}`, problem.CodeValidation, "nonsense", 0},
		{"gpu minimum", account.PlanPro, 9, `{"gpu":true}`, problem.CodeInsufficientCredits, "10 credits", 0},
		{"pro gpu", account.PlanPro, 10, `{"gpu":true,"timeout":900}`, "", "", 900},
		{"negative balance", account.PlanPro, -50, `{}`, problem.CodeInsufficientCredits, "-50 credits", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			a := b.open(t, tt.plan, tt.balance)
			j, err := b.submit.Submit(b.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(tt.params)})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if j.Status != job.StatusWaiting {
					t.Fatalf("status %s", j.Status)
				}
				if tt.timeout != 0 && j.Timeout != time.Duration(tt.timeout)*time.Second {
					t.Fatalf("timeout %s, want %ds", j.Timeout, tt.timeout)
				}
				return
			}
			if got := problem.CodeOf(err); got != tt.want || !strings.Contains(fmt.Sprint(err), tt.message) {
				t.Fatalf("error %v (%s); want %s containing %q", err, got, tt.want, tt.message)
			}
			if tt.want == problem.CodeInsufficientCredits && !errors.Is(err, billing.ErrInsufficientCredits) {
				t.Fatalf("%v does not wrap billing.ErrInsufficientCredits", err)
			}
			if page, _ := b.store.List(b.ctx, job.ListParams{AccountID: a.ID}); len(page.Jobs) != 0 {
				t.Fatal("a rejected submission saved a job")
			}
		})
	}
}

func TestBillingOutcomes(t *testing.T) {
	t.Parallel()
	file := []job.File{{Path: "out.mp4", Type: "video", Size: 1}}
	tests := []struct {
		name   string
		params string
		res    workqueue.Result
		want   int64 // cost.amount, and the charge
	}{
		{"complete rounds up", `{}`, workqueue.Result{Files: file, ComputeMs: 1500}, 2},
		{"exact seconds", `{}`, workqueue.Result{Files: file, ComputeMs: 3000}, 3},
		{"minimum one second", `{}`, workqueue.Result{Files: file, ComputeMs: 0}, 1},
		{"gpu rate", `{"gpu":true}`, workqueue.Result{Files: file, ComputeMs: 2001}, 30},
		{"failed is billed", `{}`, workqueue.Result{ComputeMs: 4200, Failure: exitFailure("exit 1")}, 5},
		{"a stall is free", `{}`, workqueue.Result{ComputeMs: 61000, Failure: &workqueue.Failure{Kind: workqueue.KindStalled}}, 0},
		{"timeout is free", `{}`, workqueue.Result{ComputeMs: 300000, Failure: &workqueue.Failure{Kind: workqueue.KindTimeout}}, 0},
		{"an input that failed to download is free", `{}`, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindFetch}}, 0},
		{"a runner fault (a full disk) is free", `{}`, workqueue.Result{ComputeMs: 2000, Failure: &workqueue.Failure{Kind: workqueue.KindInternal}}, 0},
		{"a failed step of several is billed as one job", `{}`, workqueue.Result{ComputeMs: 2100, Failure: &workqueue.Failure{Kind: workqueue.KindExit, Step: 2, Steps: 3}}, 3},
		{"a timeout in a later step is free", `{}`, workqueue.Result{ComputeMs: 9000, Failure: &workqueue.Failure{Kind: workqueue.KindTimeout, Step: 3, Steps: 3}}, 0},
		{"a per-job cap is billed", `{}`, workqueue.Result{ComputeMs: 1200, Failure: &workqueue.Failure{Kind: workqueue.KindLimit, Limit: "job_files", Max: 10}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			a := b.open(t, account.PlanPro, 1000)
			j, err := b.submit.Submit(b.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(tt.params)})
			if err != nil {
				t.Fatal(err)
			}
			class := job.ClassCPU
			if strings.Contains(tt.params, "gpu") {
				class = job.ClassGPU
			}
			if tt.res.Failure != nil && tt.res.Failure.Kind == workqueue.KindFetch {
				// A download fails before the compute begins.
				a := b.claim(t, class)
				b.beat(t, a.Lease, 0, false)
				if err := b.runs.Report(b.ctx, a.Lease, tt.res); err != nil {
					t.Fatal(err)
				}
			} else {
				b.run(t, class, tt.res, true)
			}
			// The relay hands the charge over again: still one entry.
			if _, err := b.relay.Drain(b.ctx); err != nil {
				t.Fatal(err)
			}
			got := b.job(t, j.ID)
			if d := cmp.Diff(&job.Cost{Amount: tt.want, Currency: "credits", Formatted: billing.Format(tt.want)}, got.Cost); d != "" {
				t.Fatalf("cost (-want +got):\n%s", d)
			}
			if v, _ := b.jobs.Get(b.ctx, a, got.ID); v.Cost == nil || v.Cost.Amount != tt.want {
				t.Fatalf("view cost %+v", v.Cost)
			}
			if bal, _ := b.ledger.Balance(b.ctx, a.ID); bal != 1000-tt.want {
				t.Fatalf("balance %d; want %d", bal, 1000-tt.want)
			}
			page, _ := b.ledger.Entries(b.ctx, billing.EntriesParams{AccountID: a.ID, Limit: 100})
			var charges []billing.Entry
			for _, e := range page.Entries {
				if e.Kind == billing.KindCharge {
					charges = append(charges, e)
				}
			}
			if tt.want == 0 && len(charges) != 0 || tt.want > 0 && (len(charges) != 1 || charges[0].Amount != -tt.want || charges[0].JobID != j.ID) {
				t.Fatalf("charges %+v; want one of %d", charges, tt.want)
			}
			if got.Status == job.StatusComplete {
				var ev service.Event
				for _, e := range b.drain(t) {
					if strings.Contains(e, webhook.EventJobCompleted) {
						_ = json.Unmarshal([]byte(e), &ev)
					}
				}
				if ev.Cost == nil || ev.Cost.Amount != tt.want {
					t.Fatalf("job.completed carries cost %+v", ev.Cost)
				}
			}
		})
	}
}

// Cancels race a job's start: whatever the moment, a job whose compute never began costs
// nothing, and a running one pays for what ran. 200 submit-then-cancel races, none charged.
func TestCancelBilling(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.open(t, account.PlanPro, 1000)
	for i := range 200 {
		j := b.submitJob(t, a, `{}`)
		// Half the cancels land after the claim, some after the first heartbeat.
		if i%2 == 1 {
			as := b.claim(t, job.ClassCPU)
			if i%4 == 3 {
				b.beat(t, as.Lease, 0, false)
			}
		}
		v, err := b.cancel.Cancel(b.ctx, a, j.ID)
		if err != nil || v.Cost == nil || v.Cost.Amount != 0 {
			t.Fatalf("cancel %d: %+v %v", i, v.Cost, err)
		}
	}
	b.drain(t)
	if bal, _ := b.ledger.Balance(b.ctx, a.ID); bal != 1000 {
		t.Fatalf("balance %d after 200 cancelled jobs; want 1000", bal)
	}

	running := b.submitJob(t, a, `{}`)
	as := b.claim(t, job.ClassCPU)
	b.beat(t, as.Lease, 0, true)
	b.clock.Advance(2500 * time.Millisecond)
	if _, err := b.cancel.Cancel(b.ctx, a, running.ID); err != nil {
		t.Fatal(err)
	}
	killed := workqueue.Result{ComputeMs: 2600, Started: true, Failure: &workqueue.Failure{Kind: workqueue.KindCancelled}}
	for range 2 {
		if err := b.runs.Report(b.ctx, as.Lease, killed); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(t)
	if r := b.job(t, running.ID); r.Cost == nil || r.Cost.Amount != 3 {
		t.Fatalf("cancelled running job costs %+v; want 3", r.Cost)
	}
	if bal, _ := b.ledger.Balance(b.ctx, a.ID); bal != 997 {
		t.Fatalf("balance %d; want 997", bal)
	}
}

// A cancel pays for what ran up to the job's timeout, as a report does: a runner that keeps
// beating past the timeout (a kill that hung, a worker that lies) adds nothing.
func TestCancelPastTheTimeoutPaysTheTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.open(t, account.PlanPro, 1000)
	j := b.submitJob(t, a, `{"timeout":10}`)
	as := b.claim(t, job.ClassCPU)
	b.beat(t, as.Lease, 0, true)
	for range 10 {
		b.clock.Advance(30 * time.Second)
		if _, err := b.runs.Heartbeat(b.ctx, workqueue.Beat{Lease: as.Lease, Progress: 0.5}); err != nil {
			break
		}
	}
	if _, err := b.cancel.Cancel(b.ctx, a, j.ID); err != nil {
		t.Fatal(err)
	}
	b.drain(t)
	if c := b.job(t, j.ID); c.ComputeMs != 10_000 || c.Cost == nil || c.Cost.Amount != 10 {
		t.Fatalf("cancelled 5 minutes into a 10 s job: compute %d ms, cost %+v; want 10000 ms, 10 credits", c.ComputeMs, c.Cost)
	}
	if bal, _ := b.ledger.Balance(b.ctx, a.ID); bal != 990 {
		t.Fatalf("balance %d; want 990", bal)
	}
}

func TestPlanGrantsAndPurchases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := billing.Default()
	free := b.open(t, account.PlanFree, p.Plans["free"].StarterGrant)
	pk, _ := p.Pack("small")
	tests := []struct {
		name string
		do   func() error
		acc  string
		want int64
	}{
		{"free purchase has no bonus", func() error {
			_, err := b.credits.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindPurchase, Pack: "small", Reference: "o1"})
			return err
		}, free.ID, p.Plans["free"].StarterGrant + pk.Credits},
		{"the same order again records nothing", func() error {
			_, err := b.credits.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindPurchase, Pack: "small", Reference: "o1"})
			return err
		}, free.ID, p.Plans["free"].StarterGrant + pk.Credits},
		{"upgrade includes the month once", func() error {
			if err := b.credits.SetPlan(b.ctx, free.ID, account.PlanPro); err != nil {
				return err
			}
			if n, err := b.credits.GrantMonthly(b.ctx); err != nil || n != 0 {
				return fmt.Errorf("GrantMonthly granted %d again: %v", n, err)
			}
			return b.credits.SetPlan(b.ctx, free.ID, account.PlanPro)
		}, free.ID, p.Plans["free"].StarterGrant + pk.Credits + p.Plans["pro"].MonthlyCredits},
		{"pro purchase gets its bonus", func() error {
			got, err := b.credits.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindPurchase, Amount: 1000, Reference: "o2"})
			if err == nil && (len(got) != 2 || got[1].Kind != billing.KindBonus || got[1].Amount != 200) {
				return fmt.Errorf("entries %+v; want the purchase and a bonus of 200", got)
			}
			return err
		}, free.ID, p.Plans["free"].StarterGrant + pk.Credits + p.Plans["pro"].MonthlyCredits + 1200},
	}
	for _, tt := range tests {
		if err := tt.do(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if bal, _ := b.ledger.Balance(b.ctx, tt.acc); bal != tt.want {
			t.Fatalf("%s: balance %d; want %d", tt.name, bal, tt.want)
		}
	}
	if _, err := b.credits.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindGrant, Amount: -5}); problem.CodeOf(err) != problem.CodeValidation {
		t.Fatalf("negative grant: %v", err)
	}
}

// TestConcurrentSubmissionsAndResults is the ledger's property: 1,000 submissions racing on one
// Pro account with runners reporting results (some twice, some failed, some timed out) and the
// relay draining beside them. Afterwards the ledger balances, no job is charged twice, every
// billed job's charge equals its cost, and the balance is not below zero by more than the
// charges in flight: the jobs an account may run at once (its concurrency) plus the results
// committed but not yet in the ledger (at most one per runner). See docs/api.md, "Billing, plans and limits".
func TestConcurrentSubmissionsAndResults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const (
		submissions = 1000
		start       = 800
		runners     = 25
	)
	a := b.open(t, account.PlanPro, start)
	concurrency := billing.Default().Plans["pro"].Concurrency

	var (
		submitted sync.WaitGroup
		accepted  atomic.Int64
		refused   atomic.Int64
		maxCharge atomic.Int64
	)
	for i := range submissions {
		submitted.Go(func() {
			_, err := b.submit.Submit(b.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(fmt.Sprintf(`{"timeout":%d}`, 60+i%60))})
			switch {
			case err == nil:
				accepted.Add(1)
			case problem.CodeOf(err) == problem.CodeInsufficientCredits:
				refused.Add(1)
			default:
				t.Errorf("submission %d: %v", i, err)
			}
		})
	}
	var subsDone atomic.Bool
	go func() { submitted.Wait(); subsDone.Store(true) }()

	var work sync.WaitGroup
	for r := range runners {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			for {
				// A short long-poll: a submit wakes it, so no runner spins on an empty queue.
				as, err := b.runs.Claim(b.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: 20 * time.Millisecond})
				if err != nil {
					t.Error(err)
					return
				}
				if len(as) == 0 {
					// Empty: nothing waits, the cap holds the rest back, or the jobs claimed
					// failed for want of credits. Stop only when nothing waits.
					if w, _ := b.store.List(b.ctx, job.ListParams{AccountID: a.ID, Status: job.StatusWaiting, Limit: 1}); subsDone.Load() && len(w.Jobs) == 0 {
						return
					}
					continue
				}
				x := as[0]
				ms := rng.Int64N(5000)
				res := workqueue.Result{Files: []job.File{{Path: "o.mp4", Type: "video", Size: 1}}, ComputeMs: ms, Started: true}
				switch rng.IntN(10) {
				case 0:
					res = workqueue.Result{ComputeMs: ms, Started: true, Failure: exitFailure("exit 1")}
				case 1:
					res = workqueue.Result{ComputeMs: ms, Started: true, Failure: &workqueue.Failure{Kind: workqueue.KindTimeout}}
				}
				if c := billing.Default().Price(job.ClassCPU, ms); c > maxCharge.Load() {
					maxCharge.Store(c)
				}
				if _, err := b.runs.Heartbeat(b.ctx, workqueue.Beat{Lease: x.Lease, Executing: true}); err != nil {
					t.Error(err)
				}
				if res.Failure == nil {
					b.storeFiles(t, x.Lease, res.Files)
				}
				var dup sync.WaitGroup
				for range 1 + rng.IntN(2) {
					dup.Go(func() {
						if err := b.runs.Report(b.ctx, x.Lease, res); err != nil {
							t.Error(err)
						}
					})
				}
				dup.Wait()
			}
		})
	}
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		for !subsDone.Load() {
			_, _ = b.relay.Drain(b.ctx)
			time.Sleep(100 * time.Microsecond) // a relay's pace while submissions run: contention is the subject
		}
	}()
	work.Wait()
	<-relayDone
	for range 3 {
		if _, err := b.relay.Drain(b.ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Every job is terminal; collect costs.
	var (
		jobs     []*job.Job
		billed   = map[string]int64{}
		statuses = map[job.Status]int{}
	)
	for cursor := ""; ; {
		page, err := b.store.List(b.ctx, job.ListParams{AccountID: a.ID, Cursor: cursor, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, page.Jobs...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if int64(len(jobs)) != accepted.Load() || accepted.Load()+refused.Load() != submissions {
		t.Fatalf("%d jobs saved, %d accepted, %d refused of %d", len(jobs), accepted.Load(), refused.Load(), submissions)
	}
	for _, j := range jobs {
		statuses[j.Status]++
		if !j.Status.Terminal() {
			t.Fatalf("job %s left %s", j.ID, j.Status)
		}
		if j.Cost != nil && j.Cost.Amount > 0 {
			billed[j.ID] = j.Cost.Amount
		}
	}
	// The ledger: the balance is the sum; one charge per billed job, equal to its cost.
	var (
		sum     int64
		charges = map[string]int64{}
	)
	for cursor := ""; ; {
		page, err := b.ledger.Entries(b.ctx, billing.EntriesParams{AccountID: a.ID, Cursor: cursor, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			sum += e.Amount
			if e.Kind == billing.KindCharge {
				if _, twice := charges[e.JobID]; twice {
					t.Fatalf("job %s charged twice", e.JobID)
				}
				charges[e.JobID] = -e.Amount
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	bal, _ := b.ledger.Balance(b.ctx, a.ID)
	if sum != bal {
		t.Fatalf("ledger out of balance: entries sum to %d, balance %d", sum, bal)
	}
	if d := cmp.Diff(billed, charges); d != "" {
		t.Fatalf("charges differ from job costs (-costs +ledger):\n%s", d)
	}
	bound := -int64(concurrency+runners) * maxCharge.Load()
	if bal < bound {
		t.Fatalf("balance %d is below the bound %d (concurrency %d + runners %d, largest charge %d)", bal, bound, concurrency, runners, maxCharge.Load())
	}
	t.Logf("accepted %d, refused %d, statuses %v, %d charged, final balance %d (bound %d)",
		accepted.Load(), refused.Load(), statuses, len(charges), bal, bound)
}
