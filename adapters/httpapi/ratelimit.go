package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// RateLimit is the Options.Authenticated middleware that applies the request budget through
// the core's gate, the same one MCP calls. Over the budget it answers 429 RATE_LIMITED, and
// 503 SERVICE_UNAVAILABLE when the limiter's backend fails (the gate fails closed), both with
// Retry-After. Every authenticated answer within the budget carries RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset (seconds until the whole budget is back).
func RateLimit(g *ratelimit.Gate) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			acct, ok := AccountFrom(r.Context())
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			d, err := g.Allow(r.Context(), acct)
			if d.Limit > 0 {
				h := w.Header()
				h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
				h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
				h.Set("RateLimit-Reset", strconv.Itoa(seconds(d.Reset)))
			}
			if err != nil {
				WriteError(w, r, err)
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
