package ratelimit

import (
	"context"
	"fmt"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// Redis keeps the budgets in Redis, so that every API replica spends from the same one.
type Redis struct {
	client *redis.Client
	lim    *redis_rate.Limiter
}

var _ ratelimit.Limiter = (*Redis)(nil)

// OpenRedis connects to the Redis server of url (redis://[user:pass@]host:port/db) and checks
// that it answers.
func OpenRedis(ctx context.Context, url string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis url: %w", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("ratelimit: redis at %s: %w", opt.Addr, err)
	}
	return &Redis{client: c, lim: redis_rate.NewLimiter(c)}, nil
}

// Close closes the connection pool.
func (r *Redis) Close() error { return r.client.Close() }

// Allow spends one request of key's budget.
func (r *Redis) Allow(ctx context.Context, key string, perMinute int) (ratelimit.Decision, error) {
	perMinute = max(perMinute, 1)
	res, err := r.lim.Allow(ctx, key, redis_rate.PerMinute(perMinute))
	if err != nil {
		return ratelimit.Decision{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	d := ratelimit.Decision{Allowed: res.Allowed > 0, Limit: perMinute, Remaining: res.Remaining, Reset: res.ResetAfter}
	if !d.Allowed {
		d.RetryAfter = res.RetryAfter
	}
	return d, nil
}
