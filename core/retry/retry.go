// Package retry is the backoff every retry loop of the service uses: exponential, bounded, with
// full jitter, and a log gate so that a repeated failure is logged once per interval rather
// than once per try. It is here rather than a library because core is standard-library only.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is one retry loop's state; not safe for concurrent use.
type Backoff struct {
	// Base is the first wait's upper bound, Max the bound of every later one.
	Base, Max time.Duration
	// Now is the clock of the log gate; nil is time.Now.
	Now func() time.Time

	cur      time.Duration
	failures int
	lastLog  time.Time
	muted    int
}

// New returns a backoff from base to max.
func New(base, max time.Duration) *Backoff { return &Backoff{Base: base, Max: max} }

// Next records a failure and returns how long to wait: a random duration in [d/2, d] where d
// doubles from Base to Max.
func (b *Backoff) Next() time.Duration {
	b.failures++
	if b.cur == 0 {
		b.cur = b.Base
	} else {
		b.cur = min(b.cur*2, b.Max)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}

// Reset forgets the failures after a success.
func (b *Backoff) Reset() { b.cur, b.failures = 0, 0 }

// Failures is how many failures in a row Next has seen.
func (b *Backoff) Failures() int { return b.failures }

// Log tells whether this failure deserves a log line: the first of a run, then one per Max.
// Muted is how many were not logged since the last line.
func (b *Backoff) Log() (ok bool, muted int) {
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	if !b.lastLog.IsZero() && now.Sub(b.lastLog) < b.Max {
		b.muted++
		return false, 0
	}
	b.lastLog, muted, b.muted = now, b.muted, 0
	return true, muted
}

// Wait sleeps for the next backoff, or until ctx ends; it reports whether the wait ran its
// course (false: ctx ended first).
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
