package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/idempotency/idempotencytest"
	"github.com/mediajobs/mediajobs/core/problem"
)

type testBundle struct {
	guard *idempotency.Guard
	clock *clocktest.Fake
}

func setup(t *testing.T, wait time.Duration) testBundle {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	g, err := idempotency.NewGuard(idempotency.GuardPorts{Store: idempotencytest.NewMemory(), Clock: clk, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	return testBundle{guard: g, clock: clk}
}

func codeOf(err error) problem.Code {
	if err == nil {
		return ""
	}
	return problem.CodeOf(err)
}

func TestGuardRepeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := idempotency.Call{AccountID: "acc_1", Key: "k1", Operation: "POST /jobs", Fingerprint: "A"}
	tests := []struct {
		name     string
		repeat   idempotency.Call
		advance  time.Duration
		wantCode problem.Code
		// wantReplay: the repeat gets the first response; otherwise it holds the key anew.
		wantReplay bool
	}{
		{"same body replays", first, time.Hour, "", true},
		{"different body refused", idempotency.Call{AccountID: "acc_1", Key: "k1", Operation: "POST /jobs", Fingerprint: "B"}, 0, problem.CodeIdempotencyKeyReused, false},
		{"other operation refused", idempotency.Call{AccountID: "acc_1", Key: "k1", Operation: "POST /batches", Fingerprint: "A"}, 0, problem.CodeIdempotencyKeyReused, false},
		{"other account is its own key", idempotency.Call{AccountID: "acc_2", Key: "k1", Operation: "POST /jobs", Fingerprint: "B"}, 0, "", false},
		{"after a day the key is new", idempotency.Call{AccountID: "acc_1", Key: "k1", Operation: "POST /jobs", Fingerprint: "B"}, 24 * time.Hour, "", false},
		{"streamed body: caller matches later", idempotency.Call{AccountID: "acc_1", Key: "k1", Operation: "POST /jobs"}, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, time.Second)
			tk, prior, err := b.guard.Begin(ctx, first)
			if err != nil || prior != nil || tk == nil {
				t.Fatalf("first Begin = %v, %v, %v", tk, prior, err)
			}
			if err := tk.Complete(ctx, "", []byte("first")); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(tt.advance)
			tk2, prior, err := b.guard.Begin(ctx, tt.repeat)
			if got := codeOf(err); got != tt.wantCode {
				t.Fatalf("repeat Begin: code %q (%v), want %q", got, err, tt.wantCode)
			}
			if err != nil {
				return
			}
			if tt.wantReplay {
				if prior == nil || string(prior.Response) != "first" || tk2 != nil {
					t.Fatalf("repeat Begin = %v, %+v; want the first response", tk2, prior)
				}
				if err := idempotency.Match(prior, "A"); err != nil {
					t.Errorf("Match of the same body: %v", err)
				}
				if got := codeOf(idempotency.Match(prior, "B")); got != problem.CodeIdempotencyKeyReused {
					t.Errorf("Match of another body: %q", got)
				}
				return
			}
			if tk2 == nil || prior != nil {
				t.Fatalf("repeat Begin = %v, %+v; want the key held anew", tk2, prior)
			}
		})
	}
}

func TestGuardReleaseLetsARepeatRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, time.Second)
	c := idempotency.Call{AccountID: "acc_1", Key: "k", Operation: "POST /jobs", Fingerprint: "A"}
	tk, _, err := b.guard.Begin(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.Fingerprint = "B" // a corrected request under the same key
	if tk, prior, err := b.guard.Begin(ctx, c); err != nil || tk == nil || prior != nil {
		t.Errorf("Begin after Release = %v, %v, %v; want the key held", tk, prior, err)
	}
}

