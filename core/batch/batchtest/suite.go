package batchtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Stores is what the suite needs of an adapter: batches, the jobs they hold, and the outbox
// that CountJob writes to.
type Stores interface {
	batch.Store
	job.Store
	job.Outbox
}

// Features says what a batch.Store adapter can do. Every adapter (memory, SQLite, PostgreSQL)
// does all the suite asks, so it has no field yet: a new adapter passes every test, and a field
// is added here only when a real adapter cannot do something the others can.
type Features struct{}

// Constructor returns an empty store of its own, cleaned up by the adapter's test.
type Constructor func(t *testing.T) Stores

// TestStore runs the shared batch.Store suite: each test below, in parallel, against stores that
// newStore makes. An adapter's own test calls it once per backend.
func TestStore(t *testing.T, f Features, newStore Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newStore Constructor){
		TestCreateBatchSavesTheBatchAndItsJobs,
		TestCreateBatchIsAllOrNothing,
		TestCountJobOncePerJob,
		TestConcurrentCountsCountEachJobOnce,
		TestListNewestFirstByAccount,
	}
	porttest.Run(t, f, newStore, tests...)
}

// base is the time the suite's batches are made at.
var base = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// ignoreOutbox compares batches without the outbox messages a store does not return.
var ignoreOutbox = cmpopts.IgnoreFields(batch.Batch{}, "Outbox")

// TestCreateBatchSavesTheBatchAndItsJobs: CreateBatch saves the batch and each of its jobs, and
// they read back as written.
func TestCreateBatchSavesTheBatchAndItsJobs(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	b, jobs := newBatch(t, "acc_1", base, 3)
	if err := s.CreateBatch(ctx, b, jobs); err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	got, err := s.GetBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(b, got, ignoreOutbox); d != "" {
		t.Fatalf("GetBatch (-want +got):\n%s", d)
	}
	for _, j := range jobs {
		stored, err := s.Get(ctx, j.ID)
		if err != nil {
			t.Fatalf("job %s of the batch: %v", j.ID, err)
		}
		if stored.BatchID != b.ID || stored.Status != job.StatusWaiting {
			t.Fatalf("job %s: batch %q status %s; want %s waiting", j.ID, stored.BatchID, stored.Status, b.ID)
		}
	}
	if _, err := s.GetBatch(ctx, "bat_missing"); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("GetBatch of a missing batch: %v, want ErrNotFound", err)
	}
}

// TestCreateBatchIsAllOrNothing: a CreateBatch refused for a taken job or batch ID stores nothing
// of the batch.
func TestCreateBatchIsAllOrNothing(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	taken, _ := newBatch(t, "acc_1", base, 1)
	_, one := newBatch(t, "acc_1", base, 1)
	if err := s.Create(ctx, one[0]); err != nil {
		t.Fatal(err)
	}
	// The third job's ID is taken: nothing of the batch may remain.
	b, jobs := newBatch(t, "acc_1", base, 3)
	jobs[2] = one[0].Clone()
	jobs[2].BatchID = b.ID
	b.JobIDs[2] = jobs[2].ID
	if err := s.CreateBatch(ctx, b, jobs); !errors.Is(err, problem.ErrConflict) {
		t.Fatalf("CreateBatch with a taken job ID: %v, want ErrConflict", err)
	}
	if _, err := s.GetBatch(ctx, b.ID); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("the refused batch was stored: %v", err)
	}
	for _, j := range jobs[:2] {
		if _, err := s.Get(ctx, j.ID); !errors.Is(err, problem.ErrNotFound) {
			t.Fatalf("job %s of the refused batch was stored: %v", j.ID, err)
		}
	}
	// A taken batch ID is refused too, and its jobs are not stored.
	if err := s.CreateBatch(ctx, taken, nil); err != nil {
		t.Fatalf("CreateBatch: %v", err)
	}
	_, more := newBatch(t, "acc_1", base, 1)
	again := taken.Clone()
	again.JobIDs, more[0].BatchID = []string{more[0].ID}, again.ID
	if err := s.CreateBatch(ctx, again, more); !errors.Is(err, problem.ErrConflict) {
		t.Fatalf("CreateBatch with a taken batch ID: %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, more[0].ID); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("job %s of the refused batch was stored: %v", more[0].ID, err)
	}
}

