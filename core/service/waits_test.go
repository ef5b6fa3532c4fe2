package service_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// waitResult is what one Jobs.Wait answered.
type waitResult struct {
	view service.View
	err  error
}

// waitHarness is a harness whose Jobs' waits read their job again only when told: a wait that
// ends proves a word reached it (their recheck is an hour). Wired, the waits hear of the jobs
// that end, as the application wires them (an Observer); else only of what Changed tells.
func waitHarness(t *testing.T, wired bool) (*harness, *service.Waits) {
	t.Helper()
	waits := service.NewWaits()
	o := servicetest.Options{Waits: waits, WaitRecheck: time.Hour}
	if wired {
		o.Observer = waits
	}
	return setupOptions(t, o), waits
}

// startWait runs Jobs.Wait in the background and returns once it is waiting on the job.
func startWait(t *testing.T, h *harness, w *service.Waits, ctx context.Context, a account.Account, id string, d time.Duration) <-chan waitResult {
	t.Helper()
	before := w.Watching(id)
	out := make(chan waitResult, 1)
	go func() {
		v, err := h.jobs.Wait(ctx, a, id, d)
		out <- waitResult{v, err}
	}()
	for w.Watching(id) == before {
		select {
		case r := <-out:
			t.Fatalf("Wait answered %s, %v before it waited", r.view.Status, r.err)
		case <-time.After(time.Millisecond): // a wait on state: the wait's registration
		}
	}
	return out
}

// leftNothing fails the test if the waits still count a job, a wait or an account, when all
// have answered.
func leftNothing(t *testing.T, w *service.Waits, when string) {
	t.Helper()
	if n, m, k := w.Entries(), w.Waiting(), w.Accounts(); n+m+k != 0 {
		t.Errorf("%s: %d jobs, %d waits and %d accounts still counted", when, n, m, k)
	}
}

// answer is what a call held in the background (a Wait, a held heartbeat) answered, failing
// the test if it answers nothing within a minute.
func answer[T any](t *testing.T, out <-chan T) T {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(time.Minute):
		t.Fatal("no answer within a minute")
		var zero T
		return zero
	}
}

func TestJobsWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// act moves the job (or the service) while the wait is on; d is the wait asked.
		act        func(t *testing.T, h *harness, w *service.Waits, a account.Account, id string, cancel context.CancelFunc)
		d          time.Duration
		wantStatus job.Status
		wantErr    error
		unwired    bool // the waits hear only Changed
	}{
		{
			name: "the runner's failure report ends it",
			act: func(t *testing.T, h *harness, _ *service.Waits, _ account.Account, _ string, _ context.CancelFunc) {
				as := h.claim(t, job.ClassCPU)
				h.beat(t, as.Lease, 0.5, true)
				h.clock.Advance(3 * time.Second)
				if err := h.runs.Report(h.ctx, as.Lease, workqueue.Result{ComputeMs: 3000, Started: true, Failure: exitFailure("boom")}); err != nil {
					t.Fatal(err)
				}
			},
			d:          service.MaxWait,
			wantStatus: job.StatusFailed,
		},
		{
			name: "a cancel ends it",
			act: func(t *testing.T, h *harness, _ *service.Waits, a account.Account, id string, _ context.CancelFunc) {
				if _, err := h.cancel.Cancel(h.ctx, a, id); err != nil {
					t.Fatal(err)
				}
			},
			d:          service.MaxWait,
			wantStatus: job.StatusCancelled,
		},
		{
			name: "a word from another replica (Changed) makes it read the job again",
			act: func(t *testing.T, h *harness, w *service.Waits, _ account.Account, id string, _ context.CancelFunc) {
				// The job ends where the waits hear nothing of it: only Changed tells them.
				// A word while it still runs is read and waited on again.
				as := h.claim(t, job.ClassCPU)
				h.jobs.Changed(id)
				for w.Watching(id) == 0 {
					time.Sleep(time.Millisecond) // a wait on state: the wait's return to waiting
				}
				h.beat(t, as.Lease, 0, true)
				if err := h.runs.Report(h.ctx, as.Lease, workqueue.Result{Failure: exitFailure("boom")}); err != nil {
					t.Fatal(err)
				}
				h.jobs.Changed(id)
			},
			d:          service.MaxWait,
			wantStatus: job.StatusFailed,
			unwired:    true,
		},
		{
			name:       "its time up, it answers the job as it stands",
			act:        func(*testing.T, *harness, *service.Waits, account.Account, string, context.CancelFunc) {},
			d:          20 * time.Millisecond,
			wantStatus: job.StatusWaiting,
		},
		{
			name: "the service's stop answers it at once",
			act: func(_ *testing.T, h *harness, _ *service.Waits, _ account.Account, _ string, _ context.CancelFunc) {
				h.jobs.Stop()
			},
			d:          service.MaxWait,
			wantStatus: job.StatusWaiting,
		},
		{
			name: "the caller's context ends it with its error",
			act: func(_ *testing.T, _ *harness, _ *service.Waits, _ account.Account, _ string, cancel context.CancelFunc) {
				cancel()
			},
			d:       service.MaxWait,
			wantErr: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, w := waitHarness(t, !tt.unwired)
			a := h.open(t, account.PlanPro, 1_000_000)
			id := h.submitJob(t, a, `{}`).ID
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := startWait(t, h, w, ctx, a, id, tt.d)
			tt.act(t, h, w, a, id, cancel)
			r := answer(t, out)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(r.err, tt.wantErr) {
					t.Fatalf("Wait error = %v, want %v", r.err, tt.wantErr)
				}
			case r.err != nil:
				t.Fatalf("Wait: %v", r.err)
			case r.view.Status != tt.wantStatus || r.view.ID != id:
				t.Fatalf("Wait answered job %s %s, want %s %s", r.view.ID, r.view.Status, id, tt.wantStatus)
			}
			leftNothing(t, w, "after the wait answered")
		})
	}
}

