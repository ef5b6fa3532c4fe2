package jobtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Features says what a job.Store adapter can do. Every adapter (memory, SQLite, PostgreSQL) does
// all the suite asks, so it has no field yet: a new adapter passes every test, and a field is
// added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns an empty store of its own (its own database or schema), cleaned up by the
// adapter's test through t.Cleanup. Every store is also a job.Outbox, and tells the store the
// plans of accounts through CreateAccount.
type Constructor func(t *testing.T) job.Store

// TestStore runs the shared job.Store suite: each test below, in parallel, against stores that
// newStore makes. An adapter's own test calls it once per backend.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newStore Constructor){
		TestOutboxWrittenWithTheChange,
		TestUpdateManyIsOneChange,
		TestCreateGetRoundTrip,
		TestFullLifecycleRoundTrip,
		TestCreateDuplicateConflicts,
		TestMissingIsNotFound,
		TestUpdateErrorWritesNothing,
		TestUpdatesAreSerialised,
		TestWorkerAndUploadsRoundTrip,
		TestCancelBeatsDispatch,
		TestRequeuedJobAvoidsItsRunner,
		TestPartRetryKeptApart,
		TestListNewestFirstPagedAndFiltered,
		TestClaimOldestFirstByClassOnce,
		TestClaimSkipsAccountsAtTheirConcurrency,
		TestSplitPartsOutsideTheCap,
		TestConcurrentClaimersKeepTheCap,
		TestClaimByPriorityThenTurns,
		TestClaimsOfManyRotateAccounts,
		TestConcurrentClaimersKeepPriorityAndTurns,
		TestQueuePositionsAndReprioritise,
		TestExpiredLeases,
		TestSplitPartsHidden,
	}
	porttest.Run(t, f, newStore, tests...)
}

// base is the time the suite's jobs are made at.
var base = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TestOutboxWrittenWithTheChange: the messages a change emits are written with it and only with it,
// once per key, and are claimed under a lease, acknowledged and retried at the time set.
func TestOutboxWrittenWithTheChange(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	ob, ok := s.(job.Outbox)
	if !ok {
		t.Fatalf("%T is not a job.Outbox", s)
	}
	j := newJob(t, "acc_1", base, job.ClassCPU)
	mustCreate(t, s, j)

	// A failed change writes none of its messages.
	_, err := s.Update(ctx, j.ID, func(j *job.Job) error {
		j.Emit("events", "lost:"+j.ID, []byte(`{"n":0}`))
		return errors.New("abort")
	})
	if err == nil {
		t.Fatal("Update did not fail")
	}
	got, err := s.Update(ctx, j.ID, func(j *job.Job) error {
		j.Emit("events", "a:"+j.ID, []byte(`{"n":1}`))
		j.Emit("charges", "b:"+j.ID, []byte(`{"n":2}`))
		return j.Cancel(base.Add(time.Second))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Outbox) != 0 {
		t.Fatalf("Update returned the job with its outbox still set: %v", got.Outbox)
	}
	// The same key again is dropped: producers may emit twice.
	if _, err := s.Update(ctx, j.ID, func(j *job.Job) error {
		j.Emit("events", "a:"+j.ID, []byte(`{"n":99}`))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if stored, _ := s.Get(ctx, j.ID); len(stored.Outbox) != 0 {
		t.Fatal("Get returned outbox messages")
	}

	now := base.Add(time.Minute)
	msgs, err := ob.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	type brief struct{ Key, Topic, Payload string }
	var briefs []brief
	for _, m := range msgs {
		briefs = append(briefs, brief{m.Key, m.Topic, string(m.Payload)})
		if m.Attempts != 1 {
			t.Fatalf("first claim of %s has attempts %d", m.Key, m.Attempts)
		}
	}
	want := []brief{{"a:" + j.ID, "events", `{"n":1}`}, {"b:" + j.ID, "charges", `{"n":2}`}}
	if d := cmp.Diff(want, briefs); d != "" {
		t.Fatalf("claimed messages (-want +got):\n%s", d)
	}
	// Leased messages are not claimed again until the lease ends.
	if again, _ := ob.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now.Add(30 * time.Second)}); len(again) != 0 {
		t.Fatalf("leased messages claimed again: %d", len(again))
	}
	if err := ob.AckMessages(ctx, []string{"a:" + j.ID, "unknown"}); err != nil {
		t.Fatalf("ack of a claimed key and an unknown one: %v", err)
	}
	if err := ob.AckMessages(ctx, nil); err != nil {
		t.Fatalf("ack of no key: %v", err)
	}
	later, err := ob.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: now.Add(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 1 || later[0].Key != "b:"+j.ID || later[0].Attempts != 2 {
		t.Fatalf("after the lease: %+v", later)
	}
	// A failed handler's message comes back at the time RetryMessage sets, not before.
	retryAt := now.Add(2*time.Minute + 10*time.Second)
	if err := ob.RetryMessage(ctx, "b:"+j.ID, retryAt); err != nil {
		t.Fatal(err)
	}
	if err := ob.RetryMessage(ctx, "unknown", retryAt); err != nil {
		t.Fatalf("retry of an unknown key: %v", err)
	}
	if early, _ := ob.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: retryAt.Add(-time.Second)}); len(early) != 0 {
		t.Fatalf("a message came back before its retry time: %+v", early)
	}
	if back, _ := ob.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: retryAt}); len(back) != 1 || back[0].Attempts != 3 {
		t.Fatalf("at its retry time: %+v", back)
	}
}

