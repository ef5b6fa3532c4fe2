package jobtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
)

// prioritised is a new job of the class at base+at with the priority.
func prioritised(t *testing.T, s job.Store, account string, at time.Duration, p job.Priority, class job.Class) string {
	t.Helper()
	j := newJob(t, account, base.Add(at), class)
	j.Priority = p
	mustCreate(t, s, j)
	return j.ID
}

// TestClaimByPriorityThenTurns: Claim hands out high before normal before low, and within a
// priority the accounts take turns, the one served least recently first, so a newer account's
// single job waits behind one job of the account with a backlog, not behind the backlog; a
// claim of many and claims of one give the same order.
func TestClaimByPriorityThenTurns(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	for _, step := range []int{1, 20} {
		s, ctx := newStore(t), context.Background()
		var a []string
		for i := range 5 {
			a = append(a, prioritised(t, s, "acc_a", time.Duration(i)*time.Second, job.PriorityNormal, job.ClassCPU))
		}
		low := prioritised(t, s, "acc_d", 0, job.PriorityLow, job.ClassCPU)
		b := prioritised(t, s, "acc_b", 10*time.Second, job.PriorityNormal, job.ClassCPU)
		high := prioritised(t, s, "acc_c", 20*time.Second, job.PriorityHigh, job.ClassCPU)
		prioritised(t, s, "acc_c", 0, job.PriorityHigh, job.ClassGPU)

		var got []string
		for i := 0; ; i++ {
			js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: step, Lease: time.Minute, Now: base.Add(time.Minute + time.Duration(i)*time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			if len(js) == 0 {
				break
			}
			got = append(got, ids(js)...)
		}
		want := []string{high, a[0], b, a[1], a[2], a[3], a[4], low}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("claims of %d: order (-want +got):\n%s", step, d)
		}
	}

	// An account served before takes its turn after one never served, and before one served later.
	s, ctx := newStore(t), context.Background()
	claimOne := func(at time.Duration) string {
		t.Helper()
		js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: base.Add(at)})
		if err != nil || len(js) != 1 {
			t.Fatalf("claim: %v %v", ids(js), err)
		}
		return js[0].ID
	}
	prioritised(t, s, "acc_a", 0, job.PriorityNormal, job.ClassCPU)
	prioritised(t, s, "acc_b", time.Second, job.PriorityNormal, job.ClassCPU)
	claimOne(time.Minute)     // acc_a's, served at 1m
	claimOne(2 * time.Minute) // acc_b's, served at 2m
	a2 := prioritised(t, s, "acc_a", 3*time.Minute, job.PriorityNormal, job.ClassCPU)
	b2 := prioritised(t, s, "acc_b", 2*time.Minute, job.PriorityNormal, job.ClassCPU)
	c := prioritised(t, s, "acc_c", 4*time.Minute, job.PriorityNormal, job.ClassCPU)
	got := []string{claimOne(5 * time.Minute), claimOne(6 * time.Minute), claimOne(7 * time.Minute)}
	if d := cmp.Diff([]string{c, a2, b2}, got); d != "" {
		t.Fatalf("turns by service (-want +got):\n%s", d)
	}
}

// TestClaimsOfManyRotateAccounts: the accounts served by one claim are served in its order,
// not all at one instant, so the next claim's turn goes to the one served first: claims of two
// among three accounts (the first with the oldest jobs) serve each in turn, as claims of one
// do, instead of the oldest account in every claim, on a tie of served broken by age.
func TestClaimsOfManyRotateAccounts(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	for _, step := range []int{1, 2} {
		s, ctx := newStore(t), context.Background()
		jobs := map[string][]string{}
		for i, acc := range []string{"acc_a", "acc_b", "acc_c"} {
			for k := range 4 {
				jobs[acc] = append(jobs[acc], prioritised(t, s, acc, time.Duration(i*10+k)*time.Second, job.PriorityNormal, job.ClassCPU))
			}
		}
		var got []string
		for i := 0; len(got) < 8; i++ {
			js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: step, Lease: time.Minute, Now: base.Add(time.Hour + time.Duration(i)*time.Minute)})
			if err != nil || len(js) != step {
				t.Fatalf("claim of %d: %v %v", step, ids(js), err)
			}
			got = append(got, ids(js)...)
		}
		a, b, c := jobs["acc_a"], jobs["acc_b"], jobs["acc_c"]
		want := []string{a[0], b[0], c[0], a[1], b[1], c[1], a[2], b[2]}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("claims of %d: order (-want +got):\n%s", step, d)
		}
	}
}

