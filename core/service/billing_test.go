package service_test

import (
	"context"
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
	"github.com/mediajobs/mediajobs/core/account/accounttest"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/billing/billingtest"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/job/jobtest"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

type billingBundle struct {
	svc    *service.Service
	jobs   *jobtest.Memory
	ledger *billingtest.Memory
	relay  *service.Relay
	events *[]string
	ctx    context.Context
}

func billingSetup(t *testing.T) billingBundle {
	t.Helper()
	reg, err := jobtype.NewRegistry(testType{})
	if err != nil {
		t.Fatal(err)
	}
	b := billingBundle{jobs: jobtest.NewMemory(), ledger: billingtest.NewMemory(), ctx: context.Background()}
	clk := clocktest.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	b.svc = &service.Service{Jobs: b.jobs, Accounts: accounttest.NewMemory(), Assets: &assets{m: nil}, Types: reg, Clock: clk,
		Signer: signer{}, Pricing: billing.Default(), Ledger: b.ledger,
		Config: service.Config{BaseURL: "https://api.test", URLTTL: time.Hour, Lease: time.Minute, GPURunners: true}}
	var (
		mu     sync.Mutex
		events []string
	)
	b.events = &events
	b.relay = &service.Relay{Outbox: b.jobs, Clock: clk, Handlers: map[string]service.Handler{
		billing.TopicCharge: b.svc.HandleCharge,
		service.TopicEvents: func(_ context.Context, m job.Message) error {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, string(m.Payload))
			return nil
		},
	}}
	return b
}