// TestUpdateManyIsOneChange: UpdateMany changes every job or, on an error, none; a skipped job
// stays as it was, and the others' outbox messages are written.
func TestUpdateManyIsOneChange(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	ob, _ := s.(job.Outbox)
	var ids []string
	for range 5 {
		j := newJob(t, "acc_many", base, job.ClassCPU)
		mustCreate(t, s, j)
		ids = append(ids, j.ID)
	}
	all := append([]string{"job_missing"}, ids...)
	// An error on the fourth job writes nothing for any of them.
	boom := errors.New("boom")
	n := 0
	if _, err := s.UpdateMany(ctx, all, func(j *job.Job) error {
		if n++; n == 4 {
			return boom
		}
		return j.Cancel(base)
	}); !errors.Is(err, boom) {
		t.Fatalf("UpdateMany: %v, want boom", err)
	}
	for _, id := range ids {
		if j, _ := s.Get(ctx, id); j.Status != job.StatusWaiting {
			t.Fatalf("a failed UpdateMany changed %s to %s", id, j.Status)
		}
	}
	// Skipped jobs stay; the others change, with their outbox messages.
	got, err := s.UpdateMany(ctx, all, func(j *job.Job) error {
		if j.ID == ids[1] {
			return job.ErrSkip
		}
		j.Emit("events", "many:"+j.ID, []byte(`{}`))
		return j.Cancel(base.Add(time.Second))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].ID != ids[0] || got[1].ID != ids[2] || len(got[0].Outbox) != 0 {
		t.Fatalf("UpdateMany returned %d jobs: %v", len(got), got)
	}
	for i, id := range ids {
		j, _ := s.Get(ctx, id)
		want := job.StatusCancelled
		if i == 1 {
			want = job.StatusWaiting
		}
		if j.Status != want {
			t.Fatalf("job %d is %s, want %s", i, j.Status, want)
		}
	}
	if ob != nil {
		msgs, _ := ob.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 100, Lease: time.Minute, Now: base.Add(time.Hour)})
		seen := 0
		for _, m := range msgs {
			if strings.HasPrefix(m.Key, "many:") {
				seen++
			}
		}
		if seen != 4 {
			t.Fatalf("%d outbox messages of UpdateMany, want 4", seen)
		}
	}
}