// TestJobsWaitAnswersAtOnce: a job that has ended, any job when the wait is 0, and a job of
// another account (NOT_FOUND) are answered without waiting, and leave no wait behind.
func TestJobsWaitAnswersAtOnce(t *testing.T) {
	t.Parallel()
	h, w := waitHarness(t, true)
	a := h.open(t, account.PlanPro, 1_000_000)
	other := h.open(t, account.PlanPro, 1_000_000)
	waiting := h.submitJob(t, a, `{}`).ID
	cancelled := h.submitJob(t, a, `{}`).ID
	if _, err := h.cancel.Cancel(h.ctx, a, cancelled); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		a          account.Account
		id         string
		d          time.Duration
		wantStatus job.Status
		wantCode   problem.Code
	}{
		{"ended", a, cancelled, service.MaxWait, job.StatusCancelled, ""},
		{"a wait of 0", a, waiting, 0, job.StatusWaiting, ""},
		{"another account's job", other, waiting, service.MaxWait, "", problem.CodeNotFound},
		{"no such job", a, "job_missing", service.MaxWait, "", problem.CodeNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := h.jobs.Wait(context.Background(), tt.a, tt.id, tt.d)
			switch {
			case tt.wantCode != "":
				if problem.CodeOf(err) != tt.wantCode {
					t.Fatalf("Wait error = %v, want %s", err, tt.wantCode)
				}
			case err != nil || v.Status != tt.wantStatus:
				t.Fatalf("Wait = %s, %v; want %s", v.Status, err, tt.wantStatus)
			}
			leftNothing(t, w, "after an answer")
		})
	}
}

// TestJobsWaitMany: every wait on a job hears of its end, and the last to leave removes it.
func TestJobsWaitMany(t *testing.T) {
	t.Parallel()
	h, w := waitHarness(t, true)
	a := h.open(t, account.PlanPro, 1_000_000)
	id := h.submitJob(t, a, `{}`).ID
	var outs []<-chan waitResult
	for range 3 {
		outs = append(outs, startWait(t, h, w, context.Background(), a, id, service.MaxWait))
	}
	if n := w.Watching(id); n != 3 {
		t.Fatalf("%d waits on the job, want 3", n)
	}
	if _, err := h.cancel.Cancel(h.ctx, a, id); err != nil {
		t.Fatal(err)
	}
	for i, out := range outs {
		if r := answer(t, out); r.err != nil || r.view.Status != job.StatusCancelled {
			t.Errorf("wait %d answered %s, %v; want cancelled", i, r.view.Status, r.err)
		}
	}
	leftNothing(t, w, "after every wait answered")
}

