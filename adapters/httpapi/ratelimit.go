package httpapi

import (
	"cmp"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	memlimit "github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/core/problem"
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
			SetRateLimitHeaders(w.Header(), d)
			if err != nil {
				WriteError(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// SetRateLimitHeaders writes a decision of the request budget as RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset (seconds until the whole budget is back); nothing for
// the zero decision of a limiter that failed. MCP writes them too, so both access points answer
// alike.
func SetRateLimitHeaders(h http.Header, d ratelimit.Decision) {
	if d.Limit <= 0 {
		return
	}
	h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(seconds(d.Reset)))
}

// seconds rounds up: a client that waits that long finds the request it waited for gone from
// the window.
func seconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// DefaultAuthFailuresPerMinute is each client address's budget of failed authentications: a
// person mistyping a key never meets it, a script retrying a wrong key meets it within a
// second and then waits for the minute of its first failure to be over.
const DefaultAuthFailuresPerMinute = 60

// MaxAuthFailureAddresses bounds the client addresses the in-memory budget of failed
// authentications tracks (each keeps the times of its failures of the last minute: about 5 MB
// at most); past it, an address with the most of its budget left is forgotten first.
const MaxAuthFailureAddresses = 10_000

// AuthFailures configure the limit on failed authentications per client address. Each address
// has a budget of PerMinute failures in any minute (the ratelimit.Limiter's sliding window), shared by bearer authentication
// and POST /session and spent only by failures: a wrong, revoked or malformed bearer key, or a
// wrong key signing in. Once it is spent, a request whose key fails is answered 429
// RATE_LIMITED with Retry-After instead of 401, and the address is logged once a minute, not
// once a request.
//
// A request whose key is valid is served whatever its address's budget: the key is checked
// first (one indexed read by its hash, which a 401 costs as well), so that a client guessing
// keys behind a shared address (a NAT, a proxy) never locks out the others behind it. Keys
// hold 160 random bits, so the limit is not what keeps them from being guessed; it tells
// clients that retry a wrong key to stop, and tells the operator who does.
type AuthFailures struct {
	// PerMinute is each address's budget; 0 is DefaultAuthFailuresPerMinute, and a negative
	// value turns the limit off.
	PerMinute int
	// Limiter keeps the budgets; nil is one in this process's memory that tracks at most
	// MaxAuthFailureAddresses addresses. A Redis limiter shares them between replicas.
	Limiter ratelimit.Limiter
	// TrustedProxies are the networks of the proxies in front of the API, such as a load
	// balancer. A request from one of them counts against the address its X-Forwarded-For
	// names: the nearest one, from the right, that is not a trusted proxy. Empty: the peer's
	// address is the client's, and X-Forwarded-For, which anyone can send, is ignored.
	TrustedProxies []netip.Prefix
}

// failureGate applies AuthFailures.
type failureGate struct {
	limiter   ratelimit.Limiter
	perMinute int
	trusted   []netip.Prefix
	log       *slog.Logger
}

// newFailureGate returns the gate of cfg; nil when the limit is off.
func newFailureGate(cfg AuthFailures, now func() time.Time, log *slog.Logger) *failureGate {
	if cfg.PerMinute < 0 {
		return nil
	}
	g := &failureGate{limiter: cfg.Limiter, perMinute: cmp.Or(cfg.PerMinute, DefaultAuthFailuresPerMinute),
		trusted: cfg.TrustedProxies, log: log}
	if g.limiter == nil {
		m := memlimit.NewMemory()
		// Two keys an address: its budget and its log line.
		m.Now, m.MaxKeys = now, 2*MaxAuthFailureAddresses
		g.limiter = m
	}
	return g
}

// failed takes the error of an authentication: a failure (UNAUTHORIZED) spends one of the
// client address's budget and stays what it is while the budget lasts; past it, the answer is
// RATE_LIMITED. Any other error passes through.
func (g *failureGate) failed(r *http.Request, err error) error {
	if g == nil || problem.CodeOf(err) != problem.CodeUnauthorized {
		return err
	}
	ctx, client := r.Context(), g.client(r)
	d, lerr := g.limiter.Allow(ctx, "authfail:"+client, g.perMinute)
	if lerr != nil || d.Allowed {
		// A limiter that cannot answer (Redis away) leaves the failure a 401: the request is
		// refused either way, and the request budget's gate reports the outage.
		return err
	}
	// One line per address per minute, through the same limiter: with Redis, one for the fleet.
	if l, lerr := g.limiter.Allow(ctx, "authfail-log:"+client, 1); lerr == nil && l.Allowed {
		g.log.WarnContext(ctx, "httpapi: too many failed authentications; refusing this client's failures with 429",
			"client", client, "failures_per_minute", g.perMinute)
	}
	wait := max(d.RetryAfter, time.Second)
	return &problem.Problem{Code: problem.CodeRateLimited, RetryAfter: wait,
		Message: problem.Messagef("too many failed authentications from your address (%d a minute are allowed); retry after %s",
			g.perMinute, secondsText(wait))}
}

// client is the address a request's failures count against: the peer's, or, from a trusted
// proxy, the nearest address of X-Forwarded-For that is not one. An IPv6 address counts as its
// /64, the block one host is usually given.
func (g *failureGate) client(r *http.Request) string {
	addr, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		// Not an IP peer (a Unix socket): one budget for all of it.
		return r.RemoteAddr
	}
	ip := addr.Addr().Unmap()
	if g.trustedProxy(ip) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := parseHop(strings.TrimSpace(hops[i]))
			if err != nil {
				// What a proxy did not write cannot be trusted further.
				break
			}
			ip = hop.Unmap()
			if !g.trustedProxy(ip) {
				break
			}
		}
	}
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// secondsText is "N seconds", or "1 second".
func secondsText(d time.Duration) string {
	if n := seconds(d); n != 1 {
		return strconv.Itoa(n) + " seconds"
	}
	return "1 second"
}

// parseHop reads an address of X-Forwarded-For, which some proxies write with its port.
func parseHop(s string) (netip.Addr, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), nil
	}
	return netip.ParseAddr(s)
}

func (g *failureGate) trustedProxy(ip netip.Addr) bool {
	for _, p := range g.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// AuthFailureGate is the limit of AuthFailures for a handler that authenticates bearer keys
// on its own (the MCP endpoint): pass each authentication error through Failed. Built from the
// same AuthFailures as the API's (the same Limiter), it spends the same per-address budget.
// Nil when the limit is off; Failed of a nil gate returns the error as it is.
type AuthFailureGate = failureGate

// NewAuthFailureGate returns the gate of cfg.
func NewAuthFailureGate(cfg AuthFailures, log *slog.Logger) *AuthFailureGate {
	if log == nil {
		log = slog.Default()
	}
	return newFailureGate(cfg, time.Now, log)
}

// Failed is the gate's answer to an authentication error: a failure (UNAUTHORIZED) spends the
// client address's budget and, past it, becomes RATE_LIMITED with a retry delay.
func (g *failureGate) Failed(r *http.Request, err error) error { return g.failed(r, err) }
