package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// RateLimit is the Options.Authenticated middleware that spends one request of the caller's
// per-minute budget (perMinute gives it by plan) and refuses past it with 429 RATE_LIMITED and
// Retry-After. Every authenticated answer carries RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset (seconds until the whole budget is back). When the limiter itself fails the
// request passes, logged: a limiter outage must not become an API outage, and the balance check
// still guards spending.
func RateLimit(l ratelimit.Limiter, perMinute func(account.Account) int, log *slog.Logger) Middleware {
	if log == nil {
		log = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			acct, ok := AccountFrom(r.Context())
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			d, err := l.Allow(r.Context(), ratelimit.Key(acct.ID), perMinute(acct))
			if err != nil {
				log.Error("httpapi: rate limiter failed; request let through", "account", acct.ID, "error", err)
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
			h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
			h.Set("RateLimit-Reset", strconv.Itoa(seconds(d.Reset)))
			if !d.Allowed {
				h.Set("Retry-After", strconv.Itoa(max(seconds(d.RetryAfter), 1)))
				WriteError(w, r, problem.Reject(problem.CodeRateLimited,
					"the %s plan allows %d requests per minute; retry in %d s", acct.Plan, d.Limit, max(seconds(d.RetryAfter), 1)))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// seconds rounds up: a client that waits that long finds the budget refilled.
func seconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}