// TestCountJobOncePerJob: CountJob counts each job of a batch once, writes nothing when its
// function fails, and writes the outbox messages of the count that finishes the batch; a missing
// batch is not found.
func TestCountJobOncePerJob(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	b, jobs := newBatch(t, "acc_1", base, 3)
	if err := s.CreateBatch(ctx, b, jobs); err != nil {
		t.Fatal(err)
	}
	count := func(jobID string, st job.Status, at time.Time) (bool, int) {
		t.Helper()
		calls := 0
		counted, err := s.CountJob(ctx, b.ID, jobID, func(b *batch.Batch) error {
			calls++
			done, err := b.Count(st, at)
			if done {
				b.Emit("events", "done:"+b.ID, []byte(`{"done":true}`))
			}
			return err
		})
		if err != nil {
			t.Fatalf("CountJob %s: %v", jobID, err)
		}
		return counted, calls
	}
	at := base.Add(time.Minute)
	if counted, calls := count(jobs[0].ID, job.StatusComplete, at); !counted || calls != 1 {
		t.Fatalf("first count: counted %v, fn called %d times", counted, calls)
	}
	if counted, calls := count(jobs[0].ID, job.StatusComplete, at); counted || calls != 0 {
		t.Fatalf("second count of one job: counted %v, fn called %d times", counted, calls)
	}
	// A change whose fn fails writes nothing: the job can be counted later.
	if _, err := s.CountJob(ctx, b.ID, jobs[1].ID, func(*batch.Batch) error { return errors.New("abort") }); err == nil {
		t.Fatal("CountJob did not return fn's error")
	}
	count(jobs[1].ID, job.StatusFailed, at)
	count(jobs[2].ID, job.StatusCancelled, at.Add(time.Second))
	count(jobs[2].ID, job.StatusCancelled, at.Add(time.Hour))

	got, err := s.GetBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := at.Add(time.Second)
	want := b.Clone()
	want.Status, want.Succeeded, want.Failed, want.Cancelled = batch.StatusComplete, 1, 1, 1
	want.UpdatedAt, want.CompletedAt = done, &done
	if d := cmp.Diff(want, got, ignoreOutbox); d != "" {
		t.Fatalf("batch after counting (-want +got):\n%s", d)
	}
	msgs, err := s.ClaimMessages(ctx, job.ClaimMessagesParams{Limit: 10, Lease: time.Minute, Now: base.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range msgs {
		keys = append(keys, m.Key)
	}
	if d := cmp.Diff([]string{"done:" + b.ID}, keys); d != "" {
		t.Fatalf("outbox after counting (-want +got):\n%s", d)
	}
	if _, err := s.CountJob(ctx, "bat_missing", jobs[0].ID, func(*batch.Batch) error { return nil }); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("CountJob of a missing batch: %v, want ErrNotFound", err)
	}
}

// TestConcurrentCountsCountEachJobOnce: each job counted twice at once is counted once, and the
// batch completes once.
func TestConcurrentCountsCountEachJobOnce(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	const n = 20
	b, jobs := newBatch(t, "acc_1", base, n)
	if err := s.CreateBatch(ctx, b, jobs); err != nil {
		t.Fatal(err)
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		completed int
	)
	for _, j := range jobs {
		for range 2 {
			wg.Go(func() {
				_, err := s.CountJob(ctx, b.ID, j.ID, func(b *batch.Batch) error {
					done, err := b.Count(job.StatusComplete, base.Add(time.Minute))
					if done {
						mu.Lock()
						completed++
						mu.Unlock()
					}
					return err
				})
				if err != nil {
					t.Errorf("CountJob %s: %v", j.ID, err)
				}
			})
		}
	}
	wg.Wait()
	got, err := s.GetBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Succeeded != n || got.Status != batch.StatusComplete || completed != 1 {
		t.Fatalf("after %d jobs counted twice each: succeeded %d, status %s, completed %d times", n, got.Succeeded, got.Status, completed)
	}
}

// TestListNewestFirstByAccount: ListBatches pages through an account's batches newest first, the ID
// breaking ties, and refuses a bad cursor.
func TestListNewestFirstByAccount(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	var want []string
	for i := range 5 {
		// Two batches share each instant, so the ID breaks the tie.
		b, jobs := newBatch(t, "acc_1", base.Add(time.Duration(i/2)*time.Second), 1)
		if err := s.CreateBatch(ctx, b, jobs); err != nil {
			t.Fatal(err)
		}
		want = append(want, b.ID)
	}
	other, jobs := newBatch(t, "acc_2", base, 1)
	if err := s.CreateBatch(ctx, other, jobs); err != nil {
		t.Fatal(err)
	}
	all, err := s.ListBatches(ctx, batch.ListParams{AccountID: "acc_1", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := make([]string, len(all.Batches))
	for i, b := range all.Batches {
		wantOrder[i] = b.ID
	}
	// Newest first by (createdAt, id).
	for i := 1; i < len(all.Batches); i++ {
		prev, cur := all.Batches[i-1], all.Batches[i]
		if !cur.Before(prev.CreatedAt, prev.ID) {
			t.Fatalf("listing is not newest first at %d: %s then %s", i, prev.ID, cur.ID)
		}
	}
	if len(all.Batches) != len(want) || all.NextCursor != "" {
		t.Fatalf("listing has %d batches and cursor %q; want %d and none", len(all.Batches), all.NextCursor, len(want))
	}
	var paged []string
	cursor := ""
	for range 10 {
		page, err := s.ListBatches(ctx, batch.ListParams{AccountID: "acc_1", Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Batches {
			paged = append(paged, b.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if d := cmp.Diff(wantOrder, paged); d != "" {
		t.Fatalf("pages (-want +got):\n%s", d)
	}
	if _, err := s.ListBatches(ctx, batch.ListParams{AccountID: "acc_1", Cursor: "nope"}); problem.CodeOf(err) != problem.CodeValidation {
		t.Fatalf("a bad cursor: %v, want VALIDATION_ERROR", err)
	}
}

// newBatch returns a batch of n new jobs of account, created at at.
func newBatch(t *testing.T, account string, at time.Time, n int) (*batch.Batch, []*job.Job) {
	t.Helper()
	id := job.NewID("bat")
	jobs := make([]*job.Job, n)
	ids := make([]string, n)
	for i := range jobs {
		j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: account, Type: "ffmpeg", Class: job.ClassCPU,
			Params: []byte(fmt.Sprintf(`{"command":"ffmpeg -i in%d.mp4 out.mp4"}`, i)), BatchID: id, Now: at})
		if err != nil {
			t.Fatal(err)
		}
		jobs[i], ids[i] = j, j.ID
	}
	b, err := batch.New(id, account, ids, at)
	if err != nil {
		t.Fatal(err)
	}
	return b, jobs
}
