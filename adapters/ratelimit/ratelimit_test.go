package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/ratelimit"
	core "github.com/mediajobs/mediajobs/core/ratelimit"
	"github.com/mediajobs/mediajobs/core/ratelimit/ratelimittest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// redisServer is the Redis of the test binary: MEDIAJOBS_TEST_REDIS_URL, the local one on
// 127.0.0.1:6379, or a container of the image make images builds.
var redisServer = sync.OnceValues(func() (string, error) {
	if u := os.Getenv("MEDIAJOBS_TEST_REDIS_URL"); u != "" {
		return u, nil
	}
	return testservices.RedisEndpoint()
})

func redisURL() string {
	if u, err := redisServer(); err == nil {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func TestMemory(t *testing.T) {
	t.Parallel()
	ratelimittest.Exercise(t, func(*testing.T) core.Limiter { return ratelimit.NewMemory() })
}

func TestRedis(t *testing.T) {
	t.Parallel()
	ratelimittest.Exercise(t, func(t *testing.T) core.Limiter {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r, err := ratelimit.OpenRedis(ctx, redisURL())
		if err != nil {
			testenv.Missing(t, "Redis at "+redisURL()+" (scripts/services.sh starts it; MEDIAJOBS_TEST_REDIS_URL names another)", err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	})
}

// TestMemoryRefill checks the arithmetic on a fake clock: a spent budget of 30 per minute gives
// one request back every 2 s, and all of it after a minute.
func TestMemoryRefill(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := ratelimit.NewMemory()
	m.Now = func() time.Time { return now }
	ctx := context.Background()
	for range 30 {
		if d, _ := m.Allow(ctx, "k", 30); !d.Allowed {
			t.Fatal("refused within the budget")
		}
	}
	steps := []struct {
		advance time.Duration
		allowed bool
		retry   time.Duration
	}{
		{0, false, 2 * time.Second},
		{time.Second, false, time.Second},
		{time.Second, true, 0},
		{0, false, 2 * time.Second},
		{time.Minute, true, 0},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		d, _ := m.Allow(ctx, "k", 30)
		if d.Allowed != s.allowed || d.RetryAfter != s.retry {
			t.Fatalf("step %d: %+v; want allowed %v, retry after %s", i, d, s.allowed, s.retry)
		}
	}
}

// TestMemoryMaxKeys: past MaxKeys, a new key pushes out one whose budget is nearest to whole,
// never a spent budget while another is fuller; once budgets are whole they all make room.
func TestMemoryMaxKeys(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := ratelimit.NewMemory()
	m.Now = func() time.Time { return now }
	m.MaxKeys = 3
	ctx := context.Background()
	for range 2 {
		m.Allow(ctx, "spent", 2)
	}
	m.Allow(ctx, "b", 2)
	m.Allow(ctx, "c", 2)
	for i := range 20 {
		if d, _ := m.Allow(ctx, fmt.Sprintf("new%d", i), 2); !d.Allowed {
			t.Fatalf("new key %d refused", i)
		}
		if n := m.Keys(); n > 3 {
			t.Fatalf("%d keys held, MaxKeys is 3", n)
		}
		if d, _ := m.Allow(ctx, "spent", 2); d.Allowed {
			t.Fatalf("after new key %d, the spent budget was forgotten", i)
		}
	}
	now = now.Add(time.Minute + time.Second)
	m.Allow(ctx, "last", 2)
	if n := m.Keys(); n != 1 {
		t.Fatalf("%d keys held after every budget was whole again, want 1", n)
	}
}
