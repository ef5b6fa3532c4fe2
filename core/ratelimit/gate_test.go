package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// scripted answers Allow from a list, or fails.
type scripted struct {
	d   ratelimit.Decision
	err error
	got []string
}

func (s *scripted) Allow(_ context.Context, key string, perMinute int) (ratelimit.Decision, error) {
	s.got = append(s.got, key)
	s.d.Limit = perMinute
	return s.d, s.err
}

func TestGate(t *testing.T) {
	t.Parallel()
	acct := account.Account{ID: "acc_1", Plan: account.PlanFree}
	tests := []struct {
		name      string
		limiter   *scripted
		wantCode  problem.Code
		wantRetry time.Duration
		wantMsg   string
	}{
		{"within the budget", &scripted{d: ratelimit.Decision{Allowed: true, Remaining: 29}}, "", 0, ""},
		{"over it: 429 with the wait rounded up to a second", &scripted{d: ratelimit.Decision{RetryAfter: 300 * time.Millisecond}},
			problem.CodeRateLimited, time.Second, "the free plan allows 30 requests per minute, shared by REST and MCP; retry after 1 second"},
		{"over it by seconds", &scripted{d: ratelimit.Decision{RetryAfter: 1700 * time.Millisecond}},
			problem.CodeRateLimited, 2 * time.Second, "retry after 2 seconds"},
		{"rounded up, never down: waiting that long is enough", &scripted{d: ratelimit.Decision{RetryAfter: 59400 * time.Millisecond}},
			problem.CodeRateLimited, time.Minute, "retry after 60 seconds"},
		{"backend down: fail closed with 503", &scripted{err: errors.New("dial tcp 127.0.0.1:6379: connection refused")},
			problem.CodeUnavailable, 5 * time.Second, "cannot be checked right now"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := ratelimit.NewGate(tc.limiter, func(account.Account) int { return 30 }, slog.New(slog.DiscardHandler))
			_, err := g.Allow(context.Background(), acct)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			p, ok := problem.As(err)
			if !ok || p.Code != tc.wantCode || p.RetryAfter != tc.wantRetry || !strings.Contains(p.Message, tc.wantMsg) {
				t.Fatalf("got %#v; want %s, retry %s, message containing %q", err, tc.wantCode, tc.wantRetry, tc.wantMsg)
			}
			if strings.Contains(p.Message, "127.0.0.1") {
				t.Errorf("the message leaks the backend's address: %q", p.Message)
			}
			if len(tc.limiter.got) != 1 || tc.limiter.got[0] != ratelimit.Key(acct.ID) {
				t.Errorf("limiter keys %v", tc.limiter.got)
			}
		})
	}
}

// An outage logs once per interval, not once per refused request.
func TestGateLogsAnOutageOncePerInterval(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	g := ratelimit.NewGate(&scripted{err: errors.New("redis down")}, func(account.Account) int { return 30 },
		slog.New(slog.NewTextHandler(&buf, nil)))
	for range 1000 {
		_, _ = g.Allow(context.Background(), account.Account{ID: "a"})
	}
	if n := strings.Count(buf.String(), "rate limiter unavailable"); n != 1 {
		t.Fatalf("%d log lines for 1000 refusals in one interval:\n%s", n, buf.String())
	}
}
