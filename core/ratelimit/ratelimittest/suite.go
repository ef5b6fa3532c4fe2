// Package ratelimittest is the shared suite every ratelimit.Limiter passes.
package ratelimittest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/porttest"
	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// Features says how the limiters a Constructor makes relate to each other.
type Features struct {
	// Shared: limiters made by separate Constructor calls spend one budget per key, as API
	// replicas on one backend server do. Otherwise each limiter keeps budgets of its own.
	Shared bool
}

// Constructor returns a limiter under test that reads the time from now; a nil now is the
// limiter's own clock, the real time. Limiters may share a backing server: every key of the
// suite is unique to its test and run.
type Constructor func(t *testing.T, now func() time.Time) ratelimit.Limiter

// TestLimiter runs the suite: each test below, in parallel, against limiters that newLimiter
// makes. An adapter's own test calls it once per backend.
func TestLimiter(t *testing.T, f Features, newLimiter Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newLimiter Constructor){
		TestBudgetThenRefused,
		TestNoSecondBurstWithinAMinute,
		TestEveryRollingMinute,
		TestLoweredLimit,
		TestKeysAndLimitsAreIndependent,
		TestConcurrentRequestsShareOneBudget,
		TestRealClock,
		TestSeparateLimiters,
	}
	porttest.RunParallel(t, f, newLimiter, tests...)
}

// Clock is a fake clock the test moves.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to start+d, where start is the instant NewClock stops at.
func (c *Clock) Set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Add(d)
}

var seq atomic.Int64

// key is a key no other test or run spends.
func key(t *testing.T) string {
	return fmt.Sprintf("ratelimittest:%s:%d:%d", t.Name(), time.Now().UnixNano(), seq.Add(1))
}

func allow(t *testing.T, l ratelimit.Limiter, k string, perMinute int) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), k, perMinute)
	if err != nil {
		t.Fatalf("Allow(%s, %d): %v", k, perMinute, err)
	}
	return d
}

// step is one request at a time after the clock's start, and the decision it must get.
type step struct {
	at    time.Duration
	limit int
	want  ratelimit.Decision
}

func run(t *testing.T, l ratelimit.Limiter, clock *Clock, k string, steps []step) {
	t.Helper()
	for i, s := range steps {
		clock.Set(s.at)
		got := allow(t, l, k, s.limit)
		if got.Allowed != s.want.Allowed {
			t.Fatalf("request %d at +%s, budget %d: allowed %v, want %v (%+v)", i+1, s.at, s.limit, got.Allowed, s.want.Allowed, got)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Fatalf("request %d at +%s (-want +got):\n%s", i+1, s.at, diff)
		}
	}
}

func accepted(limit, remaining int, reset time.Duration) ratelimit.Decision {
	return ratelimit.Decision{Allowed: true, Limit: limit, Remaining: remaining, Reset: reset}
}

func refused(limit int, retry, reset time.Duration) ratelimit.Decision {
	return ratelimit.Decision{Limit: limit, RetryAfter: retry, Reset: reset}
}

// TestBudgetThenRefused: a budget of 5 a minute takes 5 requests, one a second, then refuses
// until the oldest leaves the minute: RetryAfter is when it does, Reset when the newest does.
func TestBudgetThenRefused(t *testing.T, _ Features, newLimiter Constructor) {
	clock := NewClock()
	l, k := newLimiter(t, clock.Now), key(t)
	s := time.Second
	run(t, l, clock, k, []step{
		{0, 5, accepted(5, 4, time.Minute)},
		{1 * s, 5, accepted(5, 3, time.Minute)},
		{2 * s, 5, accepted(5, 2, time.Minute)},
		{3 * s, 5, accepted(5, 1, time.Minute)},
		{4 * s, 5, accepted(5, 0, time.Minute)},
		{4 * s, 5, refused(5, 56*s, time.Minute)},
		{30 * s, 5, refused(5, 30*s, 34*s)},
		{60*s - time.Millisecond, 5, refused(5, time.Millisecond, 4*s+time.Millisecond)},
		// The request of +0 leaves the minute: one passes, and the next waits for +1 s's.
		{60 * s, 5, accepted(5, 0, time.Minute)},
		{60 * s, 5, refused(5, s, time.Minute)},
		{61 * s, 5, accepted(5, 0, time.Minute)},
	})
}

