package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Features says what an idempotency.Store adapter can do. Every adapter (memory, SQLite,
// PostgreSQL) does all the suite asks, so it has no field yet: a new adapter passes every test,
// and a field is added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns an empty store of its own, cleaned up by the adapter's test.
type Constructor func(t *testing.T) idempotency.Store

// TestStore runs the shared idempotency.Store suite: each test below, in parallel, against stores
// that newStore makes. An adapter's own test calls it once per backend.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newStore Constructor){
		TestReserveCompleteGet,
		TestScopedPerAccount,
		TestRelease,
		TestExpiryAndLease,
		TestRenew,
		TestConcurrentReserve,
	}
	porttest.Run(t, f, newStore, tests...)
}

// now is the time the suite's requests arrive at. Stores keep UTC microseconds; it is already
// that.
var now = time.Date(2026, 11, 24, 9, 0, 0, 123456000, time.UTC)

// pending is the record of a request that owner is working on, held for ten minutes.
func pending(acc, key, owner string) idempotency.Record {
	return idempotency.Record{AccountID: acc, Key: key, Operation: "POST /jobs", Fingerprint: "fp1",
		State: idempotency.Pending, Owner: owner, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour),
		LeaseUntil: now.Add(10 * time.Minute)}
}

// TestReserveCompleteGet: a new key is reserved once; its holder alone completes it, once, and the
// done record is what GetKey returns and what holds the key for its day.
func TestReserveCompleteGet(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	rec := pending("acc_1", "k1", "o1")
	if _, ok, err := s.ReserveKey(ctx, rec, now); err != nil || !ok {
		t.Fatalf("ReserveKey of a new key = %v, %v; want reserved", ok, err)
	}
	got, ok, err := s.ReserveKey(ctx, pending("acc_1", "k1", "o2"), now.Add(time.Second))
	if err != nil || ok {
		t.Fatalf("ReserveKey of a held key = %v, %v; want the holder", ok, err)
	}
	if d := cmp.Diff(rec, got); d != "" {
		t.Errorf("ReserveKey of a held key returned (-want +got):\n%s", d)
	}
	if err := s.CompleteKey(ctx, "acc_1", "k1", "o2", "fp1", []byte(`{}`)); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("CompleteKey by another owner = %v, want ErrNotFound", err)
	}
	resp := []byte(`{"status":201,"body":{"data":{"id":"job_1"}}}`)
	if err := s.CompleteKey(ctx, "acc_1", "k1", "o1", "fp2", resp); err != nil {
		t.Fatalf("CompleteKey: %v", err)
	}
	want := rec
	want.State, want.Fingerprint, want.Response = idempotency.Done, "fp2", resp
	got, err = s.GetKey(ctx, "acc_1", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GetKey after CompleteKey (-want +got):\n%s", d)
	}
	if err := s.CompleteKey(ctx, "acc_1", "k1", "o1", "fp2", resp); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("CompleteKey of a done record = %v, want ErrNotFound", err)
	}
	// Done records outlive their lease, until they expire.
	if _, ok, _ := s.ReserveKey(ctx, pending("acc_1", "k1", "o3"), now.Add(time.Hour)); ok {
		t.Errorf("ReserveKey took a done key within its day")
	}
}

// TestScopedPerAccount: keys are per account: two accounts reserve the same key, and a third finds
// neither.
func TestScopedPerAccount(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	for _, acc := range []string{"acc_1", "acc_2"} {
		if _, ok, err := s.ReserveKey(ctx, pending(acc, "same", "o"+acc), now); err != nil || !ok {
			t.Errorf("ReserveKey(%s) = %v, %v; want reserved: keys are per account", acc, ok, err)
		}
	}
	if _, err := s.GetKey(ctx, "acc_3", "same"); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("GetKey of another account = %v, want ErrNotFound", err)
	}
}

