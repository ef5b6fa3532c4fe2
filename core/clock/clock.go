// Package clock is the Clock port: the one source of time of the domain, so that tests can
// drive retries, leases and expiry with a fake one (clocktest).
package clock

import "time"

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the real clock.
type System struct{}

// Now returns the current time.
func (System) Now() time.Time { return time.Now() }
