package ratelimit

import (
	"context"
	"time"
)

// Keys is how many keys m holds, for the tests of MaxKeys.
func (m *Memory) Keys() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.logs)
}

// TTL is how long until key expires in Redis.
func (r *Redis) TTL(ctx context.Context, key string) (time.Duration, error) {
	return r.client.PTTL(ctx, key).Result()
}
