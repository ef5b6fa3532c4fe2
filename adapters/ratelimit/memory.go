package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// Memory is the sliding window in process memory: per key, the times of the requests accepted
// in the last minute, the same arithmetic as the Redis script, so both adapters answer alike.
type Memory struct {
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// MaxKeys, when positive, bounds the keys kept, for budgets whose keys a client chooses (a
	// client address): a new key past it drops the keys whose budget is whole, and if none is,
	// the one of a few with the most of its budget left. 0 keeps every key until its budget is
	// whole again.
	MaxKeys int

	mu   sync.Mutex
	logs map[string]*log
	// base is the instant the times of the logs count from: durations since it keep the
	// monotonic clock's reading and weigh 8 bytes each.
	base  time.Time
	sweep time.Time
}

// log is a key's accepted requests of the last minute, oldest first, as times since base.
type log struct {
	at []time.Duration
	// limit is the budget the key was last spent with, for evict.
	limit int
}

// prune drops the requests that left the window.
func (l *log) prune(now time.Duration) {
	i := 0
	for i < len(l.at) && l.at[i]+ratelimit.Window <= now {
		i++
	}
	l.at = l.at[i:]
}

// NewMemory returns an empty limiter.
func NewMemory() *Memory { return &Memory{logs: map[string]*log{}} }

var _ ratelimit.Limiter = (*Memory)(nil)

// Allow spends one request of key's budget.
func (m *Memory) Allow(_ context.Context, key string, perMinute int) (ratelimit.Decision, error) {
	clock := time.Now
	if m.Now != nil {
		clock = m.Now
	}
	perMinute = max(perMinute, 1)

	m.mu.Lock()
	defer m.mu.Unlock()
	wall := clock()
	if m.base.IsZero() {
		m.base = wall
	}
	now := wall.Sub(m.base)
	m.forget(wall, now)
	l := m.logs[key]
	if l == nil {
		if m.MaxKeys > 0 && len(m.logs) >= m.MaxKeys {
			m.evict(wall, now)
		}
		l = &log{}
		m.logs[key] = l
	}
	l.limit = perMinute
	l.prune(now)
	if n := len(l.at); n >= perMinute {
		return ratelimit.Decision{Limit: perMinute, RetryAfter: l.at[n-perMinute] + ratelimit.Window - now,
			Reset: l.at[n-1] + ratelimit.Window - now}, nil
	}
	// l.at[i:] of prune and this append reuse the array; append copies only what is left when
	// it grows, so a log weighs at most about twice its budget.
	l.at = append(l.at, now)
	return ratelimit.Decision{Allowed: true, Limit: perMinute, Remaining: perMinute - len(l.at), Reset: ratelimit.Window}, nil
}

// forget drops, once a minute, the keys whose budget is whole again: they weigh nothing.
func (m *Memory) forget(wall time.Time, now time.Duration) {
	if wall.Sub(m.sweep) < time.Minute {
		return
	}
	m.sweep = wall
	for k, l := range m.logs {
		if l.prune(now); len(l.at) == 0 {
			delete(m.logs, k)
		}
	}
}

// evictSample is how many keys evict weighs when no budget is whole: Redis's approximated LRU
// samples five; a few more cost nothing here.
const evictSample = 8

// evict makes room for one key: it drops the keys whose budget is whole (a full pass, at most
// once a second), or else, of a sample of keys, the one with the most of its budget left (of
// those, the one whole soonest), which is the one least likely to be refusing anything. A
// client spending many addresses may so get one of them a fresh budget, but it already has a
// budget for each.
func (m *Memory) evict(wall time.Time, now time.Duration) {
	if wall.Sub(m.sweep) >= time.Second {
		m.sweep = time.Time{}
		m.forget(wall, now)
		if len(m.logs) < m.MaxKeys {
			return
		}
	}
	var (
		victim string
		best   *log
		seen   int
	)
	for k, l := range m.logs {
		l.prune(now)
		if seen == 0 || fuller(l, best) {
			victim, best = k, l
		}
		if seen++; seen == evictSample {
			break
		}
	}
	delete(m.logs, victim)
}

// fuller reports whether a has more of its budget left than b, or as much and is whole sooner.
func fuller(a, b *log) bool {
	ra, rb := a.limit-len(a.at), b.limit-len(b.at)
	if ra != rb {
		return ra > rb
	}
	return len(a.at) == 0 || (len(b.at) > 0 && a.at[len(a.at)-1] < b.at[len(b.at)-1])
}
