package httpapi_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/core/problem"
)

const wrongKey = "mj_0000000000000000000000000000000a"

// syncBuffer is a log sink that handlers of concurrent requests may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// authAttempt is one way to present a key: bearer on GET /jobs, or signing in.
type authAttempt struct {
	name string
	ok   int // the status of a valid key
	do   func(t *testing.T, b *testBundle, key string, header map[string]string) response
}

var authAttempts = []authAttempt{
	{"bearer", http.StatusOK, func(t *testing.T, b *testBundle, key string, header map[string]string) response {
		return b.do(t, request{method: "GET", path: "/jobs", key: key, header: header})
	}},
	{"sign-in", http.StatusCreated, func(t *testing.T, b *testBundle, key string, header map[string]string) response {
		return b.do(t, request{method: "POST", path: "/session", body: mustJSON(t, map[string]string{"apiKey": key}), header: header})
	}},
}

// fail makes one attempt with a wrong key and checks it is answered with status.
func (a authAttempt) fail(t *testing.T, b *testBundle, status int, header map[string]string) response {
	t.Helper()
	res := a.do(t, b, wrongKey, header)
	if res.status != status {
		t.Fatalf("%s with a wrong key: %d %s, want %d", a.name, res.status, res.body, status)
	}
	return res
}

// Failed authentications spend one budget per client address, shared by bearer keys and
// POST /session; past it they are 429 RATE_LIMITED with Retry-After, while a valid key from
// the same address keeps working, and the budget is whole again a minute after it was spent.
func TestFailedAuthLimited(t *testing.T) {
	t.Parallel()
	for _, spend := range authAttempts {
		t.Run(spend.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{authFailures: httpapi.AuthFailures{PerMinute: 3}, logger: slog.New(slog.DiscardHandler)})
			for range 3 {
				spend.fail(t, b, http.StatusUnauthorized, nil)
			}
			for _, a := range authAttempts {
				res := a.fail(t, b, http.StatusTooManyRequests, nil)
				code, msg := res.errorBody(t)
				if code != problem.CodeRateLimited || res.header.Get("Retry-After") != "60" || !strings.Contains(msg, "3 a minute") {
					t.Errorf("%s past the budget: %s %q, Retry-After %q; want RATE_LIMITED naming 3 a minute, Retry-After 60",
						a.name, code, msg, res.header.Get("Retry-After"))
				}
				if res := a.do(t, b, b.key, nil); res.status != a.ok {
					t.Errorf("%s with a valid key past the budget: %d %s, want %d", a.name, res.status, res.body, a.ok)
				}
			}
			// No failure comes back within the minute of the first three; then all three do.
			b.clock.Advance(59 * time.Second)
			if res := spend.fail(t, b, http.StatusTooManyRequests, nil); res.header.Get("Retry-After") != "1" {
				t.Errorf("a second before the minute is over: Retry-After %q, want 1", res.header.Get("Retry-After"))
			}
			b.clock.Advance(time.Second)
			for range 3 {
				spend.fail(t, b, http.StatusUnauthorized, nil)
			}
			spend.fail(t, b, http.StatusTooManyRequests, nil)
		})
	}
}