// TestConcurrentClaimersKeepPriorityAndTurns: claimers at once still hand out the high job in
// their first round and the other account's single job in their second, each job once.
func TestConcurrentClaimersKeepPriorityAndTurns(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	const claimers, backlog = 4, 24
	for i := range backlog {
		prioritised(t, s, "acc_a", time.Duration(i)*time.Millisecond, job.PriorityNormal, job.ClassCPU)
	}
	b := prioritised(t, s, "acc_b", time.Second, job.PriorityNormal, job.ClassCPU)
	high := prioritised(t, s, "acc_c", 2*time.Second, job.PriorityHigh, job.ClassCPU)
	var (
		mu    sync.Mutex
		order = map[string]int{}
		n     atomic.Int64
		wg    sync.WaitGroup
	)
	for range claimers {
		wg.Go(func() {
			for {
				i := n.Add(1)
				js, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 1, Lease: time.Minute, Now: base.Add(time.Minute + time.Duration(i)*time.Millisecond)})
				if err != nil {
					t.Error(err)
					return
				}
				if len(js) == 0 {
					return
				}
				mu.Lock()
				if _, twice := order[js[0].ID]; twice {
					t.Errorf("job %s claimed twice", js[0].ID)
				}
				order[js[0].ID] = int(i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(order) != backlog+2 {
		t.Fatalf("claimed %d jobs, want %d", len(order), backlog+2)
	}
	// The i-th claim started before the (i+claimers)-th: a job among the first k in order is
	// taken by one of the first k+claimers-1 claims.
	if order[high] > claimers {
		t.Errorf("the high job was the %d-th claim, want within the first %d", order[high], claimers)
	}
	if order[b] > 2+claimers {
		t.Errorf("acc_b's job was the %d-th claim, want within the first %d", order[b], 2+claimers)
	}
}

// TestQueuePositionsAndReprioritise: Queue gives an account's waiting jobs in claim order with
// their positions among every account's waiting jobs of the class, and a priority changed
// through Update moves the job.
func TestQueuePositionsAndReprioritise(t *testing.T, f Features, newStore Constructor) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	var a, b []string
	for i := range 3 {
		a = append(a, prioritised(t, s, "acc_a", time.Duration(i)*time.Second, job.PriorityNormal, job.ClassCPU))
		b = append(b, prioritised(t, s, "acc_b", time.Duration(10+i)*time.Second, job.PriorityNormal, job.ClassCPU))
	}
	ah := prioritised(t, s, "acc_a", time.Minute, job.PriorityHigh, job.ClassCPU)
	gpu := prioritised(t, s, "acc_a", 0, job.PriorityLow, job.ClassGPU)
	prioritised(t, s, "acc_b", time.Second, job.PriorityLow, job.ClassGPU)
	type entry struct {
		ID       string
		Position int
		Priority job.Priority
	}
	queue := func(account string, limit int) []entry {
		t.Helper()
		q, err := s.Queue(ctx, job.QueueParams{AccountID: account, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		out := []entry{}
		for _, e := range q {
			if e.Job.AccountID != account || e.Job.Status != job.StatusWaiting {
				t.Fatalf("queue of %s holds %+v", account, e.Job)
			}
			out = append(out, entry{e.Job.ID, e.Position, e.Job.Priority})
		}
		return out
	}
	n, h, l := job.PriorityNormal, job.PriorityHigh, job.PriorityLow
	want := []entry{{ah, 1, h}, {a[0], 2, n}, {a[1], 4, n}, {a[2], 6, n}, {gpu, 1, l}}
	if d := cmp.Diff(want, queue("acc_a", 0)); d != "" {
		t.Fatalf("queue of acc_a (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want[:2], queue("acc_a", 2)); d != "" {
		t.Fatalf("queue of acc_a, 2 (-want +got):\n%s", d)
	}
	if _, err := s.Update(ctx, a[2], func(j *job.Job) error { return j.Reprioritise(job.PriorityHigh, base) }); err != nil {
		t.Fatal(err)
	}
	want = []entry{{a[2], 1, h}, {ah, 2, h}, {a[0], 3, n}, {a[1], 5, n}, {gpu, 1, l}}
	if d := cmp.Diff(want, queue("acc_a", 0)); d != "" {
		t.Fatalf("queue of acc_a after a[2] went high (-want +got):\n%s", d)
	}
	if _, err := s.Claim(ctx, job.ClaimParams{Class: job.ClassCPU, Limit: 3, Lease: time.Minute, Now: base}); err != nil {
		t.Fatal(err)
	}
	// a[2], ah and a[0] left; acc_a was served, so acc_b's oldest is next.
	want = []entry{{a[1], 2, n}, {gpu, 1, l}}
	if d := cmp.Diff(want, queue("acc_a", 0)); d != "" {
		t.Fatalf("queue of acc_a after a claim (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]entry{{b[0], 1, n}, {b[1], 3, n}, {b[2], 4, n}}, queue("acc_b", 0)[:3]); d != "" {
		t.Fatalf("queue of acc_b (-want +got):\n%s", d)
	}
	if _, err := s.Update(ctx, a[0], func(j *job.Job) error { return j.Reprioritise(job.PriorityLow, base) }); !errors.Is(err, job.ErrNotWaiting) {
		t.Fatalf("reprioritising a dispatched job: %v, want a conflict", err)
	}
}
