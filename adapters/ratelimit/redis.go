package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// Redis keeps the budgets in Redis, so that every API replica spends from the same one: per
// key, a sorted set of the requests accepted in the last minute, scored by their time in
// microseconds, read and written by one script (atomic) that also sets the key to expire when
// its newest request leaves the window.
type Redis struct {
	client *redis.Client
	// Now is the clock; nil is the Redis server's (TIME), one clock for every replica.
	Now func() time.Time
	// prefix and seq make each accepted request's member of its set unique.
	prefix string
	seq    atomic.Uint64
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
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Redis{client: c, prefix: hex.EncodeToString(b[:])}, nil
}

// Close closes the connection pool.
func (r *Redis) Close() error { return r.client.Close() }

// slidingWindow is Memory.Allow in Lua. KEYS[1] is the key; ARGV: now in microseconds (empty:
// the server's TIME), the budget, the window in microseconds, and the member that records this
// request if it is accepted. It answers {allowed, count in the window after it, the time of the
// request that must leave the window before one more passes, the newest's time}, all in
// microseconds. Lua's numbers are doubles, exact for microseconds since 1970 until 2255.
var slidingWindow = redis.NewScript(`
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return {1, n + 1, 0, now, now}
end
local blocking = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
return {0, n, tonumber(blocking[2]), tonumber(newest[2]), now}
`)

// Allow spends one request of key's budget.
func (r *Redis) Allow(ctx context.Context, key string, perMinute int) (ratelimit.Decision, error) {
	perMinute = max(perMinute, 1)
	now := ""
	if r.Now != nil {
		now = strconv.FormatInt(r.Now().UnixMicro(), 10)
	}
	member := r.prefix + ":" + strconv.FormatUint(r.seq.Add(1), 36)
	res, err := slidingWindow.Run(ctx, r.client, []string{key},
		now, perMinute, ratelimit.Window.Microseconds(), member).Int64Slice()
	if err != nil {
		return ratelimit.Decision{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(res) != 5 {
		return ratelimit.Decision{}, fmt.Errorf("ratelimit: redis: the script answered %v", res)
	}
	at := func(us int64) time.Duration { return time.Duration(us-res[4])*time.Microsecond + ratelimit.Window }
	if res[0] == 1 {
		return ratelimit.Decision{Allowed: true, Limit: perMinute, Remaining: perMinute - int(res[1]),
			Reset: ratelimit.Window}, nil
	}
	return ratelimit.Decision{Limit: perMinute, RetryAfter: at(res[2]), Reset: at(res[3])}, nil
}
