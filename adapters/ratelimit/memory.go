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
