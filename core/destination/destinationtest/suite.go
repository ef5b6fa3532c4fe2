package destinationtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Features says what a destination.Store adapter can do; every adapter does all of it.
type Features struct{}

// Constructor returns an empty store of its own.
type Constructor func(t *testing.T) destination.Store

// TestStore runs the shared suite against stores that newStore makes.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	porttest.RunParallel(t, f, newStore,
		TestDestinationRoundTrip,
		TestListDestinationsByAccount,
		TestResealListsOtherKeys,
		TestDeleteRefusedWhileDeliveriesWait,
		TestDeliveryRoundTripAndConflict,
		TestUpdateDelivery,
		TestClaimDueWithLease,
		TestConcurrentClaimsShareNothing,
	)
}

// now is when the suite's rows are made: UTC microseconds, as stores keep time.
var now = time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.UTC)

type testBundle struct {
	s   destination.Store
	ctx context.Context
}

func setup(t *testing.T, newStore Constructor) testBundle {
	t.Helper()
	return testBundle{s: newStore(t), ctx: context.Background()}
}

func newDestination(t *testing.T, b testBundle, account, keyID string) destination.Destination {
	t.Helper()
	d := destination.Destination{ID: job.NewID("dst"), AccountID: account, Name: "exports", Endpoint: "https://s3.example.com",
		Bucket: "exports", Region: "us-east-1", Prefix: "media/", PathStyle: true, AccessKeyID: "AKIAEXAMPLE",
		Secret: destination.Sealed{KeyID: keyID, Box: []byte{1, 2, 3, 0, 255}}, CreatedAt: now}
	if err := b.s.CreateDestination(b.ctx, d); err != nil {
		t.Fatalf("CreateDestination: %v", err)
	}
	return d
}

func newDelivery(t *testing.T, b testBundle, d destination.Destination, jobID string, state destination.State, due *time.Time) destination.Delivery {
	t.Helper()
	dl := destination.Delivery{JobID: jobID, AccountID: d.AccountID, DestinationID: d.ID, Path: destination.DefaultPath, Preset: "web",
		State: state, Round: 1, NextAttemptAt: due, CreatedAt: now, UpdatedAt: now}
	if err := b.s.CreateJobDelivery(b.ctx, dl); err != nil {
		t.Fatalf("CreateJobDelivery: %v", err)
	}
	return dl
}

// TestDestinationRoundTrip: a destination reads back as written, sealed secret included; a
// taken ID is a conflict; a missing one is not found.
func TestDestinationRoundTrip(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	d := newDestination(t, b, "acc_a", "k1")
	got, err := b.s.GetDestination(b.ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Fatalf("GetDestination (-want +got):\n%s", diff)
	}
	if err := b.s.CreateDestination(b.ctx, d); !errors.Is(err, problem.ErrConflict) {
		t.Fatalf("CreateDestination of a taken ID = %v; want ErrConflict", err)
	}
	if _, err := b.s.GetDestination(b.ctx, "dst_missing"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("GetDestination(missing) = %v; want ErrNotFound", err)
	}
}

// TestListDestinationsByAccount: an account lists its own destinations only, oldest first.
func TestListDestinationsByAccount(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	d1 := newDestination(t, b, "acc_a", "k1")
	newDestination(t, b, "acc_b", "k1")
	d3 := newDestination(t, b, "acc_a", "k1")
	got, err := b.s.ListDestinations(b.ctx, "acc_a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]destination.Destination{d1, d3}, got); diff != "" {
		t.Fatalf("ListDestinations (-want +got):\n%s", diff)
	}
}

// TestResealListsOtherKeys: a key rotation finds the destinations sealed under other keys, and
// SetSecret re-seals them.
func TestResealListsOtherKeys(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	old := newDestination(t, b, "acc_a", "k1")
	newDestination(t, b, "acc_b", "k2")
	got, err := b.s.ListSealedWith(b.ctx, "k2", 10)
	if err != nil || len(got) != 1 || got[0].ID != old.ID {
		t.Fatalf("ListSealedWith(not k2) = %v, %v; want %s only", got, err, old.ID)
	}
	if err := b.s.SetSecret(b.ctx, old.ID, destination.Sealed{KeyID: "k2", Box: []byte{9}}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.s.ListSealedWith(b.ctx, "k2", 10); err != nil || len(got) != 0 {
		t.Fatalf("after SetSecret: %v, %v; want none", got, err)
	}
	back, _ := b.s.GetDestination(b.ctx, old.ID)
	if back.Secret.KeyID != "k2" || string(back.Secret.Box) != "\x09" {
		t.Fatalf("secret %+v; want the new one", back.Secret)
	}
	if err := b.s.SetSecret(b.ctx, "dst_missing", back.Secret); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("SetSecret(missing) = %v; want ErrNotFound", err)
	}
}