// TestJobsWaitCap: an account holding MaxWaitsPerAccount waits has its next answered at once,
// as a read; another account's wait still waits.
func TestJobsWaitCap(t *testing.T) {
	t.Parallel()
	h, w := waitHarness(t, true)
	a := h.open(t, account.PlanPro, 1_000_000)
	other := h.open(t, account.PlanPro, 1_000_000)
	id := h.submitJob(t, a, `{}`).ID
	otherID := h.submitJob(t, other, `{}`).ID
	var outs []<-chan waitResult
	for range service.MaxWaitsPerAccount {
		outs = append(outs, startWait(t, h, w, context.Background(), a, id, service.MaxWait))
	}
	if v, err := h.jobs.Wait(context.Background(), a, id, service.MaxWait); err != nil || v.Status != job.StatusWaiting {
		t.Fatalf("the wait past the cap answered %s, %v; want the waiting job at once", v.Status, err)
	}
	outs = append(outs, startWait(t, h, w, context.Background(), other, otherID, service.MaxWait))
	if n := w.Waiting(); n != service.MaxWaitsPerAccount+1 {
		t.Fatalf("%d waits on, want %d", n, service.MaxWaitsPerAccount+1)
	}
	for _, c := range []struct {
		a  account.Account
		id string
	}{{a, id}, {other, otherID}} {
		if _, err := h.cancel.Cancel(h.ctx, c.a, c.id); err != nil {
			t.Fatal(err)
		}
	}
	for i, out := range outs {
		if r := answer(t, out); r.err != nil || r.view.Status != job.StatusCancelled {
			t.Errorf("wait %d answered %s, %v; want cancelled", i, r.view.Status, r.err)
		}
	}
	leftNothing(t, w, "after every wait answered")
}

// balanceAtEnd is the waits of a harness, as an observer that also reads the account's balance
// at the moment it hears of a job's end.
type balanceAtEnd struct {
	service.NoObserver
	waits   *service.Waits
	balance func(accountID string) int64
	mu      sync.Mutex
	seen    map[string]int64
}

func (o *balanceAtEnd) JobFinished(j *job.Job) {
	o.mu.Lock()
	o.seen[j.ID] = o.balance(j.AccountID)
	o.mu.Unlock()
	o.waits.JobFinished(j)
}

// TestJobsWaitHearsAfterTheCharge: the waits hear of a job's end once its charge is in the
// ledger, so a client that sees the job end sees its balance charged.
func TestJobsWaitHearsAfterTheCharge(t *testing.T) {
	t.Parallel()
	waits := service.NewWaits()
	o := &balanceAtEnd{waits: waits, seen: map[string]int64{}}
	h := setupOptions(t, servicetest.Options{Observer: o, Waits: waits, WaitRecheck: time.Hour})
	o.balance = func(accountID string) int64 { b, _ := h.ledger.Balance(h.ctx, accountID); return b }
	a := h.open(t, account.PlanPro, 1_000_000)
	id := h.submitJob(t, a, `{}`).ID
	out := startWait(t, h, waits, context.Background(), a, id, service.MaxWait)
	as := h.claim(t, job.ClassCPU)
	h.beat(t, as.Lease, 0.5, true)
	h.clock.Advance(3 * time.Second)
	if err := h.runs.Report(h.ctx, as.Lease, workqueue.Result{ComputeMs: 3000, Started: true, Failure: exitFailure("boom")}); err != nil {
		t.Fatal(err)
	}
	if r := answer(t, out); r.err != nil || r.view.Status != job.StatusFailed {
		t.Fatalf("Wait answered %s, %v; want failed", r.view.Status, r.err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if bal, ok := o.seen[id]; !ok || bal >= 1_000_000 {
		t.Errorf("the waits heard of the end with the balance at %d (heard: %v), before the charge", bal, ok)
	}
}

// TestJobsWaitAnswersTheEndedJobAsGetDoes: a wait woken by the end of its job on this replica
// answers with the job as the change that ended it committed it, not read again, and that
// answer is what a read gives: its status, times, cost and files.
func TestJobsWaitAnswersTheEndedJobAsGetDoes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		res  workqueue.Result
	}{
		{"complete, with files", workqueue.Result{ComputeMs: 2500, Files: []job.File{{Path: "out.mp4", Type: job.FileVideo, Size: 7},
			{Path: "thumb.png", Type: job.FileImage, Size: 3}}}},
		{"failed", workqueue.Result{ComputeMs: 1200, Failure: exitFailure("boom")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, w := waitHarness(t, true)
			a := h.open(t, account.PlanPro, 1_000_000)
			id := h.submitJob(t, a, `{}`).ID
			out := startWait(t, h, w, context.Background(), a, id, service.MaxWait)
			h.run(t, job.ClassCPU, tt.res, false)
			r := answer(t, out)
			if r.err != nil {
				t.Fatalf("Wait: %v", r.err)
			}
			got, err := h.jobs.Get(h.ctx, a, id)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(got, r.view); d != "" {
				t.Errorf("Wait's answer differs from a read of the job (-read +wait):\n%s", d)
			}
			if r.view.Cost == nil || !r.view.Status.Terminal() {
				t.Errorf("Wait answered %s with cost %v; want an ended, billed job", r.view.Status, r.view.Cost)
			}
			leftNothing(t, w, "after the wait answered")
		})
	}
}
