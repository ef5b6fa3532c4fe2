package webhooktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// Features says what a webhook.Store adapter can do. Every adapter (memory, SQLite, PostgreSQL)
// does all the suite asks, so it has no field yet: a new adapter passes every test, and a field
// is added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns an empty store of its own, cleaned up by the adapter's test.
type Constructor func(t *testing.T) webhook.Store

// TestStore runs the shared webhook.Store suite: each test below, in parallel, against stores that
// newStore makes. An adapter's own test calls it once per backend.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newStore Constructor){
		TestEndpointRoundTrip,
		TestListEndpointsByAccount,
		TestUpdateEndpoint,
		TestDeleteEndpointTakesItsDeliveries,
		TestDeliveryRoundTripAndIdempotentCreate,
		TestUpdateDeliveryKeepsHistory,
		TestClaimDueWithLease,
		TestConcurrentClaimsShareNothing,
		TestListDeliveriesPaginated,
	}
	porttest.Run(t, f, newStore, tests...)
}

// now is the time the suite's endpoints and deliveries are made at. Stores keep UTC
// microseconds; it is already that.
var now = time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)

type testBundle struct {
	s   webhook.Store
	ctx context.Context
}

func setup(t *testing.T, newStore Constructor) testBundle {
	t.Helper()
	return testBundle{s: newStore(t), ctx: context.Background()}
}

func newEndpoint(t *testing.T, b testBundle, account string, at time.Time) webhook.Endpoint {
	t.Helper()
	e, err := webhook.NewEndpoint(webhook.NewEndpointParams{ID: job.NewID("we"), AccountID: account, Name: "hook",
		URL: "https://example.com/hook", Events: []string{webhook.EventJobFailed, webhook.EventJobCompleted}, Now: at})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.s.CreateEndpoint(b.ctx, e); err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
	return e
}

func newDelivery(t *testing.T, b testBundle, e webhook.Endpoint, key string, at time.Time) webhook.Delivery {
	t.Helper()
	d := webhook.NewDelivery(webhook.NewDeliveryParams{ID: job.NewID("del"), Key: key, Event: webhook.EventJobCompleted,
		JobID: "job_1", Endpoint: e, Body: []byte(`{"event":"job.completed"}`), Now: at})
	if err := b.s.CreateDelivery(b.ctx, d); err != nil {
		t.Fatalf("CreateDelivery: %v", err)
	}
	return d
}

// TestEndpointRoundTrip: a created endpoint reads back as it was written.
func TestEndpointRoundTrip(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	got, err := b.s.GetEndpoint(b.ctx, e.ID)
	if err != nil {
		t.Fatalf("GetEndpoint: %v", err)
	}
	if d := cmp.Diff(e, got); d != "" {
		t.Fatalf("GetEndpoint (-want +got):\n%s", d)
	}
	if err := b.s.CreateEndpoint(b.ctx, e); !errors.Is(err, problem.ErrConflict) {
		t.Errorf("CreateEndpoint with a taken ID: %v, want ErrConflict", err)
	}
	if _, err := b.s.GetEndpoint(b.ctx, "we_missing"); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("GetEndpoint of a missing endpoint: %v, want ErrNotFound", err)
	}
}

// TestListEndpointsByAccount: ListEndpoints returns an account's endpoints, oldest first, and no
// other account's.
func TestListEndpointsByAccount(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	first := newEndpoint(t, b, "acc_a", now)
	second := newEndpoint(t, b, "acc_a", now.Add(time.Second))
	newEndpoint(t, b, "acc_b", now)
	got, err := b.s.ListEndpoints(b.ctx, "acc_a")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]webhook.Endpoint{first, second}, got); d != "" {
		t.Fatalf("ListEndpoints (-want +got):\n%s", d)
	}
	none, err := b.s.ListEndpoints(b.ctx, "acc_none")
	if err != nil || len(none) != 0 {
		t.Fatalf("ListEndpoints of an account without any: %v, %v", none, err)
	}
}