// TestNoSecondBurstWithinAMinute: the Free plan's 30 spent at once leave nothing for the rest
// of that minute, however the minute is cut: not half of it after 30 s, not one just before its
// end; the whole budget is back when the minute is over. A budget refilled continuously (GCRA)
// fails this, letting a second minute's worth through within the first.
func TestNoSecondBurstWithinAMinute(t *testing.T, _ Features, newLimiter Constructor) {
	clock := NewClock()
	l, k := newLimiter(t, clock.Now), key(t)
	var steps []step
	for i := range 30 {
		steps = append(steps, step{0, 30, accepted(30, 29-i, time.Minute)})
	}
	steps = append(steps,
		step{0, 30, refused(30, time.Minute, time.Minute)},
		step{30 * time.Second, 30, refused(30, 30*time.Second, 30*time.Second)},
		step{59*time.Second + 999*time.Millisecond, 30, refused(30, time.Millisecond, time.Millisecond)},
	)
	for i := range 30 {
		steps = append(steps, step{time.Minute, 30, accepted(30, 29-i, time.Minute)})
	}
	steps = append(steps, step{time.Minute, 30, refused(30, time.Minute, time.Minute)})
	run(t, l, clock, k, steps)
}

// TestEveryRollingMinute sends requests at random times (bursts, steady paces, long pauses)
// against budgets of 1, 3 and 30: no 60 seconds, wherever they start, see more than the budget
// accepted, no request is refused while the minute before it holds fewer, and every decision's
// Remaining, RetryAfter and Reset are what the accepted requests before it make them.
func TestEveryRollingMinute(t *testing.T, _ Features, newLimiter Constructor) {
	for _, limit := range []int{1, 3, 30} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, uint64(limit)))
			clock := NewClock()
			l, k := newLimiter(t, clock.Now), key(t)
			var (
				at   time.Duration
				log  []time.Duration // the accepted requests' times
				pace = time.Minute / time.Duration(limit)
			)
			for i := range 400 {
				// Whole milliseconds, so that a backend keeping microseconds is exact.
				switch p := rng.IntN(10); {
				case p < 3: // a burst: the same instant
				case p < 9: // about the budget's pace, often faster, sometimes slower
					at += time.Duration(rng.Int64N(int64(2*pace/time.Millisecond)+1)) * time.Millisecond
				default: // a pause, up to a minute and a half
					at += time.Duration(rng.Int64N(90_000)) * time.Millisecond
				}
				clock.Set(at)
				want := expected(log, at, limit)
				got := allow(t, l, k, limit)
				if got.Allowed != want.Allowed {
					t.Fatalf("seed %d, request %d at +%s: allowed %v, want %v with %d accepted in the minute before it, budget %d",
						seed, i+1, at, got.Allowed, want.Allowed, len(inWindow(log, at)), limit)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("seed %d, request %d at +%s after %d accepted (-want +got):\n%s", seed, i+1, at, len(log), diff)
				}
				if got.Allowed {
					log = append(log, at)
				}
			}
			// Any limit+1 accepted requests span at least a minute: no window of 60 s holds more
			// than limit of them.
			for i := 0; i+limit < len(log); i++ {
				if span := log[i+limit] - log[i]; span < time.Minute {
					t.Fatalf("seed %d: %d requests accepted within %s (from +%s), budget %d a minute", seed, limit+1, span, log[i], limit)
				}
			}
			if len(log) < limit {
				t.Fatalf("seed %d: only %d requests accepted", seed, len(log))
			}
		})
	}
}

// expected is the decision for a request at now, given the times of the requests accepted
// before it: the sliding window the port describes.
func expected(log []time.Duration, now time.Duration, limit int) ratelimit.Decision {
	in := inWindow(log, now)
	if len(in) < limit {
		return accepted(limit, limit-len(in)-1, ratelimit.Window)
	}
	return refused(limit, in[len(in)-limit]+ratelimit.Window-now, in[len(in)-1]+ratelimit.Window-now)
}

// inWindow are the times of log that are within the minute before now.
func inWindow(log []time.Duration, now time.Duration) []time.Duration {
	return slices.DeleteFunc(slices.Clone(log), func(a time.Duration) bool { return a+ratelimit.Window <= now })
}