// TestCreateGetRoundTrip: a created job reads back as it was written.
func TestCreateGetRoundTrip(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	j := newJob(t, "acc_1", base, job.ClassCPU)
	j.RetryOf = "job_previous"
	j.Pattern = job.PatternSet
	mustCreate(t, s, j)
	got, err := s.Get(ctx, j.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if d := cmp.Diff(j, got); d != "" {
		t.Fatalf("Get mismatch (-want +got):\n%s", d)
	}
}

// TestFullLifecycleRoundTrip: a job taken through dispatch, requeue, start, progress and failure,
// with its outputs, reads back as it was saved.
func TestFullLifecycleRoundTrip(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	j := newJob(t, "acc_1", base, job.ClassGPU)
	mustCreate(t, s, j)
	out, err := job.NewOutput([]job.File{
		{Path: "master.m3u8", Size: 120},
		{Path: "seg_000.ts", Size: 9000, Meta: &job.Meta{Format: "mpegts", Width: 320, Height: 240, DurationMs: 2000}},
	}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Update(ctx, j.ID, func(j *job.Job) error {
		// A first dispatch whose runner was lost before the compute began, then a second.
		if err := j.Dispatch(base, time.Minute); err != nil {
			return err
		}
		if err := j.Requeue(base.Add(500 * time.Millisecond)); err != nil {
			return err
		}
		if err := j.Dispatch(base.Add(time.Second), time.Minute); err != nil {
			return err
		}
		if err := j.Start(base.Add(2*time.Second), time.Minute); err != nil {
			return err
		}
		if err := j.Executing(base.Add(2500 * time.Millisecond)); err != nil {
			return err
		}
		if err := j.Heartbeat(base.Add(3*time.Second), time.Minute, 0.5); err != nil {
			return err
		}
		j.Cost = &job.Cost{Amount: 42, Currency: "credits", Formatted: "42 credits"}
		return j.Complete(base.Add(4*time.Second), out, 1234)
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	got, err := s.Get(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("stored job differs (-want +got):\n%s", d)
	}
	if got.Output.File == nil || got.Output.File.Path != "master.m3u8" || got.Output.Pattern() != job.PatternStream {
		t.Fatalf("output headline lost: %+v", got.Output)
	}
	if got.Requeues != 1 || got.Attempt != 2 || got.ExecStartedAt == nil || !got.ExecStartedAt.Equal(base.Add(2500*time.Millisecond)) {
		t.Fatalf("requeues %d, attempt %d, exec started %v", got.Requeues, got.Attempt, got.ExecStartedAt)
	}

	failed := newJob(t, "acc_1", base, job.ClassCPU)
	mustCreate(t, s, failed)
	want, err = s.Update(ctx, failed.ID, func(j *job.Job) error {
		_ = j.Dispatch(base, time.Minute)
		_ = j.Start(base, time.Minute)
		return j.Fail(base.Add(time.Second), job.NewError(problem.CodeRunnerError, "ffmpeg exited with status 1", []byte("Invalid data found\n")), 900)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, failed.ID)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("stored failed job differs (-want +got):\n%s", d)
	}
}

// TestCreateDuplicateConflicts: creating a job whose ID is taken fails with problem.ErrConflict.
func TestCreateDuplicateConflicts(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s := newStore(t)
	j := newJob(t, "acc_1", base, job.ClassCPU)
	mustCreate(t, s, j)
	if err := s.Create(context.Background(), j); !errors.Is(err, problem.ErrConflict) {
		t.Fatalf("second Create: got %v, want ErrConflict", err)
	}
}

// TestMissingIsNotFound: Get and Update of an unknown job fail with problem.ErrNotFound.
func TestMissingIsNotFound(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	if _, err := s.Get(ctx, "job_missing"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("Get: got %v, want ErrNotFound", err)
	}
	_, err := s.Update(ctx, "job_missing", func(*job.Job) error { return nil })
	if !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("Update: got %v, want ErrNotFound", err)
	}
}

// TestUpdateErrorWritesNothing: an Update whose function fails leaves the stored job as it was.
func TestUpdateErrorWritesNothing(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	j := newJob(t, "acc_1", base, job.ClassCPU)
	mustCreate(t, s, j)
	boom := errors.New("boom")
	_, err := s.Update(ctx, j.ID, func(j *job.Job) error {
		j.Progress = 0.9
		j.RetryOf = "job_changed"
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update: got %v, want boom", err)
	}
	_, err = s.Update(ctx, j.ID, func(j *job.Job) error { return j.Start(base, time.Minute) })
	if !errors.Is(err, job.ErrIllegalTransition) {
		t.Fatalf("waiting → running: got %v, want ErrIllegalTransition", err)
	}
	got, _ := s.Get(ctx, j.ID)
	if d := cmp.Diff(j, got); d != "" {
		t.Fatalf("a failed Update changed the job (-want +got):\n%s", d)
	}
}

// TestUpdatesAreSerialised: concurrent Updates of one job each see the last one's change: none is
// lost.
func TestUpdatesAreSerialised(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	j := newJob(t, "acc_1", base, job.ClassCPU)
	mustCreate(t, s, j)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Update(ctx, j.ID, func(j *job.Job) error { j.Attempt++; return nil })
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Update: %v", err)
		}
	}
	got, _ := s.Get(ctx, j.ID)
	if got.Attempt != n {
		t.Fatalf("Attempt = %d after %d concurrent increments: an update was lost", got.Attempt, n)
	}
}

// TestWorkerAndUploadsRoundTrip: a claim records its worker; the worker's jobs are found while
// dispatched or running, and
// the files stored under the attempt come back as written.
func TestWorkerAndUploadsRoundTrip(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	a, b := newJob(t, "acc_1", base, job.ClassCPU), newJob(t, "acc_1", base.Add(time.Second), job.ClassCPU)
	mustCreate(t, s, a)
	mustCreate(t, s, b)
	claimed, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: base, Worker: "wkr_1", Runner: "wkr_1/a"})
	if err != nil || len(claimed) != 1 || claimed[0].Worker != "wkr_1" {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if _, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: base, Worker: "wkr_2", Runner: "wkr_2/a"}); err != nil {
		t.Fatal(err)
	}
	ups := []job.Upload{{Name: "out.mp4", Size: 12}, {Name: "seg_001.ts", Size: 3}}
	if _, err := s.Update(ctx, a.ID, func(j *job.Job) error { j.Uploads = ups; return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, a.ID)
	if err != nil || got.Worker != "wkr_1" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if d := cmp.Diff(ups, got.Uploads); d != "" {
		t.Fatalf("uploads (-want +got):\n%s", d)
	}
	if held, err := s.HeldBy(ctx, "wkr_1", 10); err != nil || len(held) != 1 || held[0] != a.ID {
		t.Fatalf("held by wkr_1: %v %v", held, err)
	}
	for runner, want := range map[string][]string{"wkr_1/a": {a.ID}, "wkr_2/a": {b.ID}, "wkr_1/b": nil} {
		if held, err := s.HeldByRunner(ctx, runner, 10); err != nil || !slices.Equal(held, want) {
			t.Fatalf("held by runner %s: %v %v, want %v", runner, held, err, want)
		}
	}
	if _, err := s.Update(ctx, a.ID, func(j *job.Job) error { return j.Requeue(base) }); err != nil {
		t.Fatal(err)
	}
	if held, err := s.HeldBy(ctx, "wkr_1", 10); err != nil || len(held) != 0 {
		t.Fatalf("held by wkr_1 after a requeue: %v %v", held, err)
	}
	if held, err := s.HeldByRunner(ctx, "wkr_1/a", 10); err != nil || len(held) != 0 {
		t.Fatalf("held by runner wkr_1/a after a requeue: %v %v", held, err)
	}
	if got, _ := s.Get(ctx, a.ID); got.Worker != "" || got.Uploads != nil {
		t.Fatalf("a requeued job keeps %q %v", got.Worker, got.Uploads)
	}
}