// TestUpdateEndpoint: UpdateEndpoint saves what its function changes, writes nothing when the
// function fails, and fails with problem.ErrNotFound for a missing endpoint.
func TestUpdateEndpoint(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	later := now.Add(time.Minute)
	want := e
	got, err := b.s.UpdateEndpoint(b.ctx, e.ID, func(e *webhook.Endpoint) error {
		e.Enabled = false
		e.Rotate(later)
		e.UpdatedAt = later
		want.Enabled, want.Secret, want.PreviousSecret, want.PreviousUntil, want.UpdatedAt = false, e.Secret, e.PreviousSecret, e.PreviousUntil, later
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateEndpoint: %v", err)
	}
	read, err := b.s.GetEndpoint(b.ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []webhook.Endpoint{got, read} {
		if d := cmp.Diff(want, g); d != "" {
			t.Fatalf("after UpdateEndpoint (-want +got):\n%s", d)
		}
	}
	boom := errors.New("boom")
	if _, err := b.s.UpdateEndpoint(b.ctx, e.ID, func(e *webhook.Endpoint) error { e.Name = "changed"; return boom }); !errors.Is(err, boom) {
		t.Fatalf("UpdateEndpoint whose fn fails: %v, want boom", err)
	}
	if read, _ := b.s.GetEndpoint(b.ctx, e.ID); read.Name != e.Name {
		t.Errorf("a failed update wrote the name %q", read.Name)
	}
	if _, err := b.s.UpdateEndpoint(b.ctx, "we_missing", func(*webhook.Endpoint) error { return nil }); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("UpdateEndpoint of a missing endpoint: %v, want ErrNotFound", err)
	}
}

// TestDeleteEndpointTakesItsDeliveries: deleting an endpoint deletes its deliveries with it, and a
// second delete finds nothing.
func TestDeleteEndpointTakesItsDeliveries(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	d := newDelivery(t, b, e, "job.completed:job_1|"+e.ID, now)
	if err := b.s.DeleteEndpoint(b.ctx, e.ID); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
	if _, err := b.s.GetEndpoint(b.ctx, e.ID); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("GetEndpoint after delete: %v, want ErrNotFound", err)
	}
	if _, err := b.s.GetDelivery(b.ctx, d.ID); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("GetDelivery after its endpoint's delete: %v, want ErrNotFound", err)
	}
	if err := b.s.DeleteEndpoint(b.ctx, e.ID); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("DeleteEndpoint twice: %v, want ErrNotFound", err)
	}
}

// TestDeliveryRoundTripAndIdempotentCreate: a created delivery reads back as written; a second one
// with its key, or one for a missing endpoint, is refused and not stored.
func TestDeliveryRoundTripAndIdempotentCreate(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	d := newDelivery(t, b, e, "job.completed:job_1|"+e.ID, now)
	got, err := b.s.GetDelivery(b.ctx, d.ID)
	if err != nil {
		t.Fatalf("GetDelivery: %v", err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Fatalf("GetDelivery (-want +got):\n%s", diff)
	}
	again := d
	again.ID = job.NewID("del")
	if err := b.s.CreateDelivery(b.ctx, again); !errors.Is(err, problem.ErrConflict) {
		t.Errorf("CreateDelivery with a taken key: %v, want ErrConflict", err)
	}
	if _, err := b.s.GetDelivery(b.ctx, again.ID); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("the duplicate was stored: %v", err)
	}
	orphan := d
	orphan.ID, orphan.Key, orphan.EndpointID = job.NewID("del"), "other", "we_missing"
	if err := b.s.CreateDelivery(b.ctx, orphan); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("CreateDelivery for a missing endpoint: %v, want ErrNotFound", err)
	}
}

// TestUpdateDeliveryKeepsHistory: an updated delivery keeps every attempt recorded on it, in order;
// a missing one is not found.
func TestUpdateDeliveryKeepsHistory(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	d := newDelivery(t, b, e, "k", now)
	want := d
	want.Record(webhook.Attempt{At: now, StatusCode: 500, DurationMs: 12}, now)
	want.Record(webhook.Attempt{At: now.Add(5 * time.Second), Error: "timeout", DurationMs: 10000}, now.Add(5*time.Second))
	for _, a := range want.History {
		if _, err := b.s.UpdateDelivery(b.ctx, d.ID, func(d *webhook.Delivery) error { d.Record(a, a.At); return nil }); err != nil {
			t.Fatalf("UpdateDelivery: %v", err)
		}
	}
	got, err := b.s.GetDelivery(b.ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after two attempts (-want +got):\n%s", diff)
	}
	if _, err := b.s.UpdateDelivery(b.ctx, "del_missing", func(*webhook.Delivery) error { return nil }); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("UpdateDelivery of a missing delivery: %v, want ErrNotFound", err)
	}
}