// TestRelease: ReleaseKey by the holder, and no other, frees the key for a new reservation;
// releasing a missing key is no error.
func TestRelease(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	if _, ok, err := s.ReserveKey(ctx, pending("acc_1", "k", "o1"), now); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.ReleaseKey(ctx, "acc_1", "k", "intruder"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetKey(ctx, "acc_1", "k"); err != nil {
		t.Errorf("ReleaseKey by another owner removed the record: %v", err)
	}
	if err := s.ReleaseKey(ctx, "acc_1", "k", "o1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetKey(ctx, "acc_1", "k"); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("GetKey after ReleaseKey = %v, want ErrNotFound", err)
	}
	if _, ok, err := s.ReserveKey(ctx, pending("acc_1", "k", "o2"), now); err != nil || !ok {
		t.Errorf("ReserveKey after ReleaseKey = %v, %v; want reserved", ok, err)
	}
	if err := s.ReleaseKey(ctx, "acc_1", "missing", "o1"); err != nil {
		t.Errorf("ReleaseKey of a missing key = %v, want nil", err)
	}
}

// TestExpiryAndLease: a pending record past its lease is taken over by a repeat and its old owner
// completes it no more; PurgeKeys deletes the records past their day, whose keys are then reserved
// afresh.
func TestExpiryAndLease(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	// A pending record past its lease belongs to a request that died: a repeat takes it.
	if _, ok, _ := s.ReserveKey(ctx, pending("acc_1", "stale", "o1"), now); !ok {
		t.Fatal("first ReserveKey not reserved")
	}
	later := now.Add(11 * time.Minute)
	taker := pending("acc_1", "stale", "o2")
	taker.CreatedAt, taker.ExpiresAt, taker.LeaseUntil = later, later.Add(24*time.Hour), later.Add(10*time.Minute)
	if _, ok, err := s.ReserveKey(ctx, taker, later); err != nil || !ok {
		t.Fatalf("ReserveKey past the lease = %v, %v; want taken over", ok, err)
	}
	if err := s.CompleteKey(ctx, "acc_1", "stale", "o1", "fp1", nil); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("CompleteKey by the lapsed owner = %v, want ErrNotFound", err)
	}
	// A done record past its day is replaced, and purged.
	if _, ok, _ := s.ReserveKey(ctx, pending("acc_1", "old", "o1"), now); !ok {
		t.Fatal("ReserveKey(old) not reserved")
	}
	if err := s.CompleteKey(ctx, "acc_1", "old", "o1", "fp1", []byte("r")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.ReserveKey(ctx, pending("acc_1", "old2", "o1"), now); !ok {
		t.Fatal("ReserveKey(old2) not reserved")
	}
	day := now.Add(24 * time.Hour)
	n, err := s.PurgeKeys(ctx, day)
	if err != nil || n != 2 {
		t.Errorf("PurgeKeys a day on = %d, %v; want 2 (old and old2; stale was taken over later)", n, err)
	}
	fresh := pending("acc_1", "old", "o9")
	fresh.CreatedAt, fresh.ExpiresAt, fresh.LeaseUntil = day, day.Add(24*time.Hour), day.Add(time.Minute)
	if _, ok, err := s.ReserveKey(ctx, fresh, day); err != nil || !ok {
		t.Errorf("ReserveKey of an expired key = %v, %v; want reserved", ok, err)
	}
}

// TestRenew: the holder renews its lease while it works: a repeat past the first lease still waits;
// a
// repeat past the renewed one takes over, and the old holder can renew no more.
func TestRenew(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	rec := pending("acc_1", "long", "o1")
	if _, ok, _ := s.ReserveKey(ctx, rec, now); !ok {
		t.Fatal("ReserveKey not reserved")
	}
	renewed := now.Add(15 * time.Minute)
	if err := s.RenewKey(ctx, "acc_1", "long", "o1", renewed); err != nil {
		t.Fatalf("RenewKey by the holder: %v", err)
	}
	if err := s.RenewKey(ctx, "acc_1", "long", "o2", renewed); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("RenewKey by another owner = %v, want ErrNotFound", err)
	}
	if err := s.RenewKey(ctx, "acc_1", "nope", "o1", renewed); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("RenewKey of no key = %v, want ErrNotFound", err)
	}
	got, err := s.GetKey(ctx, "acc_1", "long")
	if err != nil || !got.LeaseUntil.Equal(renewed) {
		t.Fatalf("GetKey after RenewKey: LeaseUntil %v, %v; want %v", got.LeaseUntil, err, renewed)
	}
	past := now.Add(11 * time.Minute) // past the first lease, within the renewed one
	taker := pending("acc_1", "long", "o2")
	taker.CreatedAt, taker.LeaseUntil = past, past.Add(10*time.Minute)
	if _, ok, err := s.ReserveKey(ctx, taker, past); err != nil || ok {
		t.Fatalf("ReserveKey within the renewed lease = %v, %v; want the holder kept", ok, err)
	}
	after := renewed.Add(time.Second)
	taker.CreatedAt, taker.LeaseUntil = after, after.Add(10*time.Minute)
	if _, ok, err := s.ReserveKey(ctx, taker, after); err != nil || !ok {
		t.Fatalf("ReserveKey past the renewed lease = %v, %v; want taken over", ok, err)
	}
	if err := s.RenewKey(ctx, "acc_1", "long", "o1", after.Add(time.Hour)); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("RenewKey by the lapsed holder = %v, want ErrNotFound", err)
	}
	if err := s.CompleteKey(ctx, "acc_1", "long", "o2", "fp1", []byte("r")); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewKey(ctx, "acc_1", "long", "o2", after.Add(time.Hour)); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("RenewKey of a done record = %v, want ErrNotFound", err)
	}
}

// TestConcurrentReserve: of concurrent reservations of one key, exactly one wins.
func TestConcurrentReserve(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	const n = 20
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won []string
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("o%d", i)
			_, ok, err := s.ReserveKey(ctx, pending("acc_1", "race", owner), now)
			if err != nil {
				t.Errorf("ReserveKey: %v", err)
				return
			}
			if ok {
				mu.Lock()
				won = append(won, owner)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d concurrent ReserveKey calls reserved %d times (%v), want once", n, len(won), won)
	}
	got, err := s.GetKey(ctx, "acc_1", "race")
	if err != nil || got.Owner != won[0] {
		t.Errorf("GetKey = owner %q, %v; want %q", got.Owner, err, won[0])
	}
}