// TestDeleteRefusedWhileDeliveriesWait: a destination named by an awaiting or pending delivery
// is not deleted (ErrConflict); once its deliveries are over, it is.
func TestDeleteRefusedWhileDeliveriesWait(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	d := newDestination(t, b, "acc_a", "k1")
	for _, st := range []destination.State{destination.StateAwaiting, destination.StatePending} {
		jobID := job.NewID("job")
		newDelivery(t, b, d, jobID, st, &now)
		if err := b.s.DeleteDestination(b.ctx, d.ID); !errors.Is(err, problem.ErrConflict) {
			t.Fatalf("DeleteDestination with a %s delivery = %v; want ErrConflict", st, err)
		}
		if _, err := b.s.UpdateJobDelivery(b.ctx, jobID, func(dl *destination.Delivery) error {
			dl.State = destination.StateDelivered
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.s.DeleteDestination(b.ctx, d.ID); err != nil {
		t.Fatalf("DeleteDestination: %v", err)
	}
	if err := b.s.DeleteDestination(b.ctx, d.ID); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("DeleteDestination again = %v; want ErrNotFound", err)
	}
}

// TestDeliveryRoundTripAndConflict: a delivery reads back as written; a job has one at most.
func TestDeliveryRoundTripAndConflict(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	d := newDestination(t, b, "acc_a", "k1")
	dl := newDelivery(t, b, d, "job_1", destination.StateAwaiting, nil)
	got, err := b.s.GetJobDelivery(b.ctx, "job_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dl, got); diff != "" {
		t.Fatalf("GetJobDelivery (-want +got):\n%s", diff)
	}
	if err := b.s.CreateJobDelivery(b.ctx, dl); !errors.Is(err, problem.ErrConflict) {
		t.Fatalf("CreateJobDelivery twice = %v; want ErrConflict", err)
	}
	if _, err := b.s.GetJobDelivery(b.ctx, "job_2"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("GetJobDelivery(missing) = %v; want ErrNotFound", err)
	}
}

// TestUpdateDelivery: fn's change is written, files and error included; fn's error writes
// nothing; a missing delivery is not found.
func TestUpdateDelivery(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	d := newDestination(t, b, "acc_a", "k1")
	newDelivery(t, b, d, "job_1", destination.StatePending, &now)
	later := now.Add(time.Minute)
	want, err := b.s.UpdateJobDelivery(b.ctx, "job_1", func(dl *destination.Delivery) error {
		dl.State, dl.Attempts, dl.Round, dl.Error = destination.StateFailed, 3, 2, "1 file failed"
		dl.Files = []destination.File{{Name: "out.mp4", Key: "media/job_1/out.mp4", Size: 10, ETag: `"abc"`}, {Name: "b.png", Key: "k", Error: "denied"}}
		dl.NextAttemptAt, dl.UpdatedAt = nil, later
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := b.s.GetJobDelivery(b.ctx, "job_1")
	if diff := cmp.Diff(want, got); diff != "" || got.State != destination.StateFailed || len(got.Files) != 2 {
		t.Fatalf("after UpdateJobDelivery (-returned +read):\n%s", diff)
	}
	boom := errors.New("boom")
	if _, err := b.s.UpdateJobDelivery(b.ctx, "job_1", func(dl *destination.Delivery) error {
		dl.State = destination.StateDelivered
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("UpdateJobDelivery = %v; want fn's error", err)
	}
	if again, _ := b.s.GetJobDelivery(b.ctx, "job_1"); again.State != destination.StateFailed {
		t.Fatalf("state %s after a failed fn; want failed", again.State)
	}
	if _, err := b.s.UpdateJobDelivery(b.ctx, "job_2", func(*destination.Delivery) error { return nil }); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("UpdateJobDelivery(missing) = %v; want ErrNotFound", err)
	}
}

// TestClaimDueWithLease: only pending deliveries due by now are claimed, oldest due first, and a
// claimed one is not claimed again before its lease has passed.
func TestClaimDueWithLease(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	d := newDestination(t, b, "acc_a", "k1")
	early, late, future := now.Add(-2*time.Second), now.Add(-time.Second), now.Add(time.Hour)
	newDelivery(t, b, d, "job_late", destination.StatePending, &late)
	newDelivery(t, b, d, "job_early", destination.StatePending, &early)
	newDelivery(t, b, d, "job_future", destination.StatePending, &future)
	newDelivery(t, b, d, "job_awaiting", destination.StateAwaiting, &early)
	newDelivery(t, b, d, "job_failed", destination.StateFailed, &early)
	got, err := b.s.ClaimJobDeliveries(b.ctx, destination.ClaimParams{Limit: 10, Lease: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, dl := range got {
		ids = append(ids, dl.JobID)
	}
	if diff := cmp.Diff([]string{"job_early", "job_late"}, ids); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if again, _ := b.s.ClaimJobDeliveries(b.ctx, destination.ClaimParams{Limit: 10, Lease: time.Minute, Now: now.Add(30 * time.Second)}); len(again) != 0 {
		t.Fatalf("claimed %d again within the lease", len(again))
	}
	after, _ := b.s.ClaimJobDeliveries(b.ctx, destination.ClaimParams{Limit: 10, Lease: time.Minute, Now: now.Add(61 * time.Second)})
	if len(after) != 2 {
		t.Fatalf("claimed %d after the lease; want 2", len(after))
	}
}

// TestConcurrentClaimsShareNothing: concurrent claimers never get the same delivery.
func TestConcurrentClaimsShareNothing(t *testing.T, f Features, newStore Constructor) {
	b := setup(t, newStore)
	d := newDestination(t, b, "acc_a", "k1")
	const n = 20
	for i := range n {
		newDelivery(t, b, d, fmt.Sprint("job_", i), destination.StatePending, &now)
	}
	porttest.ClaimedOnceEach(t, n, 4, func() ([]string, error) {
		got, err := b.s.ClaimJobDeliveries(b.ctx, destination.ClaimParams{Limit: 3, Lease: time.Hour, Now: now})
		var ids []string
		for _, x := range got {
			ids = append(ids, x.JobID)
		}
		return ids, err
	})
}
