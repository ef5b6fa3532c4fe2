package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/problem"
	core "github.com/mediajobs/mediajobs/core/ratelimit"
	"github.com/mediajobs/mediajobs/core/service"
)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	perMinute := func(a account.Account) int { return billing.Default().Limits(a.Plan).RequestsPerMinute }
	gate := core.NewGate(ratelimit.NewMemory(), perMinute, nil)
	b := setup(t, setupOpts{authenticated: []httpapi.Middleware{httpapi.RateLimit(gate)}})
	for i := range 30 {
		res := b.do(t, request{method: "GET", path: "/account", key: b.key})
		if res.status != http.StatusOK {
			t.Fatalf("request %d: status %d, body %s", i+1, res.status, res.body)
		}
		if got := res.header.Get("RateLimit-Remaining"); got != jsonInt(int64(29-i)) || res.header.Get("RateLimit-Limit") != "30" {
			t.Fatalf("request %d: RateLimit-Limit %q, RateLimit-Remaining %q", i+1, res.header.Get("RateLimit-Limit"), got)
		}
	}
	res := b.do(t, request{method: "POST", path: "/jobs", key: b.key, body: []byte(`{"type":"ffmpeg","params":{"command":"ffmpeg -i a.mp4 b.mp4"}}`)})
	// The budget is back a minute after the first request, not in a share of it: Retry-After
	// is the rest of that minute (however long the 30 requests took), RateLimit-Reset the minute
	// of the 30th.
	if retry, err := strconv.Atoi(res.header.Get("Retry-After")); res.status != http.StatusTooManyRequests || err != nil ||
		retry < 50 || retry > 60 || res.header.Get("RateLimit-Reset") != "60" || res.header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("31st request: status %d, headers %v, body %s", res.status, res.header, res.body)
	}
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(res.body, &env); err != nil || env.Error.Code != "RATE_LIMITED" {
		t.Fatalf("31st request body %s", res.body)
	}
	// Another account has its own budget; unauthenticated routes spend none.
	if res := b.do(t, request{method: "GET", path: "/account", key: b.otherKey}); res.status != http.StatusOK {
		t.Fatalf("other account: status %d", res.status)
	}
	if res := b.do(t, request{method: "GET", path: "/healthz"}); res.status != http.StatusOK || res.header.Get("RateLimit-Limit") != "" {
		t.Fatalf("healthz: status %d, RateLimit-Limit %q", res.status, res.header.Get("RateLimit-Limit"))
	}
}

// When the limiter's backend fails, the gate fails closed: 503 with Retry-After, the same
// answer MCP gives.
func TestRateLimiterDownFailsClosed(t *testing.T) {
	t.Parallel()
	gate := core.NewGate(brokenLimiter{}, func(account.Account) int { return 30 }, slog.New(slog.DiscardHandler))
	b := setup(t, setupOpts{authenticated: []httpapi.Middleware{httpapi.RateLimit(gate)}})
	res := b.do(t, request{method: "POST", path: "/jobs", key: b.key, body: []byte(`{"type":"ffmpeg","params":{"command":"ffmpeg -f lavfi -i testsrc=d=1 out.mp4"}}`)})
	if code, msg := res.errorBody(t); res.status != http.StatusServiceUnavailable || code != problem.CodeUnavailable ||
		res.header.Get("Retry-After") != "5" || strings.Contains(msg, "6379") {
		t.Fatalf("status %d, Retry-After %q, body %s", res.status, res.header.Get("Retry-After"), res.body)
	}
	if b.jobCount(t) != 0 {
		t.Fatal("a request refused for the limiter's outage stored a job")
	}
}

type brokenLimiter struct{}

func (brokenLimiter) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{}, errors.New("dial tcp 127.0.0.1:6379: connection refused")
}

func TestAccountLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// A free account with exactly its starter grant: the ledger holds that one entry.
	acct, key := b.h.Open(t, "acct_ledger", account.PlanFree, 600)
	for _, c := range []service.Credit{
		{AccountID: acct.ID, Kind: billing.KindGrant, Amount: 100, Note: "welcome"},
		{AccountID: acct.ID, Kind: billing.KindPurchase, Pack: "small"},
	} {
		if _, err := b.h.Credits.AddCredits(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	res := b.do(t, request{method: "GET", path: "/account/ledger?limit=1", key: key})
	var page struct {
		Data []struct {
			Kind   string
			Amount struct{ Amount int64 }
			Note   string
		}
		Pagination struct{ NextCursor *string }
	}
	if err := json.Unmarshal(res.body, &page); err != nil || res.status != http.StatusOK {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	if len(page.Data) != 1 || page.Data[0].Kind != "purchase" || page.Data[0].Amount.Amount != 5000 || page.Pagination.NextCursor == nil {
		t.Fatalf("first page %s", res.body)
	}
	res = b.do(t, request{method: "GET", path: "/account/ledger?cursor=" + *page.Pagination.NextCursor, key: key})
	if err := json.Unmarshal(res.body, &page); err != nil || res.status != http.StatusOK {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	var kinds []string
	for _, e := range page.Data {
		kinds = append(kinds, e.Kind+":"+e.Note)
	}
	if d := cmp.Diff([]string{"grant:welcome", "grant:starter grant"}, kinds); d != "" || page.Pagination.NextCursor != nil {
		t.Fatalf("second page (-want +got):\n%s\n%s", d, res.body)
	}
	res = b.do(t, request{method: "GET", path: "/account", key: key})
	var acc struct {
		Data struct{ Balance struct{ Amount int64 } }
	}
	if err := json.Unmarshal(res.body, &acc); err != nil || acc.Data.Balance.Amount != 5700 {
		t.Fatalf("account %s", res.body)
	}
	if res := b.do(t, request{method: "GET", path: "/account/ledger?cursor=bad", key: b.key}); res.status != http.StatusBadRequest {
		t.Fatalf("bad cursor: status %d", res.status)
	}
	// The gate: an empty balance cannot pay the minimum charge.
	_, broke := b.h.Open(t, "acct_broke", account.PlanFree, 0)
	if res := b.do(t, request{method: "POST", path: "/jobs", key: broke,
		body: []byte(`{"type":"ffmpeg","params":{"command":"ffmpeg -f lavfi -i testsrc=d=1 out.mp4"}}`)}); res.status != http.StatusPaymentRequired {
		t.Fatalf("submit on an empty balance: status %d, body %s", res.status, res.body)
	}
}