// TestPartRetryKeptApart: a split job's part retried after a failure keeps its retry count
// apart from its requeues, as stored; a second retry is refused.
func TestPartRetryKeptApart(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	parent, part := newJob(t, "acc_1", base, job.ClassCPU), newJob(t, "acc_1", base, job.ClassCPU)
	part.ParentID = parent.ID
	mustCreate(t, s, parent)
	mustCreate(t, s, part)
	for i := range 2 {
		got, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 2, Lease: time.Minute, Now: base.Add(time.Duration(i) * time.Minute), Worker: "wkr_env", Runner: "wkr_env/a"})
		if err != nil || !slices.ContainsFunc(got, func(j *job.Job) bool { return j.ID == part.ID }) {
			t.Fatalf("claim %d: %v, %v; want the part", i+1, got, err)
		}
		_, err = s.Update(ctx, part.ID, func(j *job.Job) error { return j.RetryPart(base.Add(time.Duration(i)*time.Minute + time.Second)) })
		if i == 0 && err != nil {
			t.Fatal(err)
		}
		if i == 1 && !errors.Is(err, job.ErrIllegalTransition) {
			t.Fatalf("a second retry: %v, want refused", err)
		}
		got1, err := s.Get(ctx, part.ID)
		if err != nil || got1.Retries != 1 || got1.Requeues != 0 {
			t.Fatalf("after retry %d: %+v, %v; want 1 retry, no requeue", i+1, got1, err)
		}
		if i == 0 && got1.Status != job.StatusWaiting {
			t.Fatalf("retried part is %s, want waiting", got1.Status)
		}
	}
}

