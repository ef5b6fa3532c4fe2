package jobtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
)

// accountMaker is how the suite tells a store the plans of accounts: the SQL stores keep them in
// their accounts table, Memory in a map.
type accountMaker interface {
	CreateAccount(ctx context.Context, a account.Account) error
}

// accountCaps are the concurrency caps of the plans the suite's accounts are on.
var accountCaps = map[string]int{string(account.PlanFree): 1, string(account.PlanPro): 2}

// setupAccounts is a new store that knows a free account and a pro one.
func setupAccounts(t *testing.T, newStore Constructor) (job.Store, context.Context) {
	t.Helper()
	s, ctx := newStore(t), context.Background()
	am, ok := s.(accountMaker)
	if !ok {
		t.Fatalf("%T cannot create accounts", s)
	}
	for _, a := range []account.Account{{ID: "acc_free", Plan: account.PlanFree, CreatedAt: base}, {ID: "acc_pro", Plan: account.PlanPro, CreatedAt: base}} {
		if err := am.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	return s, ctx
}

// TestClaimSkipsAccountsAtTheirConcurrency: Claim passes over the jobs of an account that has as
// many dispatched or running as its plan allows, oldest first otherwise, and an account the store
// does not know has no cap.
func TestClaimSkipsAccountsAtTheirConcurrency(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := setupAccounts(t, newStore)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	var free, pro, other []string
	for i := range 3 {
		f := newJob(t, "acc_free", at(i), job.ClassCPU)
		p := newJob(t, "acc_pro", at(10+i), job.ClassCPU)
		o := newJob(t, "acc_unknown", at(20+i), job.ClassCPU)
		for _, j := range []*job.Job{f, p, o} {
			mustCreate(t, s, j)
		}
		free, pro, other = append(free, f.ID), append(pro, p.ID), append(other, o.ID)
	}
	claim := func(limit int) []string {
		t.Helper()
		js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: limit, Lease: time.Minute, Now: base, Concurrency: accountCaps})
		if err != nil {
			t.Fatal(err)
		}
		return ids(js)
	}
	// Accounts in turns, oldest first, but one free job and two pro jobs at most; the account
	// the store does not know has no cap.
	want := []string{free[0], pro[0], other[0], pro[1], other[1]}
	if d := cmp.Diff(want, claim(5)); d != "" {
		t.Fatalf("first claim (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{other[2]}, claim(5)); d != "" {
		t.Fatalf("claim with every capped account busy (-want +got):\n%s", d)
	}
	if got := claim(5); len(got) != 0 {
		t.Fatalf("claimed %v past the caps", got)
	}
	// A job that ends frees its account's slot; a running one still holds it.
	if _, err := s.Update(ctx, pro[0], func(j *job.Job) error { return j.Start(base, time.Minute) }); err != nil {
		t.Fatal(err)
	}
	if got := claim(5); len(got) != 0 {
		t.Fatalf("claimed %v while the pro jobs run", got)
	}
	for _, id := range []string{free[0], pro[0]} {
		if _, err := s.Update(ctx, id, func(j *job.Job) error { return j.Cancel(base) }); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff([]string{free[1], pro[2]}, claim(5)); d != "" {
		t.Fatalf("claim after two ended (-want +got):\n%s", d)
	}
	// Without caps, the waiting free job goes at once.
	js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 5, Lease: time.Minute, Now: base})
	if err != nil || len(js) != 1 || js[0].ID != free[2] {
		t.Fatalf("uncapped claim: %v, %v; want %s", ids(js), err, free[2])
	}
}

// TestConcurrentClaimersKeepTheCap: concurrent claimers together dispatch no more of an account's
// jobs than its cap.
func TestConcurrentClaimersKeepTheCap(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := setupAccounts(t, newStore)
	for i := range 8 {
		mustCreate(t, s, newJob(t, "acc_pro", base.Add(time.Duration(i)*time.Second), job.ClassCPU))
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		n  int
	)
	for range 6 {
		wg.Go(func() {
			js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 3, Lease: time.Minute, Now: base, Concurrency: accountCaps})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			n += len(js)
			mu.Unlock()
		})
	}
	wg.Wait()
	if n != 2 {
		t.Fatalf("concurrent claimers dispatched %d jobs of an account capped at 2", n)
	}
}

// TestSplitPartsOutsideTheCap: a split job's parts are neither counted against their account's
// concurrency cap nor held by it, so a split job that fills the cap while it waits for its parts
// does not hold them back; the account's other jobs still wait for the cap.
func TestSplitPartsOutsideTheCap(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := setupAccounts(t, newStore)
	claim := func() []string {
		t.Helper()
		js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 5, Lease: time.Minute, Now: base, Concurrency: accountCaps})
		if err != nil {
			t.Fatal(err)
		}
		return ids(js)
	}
	parent := newJob(t, "acc_free", base, job.ClassCPU)
	mustCreate(t, s, parent)
	if d := cmp.Diff([]string{parent.ID}, claim()); d != "" {
		t.Fatalf("claiming the split job (-want +got):\n%s", d)
	}
	other := newJob(t, "acc_free", base.Add(time.Second), job.ClassCPU)
	mustCreate(t, s, other)
	var parts []string
	for i := range 2 {
		p := newJob(t, "acc_free", base.Add(time.Duration(2+i)*time.Second), job.ClassCPU)
		p.ParentID = parent.ID
		mustCreate(t, s, p)
		parts = append(parts, p.ID)
	}
	// The free plan's cap is 1, which the split job holds: its parts go, the other job waits.
	if d := cmp.Diff(parts, claim()); d != "" {
		t.Fatalf("claim with the cap full (-want +got):\n%s", d)
	}
	if _, err := s.Update(ctx, parent.ID, func(j *job.Job) error { return j.Cancel(base) }); err != nil {
		t.Fatal(err)
	}
	// Running parts do not count: with their job ended, the other job goes.
	if d := cmp.Diff([]string{other.ID}, claim()); d != "" {
		t.Fatalf("claim after the split job ended (-want +got):\n%s", d)
	}
}