// TestLoweredLimit: a key whose budget shrinks (a plan moved from Pro to Free) with more
// accepted in the minute than the new budget waits until few enough have left it.
func TestLoweredLimit(t *testing.T, _ Features, newLimiter Constructor) {
	clock := NewClock()
	l, k := newLimiter(t, clock.Now), key(t)
	s := time.Second
	var steps []step
	for i := range 10 {
		steps = append(steps, step{time.Duration(i) * s, 10, accepted(10, 9-i, time.Minute)})
	}
	// Ten in the minute, three allowed: two may stay, so +7 s's request must leave it.
	steps = append(steps,
		step{10 * s, 3, refused(3, 57*s, 59*s)},
		step{67 * s, 3, accepted(3, 0, time.Minute)},
		step{67 * s, 3, refused(3, s, time.Minute)},
	)
	run(t, l, clock, k, steps)
}

// TestKeysAndLimitsAreIndependent: one key's spent budget refuses nothing of another's.
func TestKeysAndLimitsAreIndependent(t *testing.T, _ Features, newLimiter Constructor) {
	clock := NewClock()
	l := newLimiter(t, clock.Now)
	a, b := key(t), key(t)
	for range 2 {
		if d := allow(t, l, a, 2); !d.Allowed {
			t.Fatal("a refused within its budget")
		}
	}
	if d := allow(t, l, a, 2); d.Allowed {
		t.Fatal("a allowed past its budget")
	}
	if d := allow(t, l, b, 300); !d.Allowed || d.Remaining != 299 {
		t.Fatalf("b = %+v; want allowed with 299 left", d)
	}
}

// TestConcurrentRequestsShareOneBudget: of 100 requests at once on the real clock, exactly the
// budget's 40 pass.
func TestConcurrentRequestsShareOneBudget(t *testing.T, _ Features, newLimiter Constructor) {
	l, k := newLimiter(t, nil), key(t)
	var (
		wg      sync.WaitGroup
		allowed atomic.Int64
	)
	for range 100 {
		wg.Go(func() {
			d, err := l.Allow(context.Background(), k, 40)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 40 {
		t.Fatalf("%d of 100 concurrent requests allowed; want 40", got)
	}
}

// TestRealClock: on the limiter's own clock, a spent budget waits for the rest of the minute
// of its first request.
func TestRealClock(t *testing.T, _ Features, newLimiter Constructor) {
	l, k := newLimiter(t, nil), key(t)
	start := time.Now()
	for i := range 3 {
		if d := allow(t, l, k, 3); !d.Allowed || d.Remaining != 2-i || d.Reset != time.Minute {
			t.Fatalf("request %d: %+v; want allowed, %d left, whole again in a minute", i+1, d, 2-i)
		}
	}
	d := allow(t, l, k, 3)
	// The limiter's clock (a server's) may differ from this one by where it starts, not by
	// how fast it runs: between the first request and this one, it saw at most what we did,
	// and a second more for the rounding of a slow machine.
	least := time.Minute - time.Since(start) - time.Second
	if d.Allowed || d.Remaining != 0 || d.RetryAfter < least || d.RetryAfter > time.Minute || d.Reset < d.RetryAfter || d.Reset > time.Minute {
		t.Fatalf("4th request: %+v; want refused, retry after %s to 1m0s, reset after that and within a minute", d, least)
	}
}

// TestSeparateLimiters: two limiters of the same backend spend one budget per key when the
// backend is shared (replicas on one Redis), and each its own otherwise.
func TestSeparateLimiters(t *testing.T, f Features, newLimiter Constructor) {
	clock := NewClock()
	a, b, k := newLimiter(t, clock.Now), newLimiter(t, clock.Now), key(t)
	allow(t, a, k, 2)
	allow(t, b, k, 2)
	d := allow(t, a, k, 2)
	if f.Shared && d.Allowed {
		t.Fatalf("a third request on a shared budget of 2 was allowed: %+v", d)
	}
	if !f.Shared && (!d.Allowed || d.Remaining != 0) {
		t.Fatalf("a second request on a limiter of its own, budget 2: %+v; want allowed, none left", d)
	}
}