// TestRequeuedJobAvoidsItsRunner: a requeued job is not claimed by the runner whose attempt
// ended until job.RetryElsewhereFor has passed, while another runner claims it at once; the
// younger jobs of the same account behind it stay claimable by the avoided runner.
func TestRequeuedJobAvoidsItsRunner(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	j, later := newJob(t, "acc_1", base, job.ClassCPU), newJob(t, "acc_1", base.Add(time.Second), job.ClassCPU)
	mustCreate(t, s, j)
	claim := func(runner string, now time.Time) []*job.Job {
		t.Helper()
		got, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: now, Worker: "wkr_env", Runner: runner})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := claim("wkr_env/a", base); len(got) != 1 || got[0].Runner != "wkr_env/a" {
		t.Fatalf("first claim: %+v", got)
	}
	requeued := base.Add(time.Second)
	if _, err := s.Update(ctx, j.ID, func(j *job.Job) error { return j.Requeue(requeued) }); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, j.ID)
	if got.Runner != "" || got.Avoid != "wkr_env/a" || got.AvoidUntil == nil || !got.AvoidUntil.Equal(requeued.Add(job.RetryElsewhereFor)) {
		t.Fatalf("requeued: runner %q, avoid %q until %v", got.Runner, got.Avoid, got.AvoidUntil)
	}
	mustCreate(t, s, later)
	if got := claim("wkr_env/a", requeued); len(got) != 1 || got[0].ID != later.ID {
		t.Fatalf("the avoided runner claimed %+v, want the younger job only", got)
	}
	if _, err := s.Update(ctx, later.ID, func(j *job.Job) error { return j.Requeue(requeued) }); err != nil {
		t.Fatal(err)
	}
	if got := claim("wkr_env/a", requeued.Add(job.RetryElsewhereFor-time.Millisecond)); len(got) != 0 {
		t.Fatalf("the avoided runner claimed %s before the time was up", got[0].ID)
	}
	if got := claim("wkr_env/b", requeued); len(got) != 1 || got[0].ID != j.ID || got[0].Avoid != "" {
		t.Fatalf("another runner claimed %+v, want %s, no longer avoiding", got, j.ID)
	}
	if got := claim("wkr_env/a", requeued.Add(job.RetryElsewhereFor)); len(got) != 1 || got[0].ID != later.ID {
		t.Fatalf("once the time was up the avoided runner claimed %+v, want %s", got, later.ID)
	}
}

// TestCancelBeatsDispatch: a cancelled job is not claimed.
func TestCancelBeatsDispatch(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	j := newJob(t, "acc_1", base, job.ClassCPU)
	mustCreate(t, s, j)
	if _, err := s.Update(ctx, j.ID, func(j *job.Job) error { return j.Cancel(base) }); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 10, Lease: time.Minute, Now: base})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 0 {
		t.Fatalf("claimed a cancelled job: %v", ids(claimed))
	}
}

