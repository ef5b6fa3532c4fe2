package ratelimit

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Gate is the one place the request budget is applied: REST and MCP both call Allow before
// any work, so both answer alike.
//
// When the limiter's backend fails (Redis down), the gate fails closed: the request is refused
// with SERVICE_UNAVAILABLE and a Retry-After of UnavailableRetry, and the outage is logged once
// per LogEvery, not once per request. Failing open would let a client that knows Redis is down
// spend without limit; a short refusal costs only a retry.
type Gate struct {
	limiter   Limiter
	perMinute func(account.Account) int
	log       *slog.Logger
	// UnavailableRetry is the Retry-After of a refusal while the backend fails.
	UnavailableRetry time.Duration
	// LogEvery spaces the log lines of an outage.
	LogEvery time.Duration
	now      func() time.Time

	mu      sync.Mutex
	lastLog time.Time
	muted   int
}

// NewGate applies limiter with each account's budget from perMinute.
func NewGate(limiter Limiter, perMinute func(account.Account) int, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	return &Gate{limiter: limiter, perMinute: perMinute, log: log, UnavailableRetry: 5 * time.Second,
		LogEvery: 30 * time.Second, now: time.Now}
}

// Allow spends one request of the account's budget. Over it, the error is a RATE_LIMITED
// *problem.Problem with RetryAfter; with the backend failing, SERVICE_UNAVAILABLE. The
// decision is returned in both cases for the RateLimit-* headers (zero when the backend failed).
func (g *Gate) Allow(ctx context.Context, a account.Account) (Decision, error) {
	limit := g.perMinute(a)
	d, err := g.limiter.Allow(ctx, Key(a.ID), limit)
	if err != nil {
		g.logOutage(err)
		return Decision{}, &problem.Problem{Code: problem.CodeUnavailable, RetryAfter: g.UnavailableRetry,
			Message: "the request budget cannot be checked right now; retry shortly"}
	}
	if !d.Allowed {
		// Whole seconds, rounded up: a client that waits that long finds the request it waited
		// for gone from the window.
		wait := max((d.RetryAfter + time.Second - 1).Truncate(time.Second), time.Second)
		return d, &problem.Problem{Code: problem.CodeRateLimited, RetryAfter: wait,
			Message: "the " + string(a.Plan) + " plan allows " + strconv.Itoa(d.Limit) + " requests per minute, shared by REST and MCP; retry after " + seconds(wait)}
	}
	return d, nil
}

func (g *Gate) logOutage(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if !g.lastLog.IsZero() && now.Sub(g.lastLog) < g.LogEvery {
		g.muted++
		return
	}
	g.log.Error("rate limiter unavailable: refusing requests with 503", "err", err, "refusals_since_last_log", g.muted)
	g.lastLog, g.muted = now, 0
}

func seconds(d time.Duration) string {
	if n := int(d / time.Second); n != 1 {
		return strconv.Itoa(n) + " seconds"
	}
	return "1 second"
}
