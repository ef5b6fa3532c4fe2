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
	ratelimittest.TestLimiter(t, ratelimittest.Features{}, func(_ *testing.T, now func() time.Time) core.Limiter {
		m := ratelimit.NewMemory()
		m.Now = now
		return m
	})
}

func TestRedis(t *testing.T) {
	t.Parallel()
	ratelimittest.TestLimiter(t, ratelimittest.Features{Shared: true}, func(t *testing.T, now func() time.Time) core.Limiter {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r, err := ratelimit.OpenRedis(ctx, redisURL())
		if err != nil {
			testenv.Missing(t, "Redis at "+redisURL()+" (scripts/services.sh starts it; MEDIAJOBS_TEST_REDIS_URL names another)", err)
		}
		t.Cleanup(func() { _ = r.Close() })
		r.Now = now
		return r
	})
}

// TestRedisKeyExpires: a key's set expires when its newest request leaves the window, so that
// idle budgets weigh nothing in Redis.
func TestRedisKeyExpires(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r, err := ratelimit.OpenRedis(ctx, redisURL())
	if err != nil {
		testenv.Missing(t, "Redis at "+redisURL(), err)
	}
	t.Cleanup(func() { _ = r.Close() })
	key := fmt.Sprintf("ratelimit-test:expiry:%d", time.Now().UnixNano())
	if _, err := r.Allow(ctx, key, 5); err != nil {
		t.Fatal(err)
	}
	ttl, err := r.TTL(ctx, key)
	if err != nil || ttl <= 59*time.Second || ttl > time.Minute {
		t.Fatalf("TTL of a key just spent: %s %v; want a minute", ttl, err)
	}
}

// TestMemoryMaxKeys: past MaxKeys, a new key pushes out one with the most of its budget left,
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