func TestGuardKeys(t *testing.T) {
	t.Parallel()
	long := make([]byte, idempotency.MaxKeyLength+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, key := range []string{"", string(long), "has space", "tab\t", "é"} {
		if got := codeOf(idempotency.CheckKey(key)); got != problem.CodeValidation {
			t.Errorf("CheckKey(%q) code %q, want VALIDATION_ERROR", key, got)
		}
	}
	for _, key := range []string{"a", "8e03978e-40d5-43e8-bc93-6894a57f9324", string(long[1:])} {
		if err := idempotency.CheckKey(key); err != nil {
			t.Errorf("CheckKey(%q) = %v", key, err)
		}
	}
}

// TestGuardConcurrentRepeats: many requests with one key at once do the work once, and every
// one of them answers with that work's response.
func TestGuardConcurrentRepeats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, 10*time.Second)
	c := idempotency.Call{AccountID: "acc_1", Key: "k", Operation: "POST /jobs", Fingerprint: "A"}
	var (
		work atomic.Int32
		wg   sync.WaitGroup
	)
	answers := make([]string, 50)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, prior, err := b.guard.Begin(ctx, c)
			if err != nil {
				t.Errorf("Begin: %v", err)
				return
			}
			if prior != nil {
				answers[i] = string(prior.Response)
				return
			}
			work.Add(1)
			answers[i] = "job_1"
			if err := tk.Complete(ctx, "", []byte("job_1")); err != nil {
				t.Errorf("Complete: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := work.Load(); n != 1 {
		t.Errorf("the work ran %d times, want once", n)
	}
	for i, a := range answers {
		if a != "job_1" {
			t.Errorf("answer %d = %q, want job_1", i, a)
		}
	}
}

// TestGuardInProgress: a repeat that outwaits the guard is told to retry, with Retry-After.
func TestGuardInProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, 20*time.Millisecond)
	c := idempotency.Call{AccountID: "acc_1", Key: "k", Operation: "POST /jobs", Fingerprint: "A"}
	if _, _, err := b.guard.Begin(ctx, c); err != nil {
		t.Fatal(err)
	}
	_, _, err := b.guard.Begin(ctx, c)
	p, ok := problem.As(err)
	if !ok || p.Code != problem.CodeConflict || p.RetryAfter <= 0 {
		t.Fatalf("Begin while the first runs = %v; want CONFLICT with RetryAfter", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	b2 := setup(t, time.Minute)
	if _, _, err := b2.guard.Begin(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b2.guard.Begin(cctx, c); !errors.Is(err, context.Canceled) {
		t.Errorf("a waiting Begin whose context ends = %v, want context.Canceled", err)
	}
}

// renewCounter is a store that tells each renewal of a lease.
type renewCounter struct {
	idempotency.Store
	renewed chan time.Time
}

func (r renewCounter) RenewKey(ctx context.Context, accountID, key, owner string, until time.Time) error {
	err := r.Store.RenewKey(ctx, accountID, key, owner, until)
	if err == nil {
		r.renewed <- until
	}
	return err
}

// TestGuardRenewsItsLease: a request that works longer than the lease keeps its key (a repeat
// is told it is in progress, not handed the key), and stops renewing once it completes.
func TestGuardRenewsItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lease = 60 * time.Millisecond
	store := renewCounter{Store: idempotencytest.NewMemory(), renewed: make(chan time.Time, 100)}
	g, err := idempotency.NewGuard(idempotency.GuardPorts{Store: store, Clock: clock.System{}, Lease: lease, Wait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := idempotency.Call{AccountID: "acc_1", Key: "k", Operation: "POST /uploads"}
	ticket, _, err := g.Begin(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 { // four renewals: more than a lease has passed
		select {
		case <-store.renewed:
		case <-time.After(10 * time.Second):
			t.Fatal("the lease was not renewed")
		}
	}
	if _, _, err := g.Begin(ctx, c); codeOf(err) != problem.CodeConflict {
		t.Fatalf("a repeat while the first still works (past its first lease) = %v; want CONFLICT", err)
	}
	if err := ticket.Complete(ctx, "", []byte("r")); err != nil {
		t.Fatal(err)
	}
	for len(store.renewed) > 0 { // a renewal that raced the completion
		<-store.renewed
	}
	select {
	case until := <-store.renewed:
		t.Errorf("renewed to %v after Complete", until)
	case <-time.After(3 * lease):
	}
}
