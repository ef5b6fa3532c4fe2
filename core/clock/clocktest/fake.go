// Package clocktest provides a fake Clock for tests: it moves only when told.
package clocktest

import (
	"sync"
	"time"
)

// Fake is a Clock that moves only through Set and Advance. Safe for concurrent use.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a fake clock at t.
func New(t time.Time) *Fake { return &Fake{now: t} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// Set moves the clock to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}
