package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// Memory is the generic cell rate algorithm in process memory: one theoretical arrival time
// per key, the same arithmetic as redis_rate, so both adapters answer alike.
type Memory struct {
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// MaxKeys, when positive, bounds the keys kept, for budgets whose keys a client chooses (a
	// client address): a new key past it drops the keys whose budget is whole, and if none is,
	// the nearest to whole of a few. 0 keeps every key until its budget is whole again.
	MaxKeys int

	mu    sync.Mutex
	tat   map[string]time.Time
	sweep time.Time
}

// NewMemory returns an empty limiter.
func NewMemory() *Memory { return &Memory{tat: map[string]time.Time{}} }

var _ ratelimit.Limiter = (*Memory)(nil)

// Allow spends one request of key's budget.
func (m *Memory) Allow(_ context.Context, key string, perMinute int) (ratelimit.Decision, error) {
	now := time.Now()
	if m.Now != nil {
		now = m.Now()
	}
	perMinute = max(perMinute, 1)
	interval := time.Minute / time.Duration(perMinute)
	burst := interval * time.Duration(perMinute)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(now)
	tat := m.tat[key]
	if tat.Before(now) {
		tat = now
	}
	newTat := tat.Add(interval)
	diff := now.Sub(newTat.Add(-burst))
	if diff < 0 {
		return ratelimit.Decision{Limit: perMinute, RetryAfter: -diff, Reset: tat.Sub(now)}, nil
	}
	if _, ok := m.tat[key]; !ok && m.MaxKeys > 0 && len(m.tat) >= m.MaxKeys {
		m.evict(now)
	}
	m.tat[key] = newTat
	return ratelimit.Decision{Allowed: true, Limit: perMinute, Remaining: int(diff / interval), Reset: newTat.Sub(now)}, nil
}

// forget drops, once a minute, the keys whose budget is whole again: they weigh nothing.
func (m *Memory) forget(now time.Time) {
	if now.Sub(m.sweep) < time.Minute {
		return
	}
	m.sweep = now
	for k, t := range m.tat {
		if t.Before(now) {
			delete(m.tat, k)
		}
	}
}

// evictSample is how many keys evict weighs when no budget is whole: Redis's approximated LRU
// samples five; a few more cost nothing here.
const evictSample = 8

// evict makes room for one key: it drops the keys whose budget is whole (a full pass, at most
// once a second), or else, of a sample of keys, the one whose budget is nearest to whole, which
// is the one least likely to be refusing anything. A client spending many addresses may so get
// one of them a fresh budget, but it already has a budget for each.
func (m *Memory) evict(now time.Time) {
	if now.Sub(m.sweep) >= time.Second {
		m.sweep = time.Time{}
		m.forget(now)
		if len(m.tat) < m.MaxKeys {
			return
		}
	}
	var (
		oldest string
		first  time.Time
		seen   int
	)
	for k, t := range m.tat {
		if seen == 0 || t.Before(first) {
			oldest, first = k, t
		}
		if seen++; seen == evictSample {
			break
		}
	}
	delete(m.tat, oldest)
}