// TestClaimDueWithLease: ClaimDeliveries hands out the due deliveries that are not done, oldest
// first, and not again until their lease ends.
func TestClaimDueWithLease(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	early := newDelivery(t, b, e, "a", now.Add(-2*time.Second))
	due := newDelivery(t, b, e, "b", now.Add(-time.Second))
	exact := newDelivery(t, b, e, "e", now)                       // due at the claim's very time
	after := newDelivery(t, b, e, "f", now.Add(time.Microsecond)) // a moment after it
	newDelivery(t, b, e, "c", now.Add(2*time.Minute))             // not yet due
	done := newDelivery(t, b, e, "d", now.Add(-3*time.Second))
	if _, err := b.s.UpdateDelivery(b.ctx, done.ID, func(d *webhook.Delivery) error {
		d.Record(webhook.Attempt{At: now, StatusCode: 204}, now)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.ClaimDeliveries(b.ctx, webhook.ClaimParams{Limit: 10, Lease: time.Minute, Now: now})
	if err != nil {
		t.Fatalf("ClaimDeliveries: %v", err)
	}
	var ids []string
	for _, d := range got {
		ids = append(ids, d.ID)
	}
	if diff := cmp.Diff([]string{early.ID, due.ID, exact.ID}, ids); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if again, _ := b.s.ClaimDeliveries(b.ctx, webhook.ClaimParams{Limit: 10, Lease: time.Minute, Now: now}); len(again) != 0 {
		t.Fatalf("leased deliveries claimed again: %d", len(again))
	}
	if next, err := b.s.ClaimDeliveries(b.ctx, webhook.ClaimParams{Limit: 10, Lease: time.Minute, Now: now.Add(time.Microsecond)}); err != nil ||
		len(next) != 1 || next[0].ID != after.ID {
		t.Fatalf("a microsecond later: %v %v, want only the delivery due then", next, err)
	}
	back, err := b.s.ClaimDeliveries(b.ctx, webhook.ClaimParams{Limit: 1, Lease: time.Minute, Now: now.Add(time.Minute)})
	if err != nil || len(back) != 1 || (back[0].ID != early.ID && back[0].ID != due.ID && back[0].ID != exact.ID) {
		t.Fatalf("after the lease: %v %v, want one of the leased deliveries back", back, err)
	}
}

// TestConcurrentClaimsShareNothing: concurrent claimers never get the same delivery.
func TestConcurrentClaimsShareNothing(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	const n = 20
	for i := range n {
		newDelivery(t, b, e, fmt.Sprint("k", i), now)
	}
	porttest.ClaimedOnceEach(t, n, 4, func() ([]string, error) {
		got, err := b.s.ClaimDeliveries(b.ctx, webhook.ClaimParams{Limit: 3, Lease: time.Hour, Now: now})
		var ids []string
		for _, x := range got {
			ids = append(ids, x.ID)
		}
		return ids, err
	})
}

// TestListDeliveriesPaginated: ListDeliveries pages through an endpoint's deliveries newest first,
// and refuses a bad cursor as a validation error.
func TestListDeliveriesPaginated(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	b := setup(t, newStore)
	e := newEndpoint(t, b, "acc_a", now)
	other := newEndpoint(t, b, "acc_a", now)
	var want []string
	for i := range 5 {
		d := newDelivery(t, b, e, fmt.Sprint("k", i), now.Add(time.Duration(i)*time.Second))
		want = append([]string{d.ID}, want...)
	}
	newDelivery(t, b, other, "other", now)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		p, err := b.s.ListDeliveries(b.ctx, webhook.ListParams{EndpointID: e.ID, Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatalf("ListDeliveries: %v", err)
		}
		for _, d := range p.Deliveries {
			got = append(got, d.ID)
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("listing (-want +got):\n%s", diff)
	}
	if _, err := b.s.ListDeliveries(b.ctx, webhook.ListParams{EndpointID: e.ID, Cursor: "nope"}); problem.CodeOf(err) != problem.CodeValidation {
		t.Errorf("a bad cursor: %v, want VALIDATION_ERROR", err)
	}
}
