// Package ratelimit is the port of per-account request budgets, shared by REST and MCP: one
// budget per key, refilled continuously (GCRA), so a burst of a minute's requests passes and the
// next waits for its share.
package ratelimit

import (
	"context"
	"time"
)

// Limiter spends one request of a key's budget of perMinute requests per minute.
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
	// RetryAfter is how long until one more request passes; zero when Allowed.
	RetryAfter time.Duration
	// Reset is how long until the whole budget is back.
	Reset time.Duration
}

// Key is the limiter key of an account: every access point (REST, MCP) uses it.
func Key(accountID string) string { return "rate:" + accountID }
