package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/service"
)

// The sweep service acts on a lost runner's job at its first pass, tells its test signal how
// many it changed, and wakes other replicas' claims through Requeued.
func TestSweepServiceActsOnLostLeases(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	j := h.submitJob(t, acc, `{}`)
	h.claim(t, job.ClassCPU)
	h.clock.Advance(lease + time.Second) // the runner stopped renewing its lease
	requeued := make(chan []job.Class, 1)
	s := service.NewSweepService(h.runs, service.SweepConfig{Lease: time.Millisecond,
		Requeued: func(_ context.Context, c []job.Class) { requeued <- c }})
	s.TestSignals.Pass = make(chan service.PassResult, 4)
	ctx, cancel := context.WithCancel(context.Background())
	wait := service.RunServices(ctx, s)
	defer func() { cancel(); wait() }()
	if r := <-s.TestSignals.Pass; r.Err != nil || r.N != 1 {
		t.Fatalf("first pass: %+v", r)
	}
	if c := <-requeued; len(c) != 2 {
		t.Fatalf("requeued classes %v", c)
	}
	if got := h.job(t, j.ID); got.Status != job.StatusWaiting {
		t.Fatalf("the lost runner's job is %s", got.Status)
	}
}

// The relay service hands messages on at once when woken, not at its next interval.
func TestRelayServiceRunsWhenWoken(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	wake := make(chan struct{}, 1)
	s := service.NewRelayService(h.Relay, service.RelayConfig{Interval: time.Hour, Wake: wake})
	s.TestSignals.Pass = make(chan service.PassResult, 4)
	ctx, cancel := context.WithCancel(context.Background())
	wait := service.RunServices(ctx, s)
	defer func() { cancel(); wait() }()
	if r := <-s.TestSignals.Pass; r.Err != nil {
		t.Fatalf("first pass: %+v", r)
	}
	h.submitJob(t, acc, `{}`)
	a := h.claim(t, job.ClassCPU)
	h.beat(t, a.Lease, 0, false) // emits job.running into the outbox
	wake <- struct{}{}
	if r := <-s.TestSignals.Pass; r.Err != nil || r.N < 1 {
		t.Fatalf("woken pass: %+v", r)
	}
}

// The grant service grants a month's credits once, however many passes run.
func TestGrantServiceGrantsOncePerMonth(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 0)
	s := service.NewGrantService(h.Credits, h.Idempotency, service.GrantConfig{Interval: time.Millisecond})
	s.TestSignals.Pass = make(chan service.PassResult, 8)
	ctx, cancel := context.WithCancel(context.Background())
	wait := service.RunServices(ctx, s)
	defer func() { cancel(); wait() }()
	if r := <-s.TestSignals.Pass; r.Err != nil {
		t.Fatalf("first pass: %+v", r)
	}
	first, _ := h.Ledger.Balance(ctx, acc.ID)
	for range 3 {
		if r := <-s.TestSignals.Pass; r.Err != nil || r.N != 0 {
			t.Fatalf("a later pass granted again: %+v", r)
		}
	}
	if n, err := h.Credits.GrantMonthly(ctx); err != nil || n != 0 {
		t.Fatalf("the service left %d grants undone: %v", n, err)
	}
	if bal, _ := h.Ledger.Balance(ctx, acc.ID); bal != first {
		t.Fatalf("balance %d after more passes, %d after the first", bal, first)
	}
}
