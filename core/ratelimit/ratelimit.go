// Package ratelimit is the port of per-account request budgets, shared by REST and MCP: one
// budget per key, a sliding window of one minute, so that no 60 seconds, wherever they start,
// see more than the budget's requests accepted.
package ratelimit

import (
	"context"
	"time"
)

// Window is the span a budget counts over: a budget of N per minute accepts at most N requests
// in any Window, and a request accepted at t counts until t+Window.
const Window = time.Minute

// Limiter spends one request of a key's budget of perMinute requests per minute: it accepts the
// request when fewer than perMinute of the key's requests were accepted in the Window before
// now (refused requests spend nothing), so that at most perMinute are accepted in any rolling
// Window.
type Limiter interface {
	Allow(ctx context.Context, key string, perMinute int) (Decision, error)
}

// Decision is the answer for one request.
type Decision struct {
	Allowed bool
	// Limit is the budget, requests per minute.
	Limit int
	// Remaining is how many more requests would pass now.
	Remaining int
	// RetryAfter is how long until one more request passes, when the oldest accepted request
	// that stands in the way leaves the window; zero when Allowed.
	RetryAfter time.Duration
	// Reset is how long until the whole budget is back: until the newest accepted request
	// leaves the window.
	Reset time.Duration
}

// Key is the limiter key of an account: every access point (REST, MCP) uses it.
func Key(accountID string) string { return "rate:" + accountID }