// TestListNewestFirstPagedAndFiltered: List returns an account's jobs newest first, in stable
// pages, filtered by status and type.
func TestListNewestFirstPagedAndFiltered(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	var want []string
	for i := range 7 {
		j := newJob(t, "acc_a", base.Add(time.Duration(i)*time.Second), job.ClassCPU)
		if i%2 == 1 {
			j.Type = "extract.metadata"
		}
		mustCreate(t, s, j)
		want = append([]string{j.ID}, want...)
	}
	// Two jobs in the same microsecond still page in a stable order.
	same := []*job.Job{newJob(t, "acc_a", base.Add(time.Hour), job.ClassCPU), newJob(t, "acc_a", base.Add(time.Hour), job.ClassCPU)}
	for _, j := range same {
		mustCreate(t, s, j)
	}
	if same[0].ID < same[1].ID {
		want = append([]string{same[1].ID, same[0].ID}, want...)
	} else {
		want = append([]string{same[0].ID, same[1].ID}, want...)
	}
	mustCreate(t, s, newJob(t, "acc_b", base, job.ClassCPU))

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		page, err := s.List(ctx, job.ListParams{AccountID: "acc_a", Cursor: cursor, Limit: 3})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Jobs) > 3 {
			t.Fatalf("page of %d jobs over limit 3", len(page.Jobs))
		}
		got = append(got, ids(page.Jobs)...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("listing (-want +got):\n%s", d)
	}

	page, err := s.List(ctx, job.ListParams{AccountID: "acc_a", Type: "extract.metadata"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 3 {
		t.Fatalf("type filter: %d jobs, want 3", len(page.Jobs))
	}
	if _, err := s.Update(ctx, want[0], func(j *job.Job) error { return j.Cancel(base) }); err != nil {
		t.Fatal(err)
	}
	page, err = s.List(ctx, job.ListParams{AccountID: "acc_a", Status: job.StatusCancelled})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{want[0]}, ids(page.Jobs)); d != "" {
		t.Fatalf("status filter (-want +got):\n%s", d)
	}
	page, err = s.List(ctx, job.ListParams{AccountID: "acc_nobody"})
	if err != nil || len(page.Jobs) != 0 || page.NextCursor != "" {
		t.Fatalf("another account's listing: %v, %v", ids(page.Jobs), err)
	}
	_, err = s.List(ctx, job.ListParams{AccountID: "acc_a", Cursor: "not-a-cursor"})
	if problem.CodeOf(err) != problem.CodeValidation {
		t.Fatalf("bad cursor: got %v, want VALIDATION_ERROR", err)
	}
}

// TestClaimOldestFirstByClassOnce: Claim hands out the oldest waiting jobs of its class, each once,
// up to its limit.
func TestClaimOldestFirstByClassOnce(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	var cpu []string
	for i := range 6 {
		j := newJob(t, "acc_1", base.Add(time.Duration(i)*time.Second), job.ClassCPU)
		mustCreate(t, s, j)
		cpu = append(cpu, j.ID)
	}
	gpu := newJob(t, "acc_1", base, job.ClassGPU)
	mustCreate(t, s, gpu)

	first, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 2, Lease: time.Minute, Now: base})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(cpu[:2], ids(first)); d != "" {
		t.Fatalf("claim order (-want +got):\n%s", d)
	}
	for _, j := range first {
		if j.Status != job.StatusDispatched || j.LeaseUntil == nil || !j.LeaseUntil.Equal(base.Add(time.Minute)) || j.Attempt != 1 {
			t.Fatalf("claimed job not dispatched with its lease: %+v", j)
		}
	}

	// Concurrent claimers share the rest without overlap.
	var (
		mu      sync.Mutex
		claimed = map[string]int{}
		wg      sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 2, Lease: time.Minute, Now: base})
			if err != nil {
				t.Errorf("Claim: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, j := range js {
				claimed[j.ID]++
			}
		}()
	}
	wg.Wait()
	if len(claimed) != 4 {
		t.Fatalf("concurrent claims took %d jobs, want the 4 left: %v", len(claimed), claimed)
	}
	for id, n := range claimed {
		if n != 1 {
			t.Fatalf("job %s claimed %d times", id, n)
		}
	}
	g, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassGPU, Limit: 5, Lease: time.Minute, Now: base})
	if err != nil || len(g) != 1 || g[0].ID != gpu.ID {
		t.Fatalf("gpu claim: %v, %v", ids(g), err)
	}
}