// An address over its budget is logged once a minute, with the address and no key.
func TestFailedAuthLoggedOncePerMinute(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	b := setup(t, setupOpts{authFailures: httpapi.AuthFailures{PerMinute: 2},
		logger: slog.New(slog.NewTextHandler(&log, nil))})
	lines := func() int { return strings.Count(log.String(), "too many failed authentications") }
	bearer := authAttempts[0]
	bearer.fail(t, b, http.StatusUnauthorized, nil)
	bearer.fail(t, b, http.StatusUnauthorized, nil)
	if n := lines(); n != 0 {
		t.Fatalf("%d lines logged within the budget:\n%s", n, log.String())
	}
	for range 20 {
		bearer.fail(t, b, http.StatusTooManyRequests, nil)
	}
	if n := lines(); n != 1 {
		t.Fatalf("%d lines logged for 20 refusals, want 1:\n%s", n, log.String())
	}
	b.clock.Advance(59 * time.Second)
	bearer.fail(t, b, http.StatusTooManyRequests, nil)
	if n := lines(); n != 1 {
		t.Fatalf("%d lines logged within a minute, want 1:\n%s", n, log.String())
	}
	b.clock.Advance(time.Second) // the budget is whole again
	bearer.fail(t, b, http.StatusUnauthorized, nil)
	bearer.fail(t, b, http.StatusUnauthorized, nil)
	bearer.fail(t, b, http.StatusTooManyRequests, nil)
	if n := lines(); n != 2 {
		t.Fatalf("%d lines logged after a minute, want 2:\n%s", n, log.String())
	}
	if s := log.String(); !strings.Contains(s, "client=127.0.0.1") || strings.Contains(s, wrongKey) || strings.Contains(s, wrongKey[:10]) {
		t.Fatalf("the log line must name the client address and nothing of the key:\n%s", s)
	}
}

// The address a failure counts against is the peer's, or, behind a trusted proxy, the nearest
// untrusted one of X-Forwarded-For; an IPv6 client is its /64.
func TestFailedAuthPerClientAddress(t *testing.T) {
	t.Parallel()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		spender string // X-Forwarded-For of the requests that spend the budget
		other   string // X-Forwarded-For of the next request
		shared  bool
	}{
		{"forwarded-for from an untrusted peer is ignored", nil, "198.51.100.1", "198.51.100.2", true},
		{"clients behind a trusted proxy", loopback, "198.51.100.1", "198.51.100.2", false},
		{"the same client behind a trusted proxy", loopback, "198.51.100.1", "198.51.100.1", true},
		{"trusted hops are skipped", loopback, "198.51.100.1, 127.0.0.5", "198.51.100.1", true},
		{"what the client wrote is not believed", loopback, "203.0.113.9, 198.51.100.1", "198.51.100.1", true},
		{"an address with its port", loopback, "198.51.100.1:4711", "198.51.100.1", true},
		{"one IPv6 /64", loopback, "2001:db8::1", "2001:db8::ffff:2", true},
		{"two IPv6 /64s", loopback, "2001:db8::1", "2001:db8:0:1::1", false},
		{"an IPv4-mapped address is its IPv4", loopback, "::ffff:198.51.100.1", "198.51.100.1", true},
		{"garbage ends the trust at the proxy", loopback, "nonsense", "also nonsense", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{authFailures: httpapi.AuthFailures{PerMinute: 2, TrustedProxies: tt.trusted},
				logger: slog.New(slog.DiscardHandler)})
			bearer := authAttempts[0]
			spender := map[string]string{"X-Forwarded-For": tt.spender}
			bearer.fail(t, b, http.StatusUnauthorized, spender)
			bearer.fail(t, b, http.StatusUnauthorized, spender)
			bearer.fail(t, b, http.StatusTooManyRequests, spender)
			want := http.StatusUnauthorized
			if tt.shared {
				want = http.StatusTooManyRequests
			}
			bearer.fail(t, b, want, map[string]string{"X-Forwarded-For": tt.other})
		})
	}
}

// A request with no credentials spends nothing, and the limit can be turned off.
func TestFailedAuthNotCounted(t *testing.T) {
	t.Parallel()
	t.Run("no credentials", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{authFailures: httpapi.AuthFailures{PerMinute: 1}})
		for range 5 {
			if res := b.do(t, request{method: "GET", path: "/jobs"}); res.status != http.StatusUnauthorized {
				t.Fatalf("no credentials: %d %s, want 401", res.status, res.body)
			}
		}
		authAttempts[0].fail(t, b, http.StatusUnauthorized, nil)
	})
	t.Run("limit off", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{authFailures: httpapi.AuthFailures{PerMinute: -1}})
		for range 100 {
			authAttempts[0].fail(t, b, http.StatusUnauthorized, nil)
		}
	})
}
