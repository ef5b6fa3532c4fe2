// Package ratelimittest is the shared suite every ratelimit.Limiter passes.
package ratelimittest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// Exercise runs the suite against the limiters newLimiter makes. Keys are made unique per test,
// so limiters may share a backing server.
func Exercise(t *testing.T, newLimiter func(t *testing.T) ratelimit.Limiter) {
	t.Helper()
	var n atomic.Int64
	key := func(t *testing.T) string {
		return fmt.Sprintf("test:%s:%d:%d", t.Name(), time.Now().UnixNano(), n.Add(1))
	}

	t.Run("BurstOfAMinuteThenRefused", func(t *testing.T) {
		t.Parallel()
		l, ctx, k := newLimiter(t), context.Background(), key(t)
		for i := range 30 {
			d, err := l.Allow(ctx, k, 30)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed || d.Limit != 30 || d.Remaining != 29-i {
				t.Fatalf("request %d: %+v; want allowed, limit 30, remaining %d", i+1, d, 29-i)
			}
		}
		d, err := l.Allow(ctx, k, 30)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > 2*time.Second || d.Reset <= 0 || d.Reset > time.Minute {
			t.Fatalf("31st request: %+v; want refused, retry within 2 s, reset within a minute", d)
		}
	})

	t.Run("KeysAndLimitsAreIndependent", func(t *testing.T) {
		t.Parallel()
		l, ctx := newLimiter(t), context.Background()
		a, b := key(t), key(t)
		for range 2 {
			if d, _ := l.Allow(ctx, a, 2); !d.Allowed {
				t.Fatal("a refused within its budget")
			}
		}
		if d, _ := l.Allow(ctx, a, 2); d.Allowed {
			t.Fatal("a allowed past its budget")
		}
		if d, _ := l.Allow(ctx, b, 300); !d.Allowed || d.Remaining != 299 {
			t.Fatalf("b = %+v; want allowed with 299 left", d)
		}
	})

	t.Run("ConcurrentRequestsShareOneBudget", func(t *testing.T) {
		t.Parallel()
		l, ctx, k := newLimiter(t), context.Background(), key(t)
		var (
			wg      sync.WaitGroup
			allowed atomic.Int64
		)
		for range 100 {
			wg.Go(func() {
				d, err := l.Allow(ctx, k, 40)
				if err != nil {
					t.Error(err)
				}
				if d.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		// The budget refills one request every 1.5 s; a slow machine may see one more.
		if got := allowed.Load(); got < 40 || got > 41 {
			t.Fatalf("%d of 100 concurrent requests allowed; want 40", got)
		}
	})
}