// TestExpiredLeases: Expired finds the claimed jobs whose lease has lapsed, not a live or an ended
// one.
func TestExpiredLeases(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	for range 3 {
		mustCreate(t, s, newJob(t, "acc_1", base, job.ClassCPU))
	}
	claimed, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 3, Lease: time.Minute, Now: base})
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %v %v", ids(claimed), err)
	}
	// One runner keeps its lease alive; another finishes.
	if _, err := s.Update(ctx, claimed[0].ID, func(j *job.Job) error { return j.Start(base.Add(50*time.Second), time.Minute) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, claimed[1].ID, func(j *job.Job) error { return j.Cancel(base) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Expired(ctx, base.Add(61*time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{claimed[2].ID}, got); d != "" {
		t.Fatalf("expired (-want +got):\n%s", d)
	}
	if got, _ := s.Expired(ctx, base.Add(30*time.Second), 10); len(got) != 0 {
		t.Fatalf("leases expired early: %v", got)
	}
}

// TestSplitPartsHidden: a split job's plan and its parts' parent read back as saved; the parts
// are claimed as any job, but neither listed nor shown in the account's queue.
func TestSplitPartsHidden(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	parent := newJob(t, "acc_split", base, job.ClassCPU)
	parent.Split = &job.Split{Parts: []job.SplitPart{{JobID: "job_p1", Name: "split_part_001.mp4", Start: 0, End: 2.5}},
		Around: job.Around{Audio: []string{"-i", "in.mp4", "a.mp4"}, AudioName: "a.mp4", ListName: "l.txt", List: "file 'split_part_001.mp4'\n", Join: []string{"-f", "concat"}}}
	mustCreate(t, s, parent)
	part := newJob(t, "acc_split", base.Add(time.Second), job.ClassCPU)
	part.ParentID = parent.ID
	mustCreate(t, s, part)
	for _, j := range []*job.Job{parent, part} {
		got, err := s.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(j, got); d != "" {
			t.Fatalf("Get mismatch (-want +got):\n%s", d)
		}
	}
	page, err := s.List(ctx, job.ListParams{AccountID: "acc_split"})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{parent.ID}, ids(page.Jobs)); d != "" {
		t.Fatalf("listed (-want +got):\n%s", d)
	}
	q, err := s.Queue(ctx, job.QueueParams{AccountID: "acc_split", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 1 || q[0].Job.ID != parent.ID {
		t.Fatalf("queue shows %d jobs, want the parent alone", len(q))
	}
	claimed, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 10, Lease: time.Minute, Now: base.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 2 {
		t.Fatalf("claimed %d jobs, want the parent and its part", len(claimed))
	}
}

var seq struct {
	sync.Mutex
	n int
}

func newJob(t *testing.T, account string, at time.Time, class job.Class) *job.Job {
	t.Helper()
	seq.Lock()
	seq.n++
	n := seq.n
	seq.Unlock()
	j, err := job.New(job.NewParams{
		ID: job.NewID("job"), AccountID: account, Type: "ffmpeg",
		Inputs: json.RawMessage(`{"a.srt":{"content":"1"}}`),
		Params: json.RawMessage(fmt.Sprintf(`{"command":"ffmpeg -f lavfi -i testsrc out%d.mp4"}`, n)),
		Class:  class, Timeout: 120 * time.Second, Now: at,
	})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func mustCreate(t *testing.T, s job.Store, j *job.Job) {
	t.Helper()
	if err := s.Create(context.Background(), j); err != nil {
		t.Fatalf("Create: %v", err)
	}
}

func ids(js []*job.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}