// open makes an account with the given balance (its plan's grants adjusted away).
func (b billingBundle) open(t *testing.T, plan account.Plan, balance int64) account.Account {
	t.Helper()
	a := account.Account{ID: job.NewID("acc"), Plan: plan}
	if err := b.svc.OpenAccount(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := b.jobs.CreateAccount(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	have, _ := b.ledger.Balance(b.ctx, a.ID)
	if have != balance {
		if _, err := b.svc.AddCredits(b.ctx, service.Credit{AccountID: a.ID, Kind: billing.KindAdjustment, Amount: balance - have, Note: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

func TestSubmitGateOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		plan    account.Plan
		balance int64
		params  string
		want    problem.Code // "" accepted
		message string
	}{
		{"free cpu", account.PlanFree, 1, `{}`, "", ""},
		{"free gpu", account.PlanFree, 600, `{"gpu":true}`, problem.CodePlanLimit, "Pro plan"},
		{"plan before balance", account.PlanFree, 0, `{"gpu":true}`, problem.CodePlanLimit, ""},
		{"timeout over the cap names it", account.PlanFree, 600, `{"timeout":600}`, problem.CodeValidation, "execution cap of 300 seconds"},
		{"empty balance", account.PlanFree, 0, `{}`, problem.CodeInsufficientCredits, "minimum charge of 1 credit"},
		{"balance before schema", account.PlanFree, 0, `{"nonsense":1}`, problem.CodeInsufficientCredits, ""},
		{"schema last", account.PlanFree, 600, `{"nonsense":1}`, problem.CodeValidation, "nonsense"},
		{"gpu minimum", account.PlanPro, 9, `{"gpu":true}`, problem.CodeInsufficientCredits, "10 credits"},
		{"pro gpu", account.PlanPro, 10, `{"gpu":true,"timeout":900}`, "", ""},
		{"negative balance", account.PlanPro, -50, `{}`, problem.CodeInsufficientCredits, "-50 credits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := billingSetup(t)
			a := b.open(t, tt.plan, tt.balance)
			j, err := b.svc.SubmitJob(b.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(tt.params)})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if j.Status != job.StatusWaiting {
					t.Fatalf("status %s", j.Status)
				}
				return
			}
			if got := problem.CodeOf(err); got != tt.want || !strings.Contains(fmt.Sprint(err), tt.message) {
				t.Fatalf("error %v (%s); want %s containing %q", err, got, tt.want, tt.message)
			}
			if tt.want == problem.CodeInsufficientCredits && !errors.Is(err, billing.ErrInsufficientCredits) {
				t.Fatalf("%v does not wrap billing.ErrInsufficientCredits", err)
			}
			if page, _ := b.jobs.List(b.ctx, job.ListParams{AccountID: a.ID}); len(page.Jobs) != 0 {
				t.Fatal("a rejected submission saved a job")
			}
		})
	}
}

// run takes the account's next job through a runner: claimed, started, and the given result
// reported (twice when dup is set, as a redelivered report would).
func (b billingBundle) run(t *testing.T, class job.Class, res service.RunResult, dup bool) service.Assignment {
	t.Helper()
	as, err := b.svc.Claim(b.ctx, class, 1)
	if err != nil || len(as) != 1 {
		t.Fatalf("claim: %v, %v", as, err)
	}
	a := as[0]
	for _, r := range []service.RunnerReport{{Kind: service.ReportStarted}, {Kind: service.ReportResult, Result: &res}} {
		r.JobID, r.Attempt = a.JobID, a.Attempt
		if err := b.svc.HandleReport(b.ctx, r); err != nil {
			t.Fatal(err)
		}
		if dup && r.Kind == service.ReportResult {
			if err := b.svc.HandleReport(b.ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a
}

func TestBillingOutcomes(t *testing.T) {
	t.Parallel()
	file := []job.File{{Path: "out.mp4", Type: "video", Size: 1}}
	tests := []struct {
		name   string
		params string
		res    service.RunResult
		want   int64 // cost.amount, and the charge
	}{
		{"complete rounds up", `{}`, service.RunResult{Files: file, ComputeMs: 1500}, 2},
		{"exact seconds", `{}`, service.RunResult{Files: file, ComputeMs: 3000}, 3},
		{"minimum one second", `{}`, service.RunResult{Files: file, ComputeMs: 0}, 1},
		{"gpu rate", `{"gpu":true}`, service.RunResult{Files: file, ComputeMs: 2001}, 30},
		{"failed is billed", `{}`, service.RunResult{ComputeMs: 4200, Error: job.NewError(problem.CodeRunnerError, "exit 1", nil)}, 5},
		{"timeout is free", `{}`, service.RunResult{ComputeMs: 300000, Error: job.NewError(problem.CodeRunnerTimeout, "too long", nil)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := billingSetup(t)
			a := b.open(t, account.PlanPro, 1000)
			j, err := b.svc.SubmitJob(b.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(tt.params)})
			if err != nil {
				t.Fatal(err)
			}
			class := job.ClassCPU
			if strings.Contains(tt.params, "gpu") {
				class = job.ClassGPU
			}
			b.run(t, class, tt.res, true)
			// The relay hands the charge over again: still one entry.
			if _, err := b.relay.Drain(b.ctx); err != nil {
				t.Fatal(err)
			}
			got, err := b.jobs.Get(b.ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(&job.Cost{Amount: tt.want, Currency: "credits", Formatted: billing.Format(tt.want)}, got.Cost); d != "" {
				t.Fatalf("cost (-want +got):\n%s", d)
			}
			if v := b.svc.View(got); v.Cost == nil || v.Cost.Amount != tt.want {
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
				for _, e := range *b.events {
					if strings.Contains(e, service.EventCompleted) {
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

func TestCancelBilling(t *testing.T) {
	t.Parallel()
	b := billingSetup(t)
	a := b.open(t, account.PlanPro, 100)
	submit := func() *job.Job {
		j, err := b.svc.SubmitJob(b.ctx, a, jobtype.Request{Type: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	waiting := submit()
	if _, err := b.svc.CancelJob(b.ctx, a, waiting.ID); err != nil {
		t.Fatal(err)
	}
	running := submit()
	as, _ := b.svc.Claim(b.ctx, job.ClassCPU, 1)
	if len(as) != 1 || as[0].JobID != running.ID {
		t.Fatalf("claimed %v", as)
	}
	if err := b.svc.HandleReport(b.ctx, service.RunnerReport{JobID: running.ID, Attempt: 1, Kind: service.ReportStarted}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.CancelJob(b.ctx, a, running.ID); err != nil {
		t.Fatal(err)
	}
	killed := service.RunnerReport{JobID: running.ID, Attempt: 1, Kind: service.ReportResult,
		Result: &service.RunResult{ComputeMs: 2500, Error: job.NewError(problem.CodeCancelled, "killed", nil)}}
	for range 2 {
		if err := b.svc.HandleReport(b.ctx, killed); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = b.relay.Drain(b.ctx)
	w, _ := b.jobs.Get(b.ctx, waiting.ID)
	r, _ := b.jobs.Get(b.ctx, running.ID)
	if w.Cost != nil || r.Cost == nil || r.Cost.Amount != 3 {
		t.Fatalf("costs: cancelled waiting %+v, cancelled running %+v; want none and 3", w.Cost, r.Cost)
	}
	if bal, _ := b.ledger.Balance(b.ctx, a.ID); bal != 97 {
		t.Fatalf("balance %d; want 97", bal)
	}
}

func TestPlanGrantsAndPurchases(t *testing.T) {
	t.Parallel()
	b := billingSetup(t)
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
			_, err := b.svc.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindPurchase, Pack: "small", Reference: "o1"})
			return err
		}, free.ID, p.Plans["free"].StarterGrant + pk.Credits},
		{"the same order again records nothing", func() error {
			_, err := b.svc.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindPurchase, Pack: "small", Reference: "o1"})
			return err
		}, free.ID, p.Plans["free"].StarterGrant + pk.Credits},
		{"upgrade includes the month once", func() error {
			if err := b.svc.SetPlan(b.ctx, free.ID, account.PlanPro); err != nil {
				return err
			}
			if n, err := b.svc.GrantMonthly(b.ctx); err != nil || n != 0 {
				return fmt.Errorf("GrantMonthly granted %d again: %v", n, err)
			}
			return b.svc.SetPlan(b.ctx, free.ID, account.PlanPro)
		}, free.ID, p.Plans["free"].StarterGrant + pk.Credits + p.Plans["pro"].MonthlyCredits},
		{"pro purchase gets its bonus", func() error {
			got, err := b.svc.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindPurchase, Amount: 1000, Reference: "o2"})
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
	if _, err := b.svc.AddCredits(b.ctx, service.Credit{AccountID: free.ID, Kind: billing.KindGrant, Amount: -5}); problem.CodeOf(err) != problem.CodeValidation {
		t.Fatalf("negative grant: %v", err)
	}
}

// TestConcurrentSubmissionsAndResults is the ledger's property: 1,000 submissions racing on one
// Pro account with runners reporting results (some twice, some failed, some timed out) and the
// relay draining beside them. Afterwards the ledger balances, no job is charged twice, every
// billed job's charge equals its cost, and the balance is not below zero by more than the
// charges in flight: the jobs an account may run at once (its concurrency) plus the results
// committed but not yet in the ledger (at most one per runner). See README, "Billing".
func TestConcurrentSubmissionsAndResults(t *testing.T) {
	t.Parallel()
	b := billingSetup(t)
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
			_, err := b.svc.SubmitJob(b.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(fmt.Sprintf(`{"timeout":%d}`, 60+i%60))})
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
				as, err := b.svc.Claim(b.ctx, job.ClassCPU, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if len(as) == 0 {
					// Empty: nothing waits, the cap holds the rest back, or the jobs claimed
					// failed for want of credits. Stop only when nothing waits.
					if w, _ := b.jobs.List(b.ctx, job.ListParams{AccountID: a.ID, Status: job.StatusWaiting, Limit: 1}); subsDone.Load() && len(w.Jobs) == 0 {
						return
					}
					time.Sleep(50 * time.Microsecond)
					continue
				}
				x := as[0]
				ms := rng.Int64N(5000)
				res := service.RunResult{Files: []job.File{{Path: "o.mp4", Type: "video", Size: 1}}, ComputeMs: ms}
				switch rng.IntN(10) {
				case 0:
					res = service.RunResult{ComputeMs: ms, Error: job.NewError(problem.CodeRunnerError, "exit 1", nil)}
				case 1:
					res = service.RunResult{ComputeMs: ms, Error: job.NewError(problem.CodeRunnerTimeout, "limit", nil)}
				}
				if c := billing.Default().Price(job.ClassCPU, ms); c > maxCharge.Load() {
					maxCharge.Store(c)
				}
				_ = b.svc.HandleReport(b.ctx, service.RunnerReport{JobID: x.JobID, Attempt: x.Attempt, Kind: service.ReportStarted})
				report := service.RunnerReport{JobID: x.JobID, Attempt: x.Attempt, Kind: service.ReportResult, Result: &res}
				var dup sync.WaitGroup
				for range 1 + rng.IntN(2) {
					dup.Go(func() {
						if err := b.svc.HandleReport(b.ctx, report); err != nil {
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
			time.Sleep(100 * time.Microsecond)
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
		page, err := b.jobs.List(b.ctx, job.ListParams{AccountID: a.ID, Cursor: cursor, Limit: 100})
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
