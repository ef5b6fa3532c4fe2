package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/billing/billingtest"
	"github.com/mediajobs/mediajobs/core/service"
)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	perMinute := func(a account.Account) int { return billing.Default().Limits(a.Plan).RequestsPerMinute }
	b := setup(t, setupOpts{authenticated: []httpapi.Middleware{httpapi.RateLimit(ratelimit.NewMemory(), perMinute, nil)}})
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
	if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "2" || res.header.Get("RateLimit-Reset") == "" {
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

func TestAccountLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ledger := billingtest.NewMemory()
	b.svc.Ledger = ledger
	ctx := context.Background()
	for _, c := range []service.Credit{
		{AccountID: b.acct.ID, Kind: billing.KindGrant, Amount: 100, Note: "welcome"},
		{AccountID: b.acct.ID, Kind: billing.KindPurchase, Pack: "small"},
	} {
		if _, err := b.svc.AddCredits(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	res := b.do(t, request{method: "GET", path: "/account/ledger?limit=1", key: b.key})
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
	res = b.do(t, request{method: "GET", path: "/account/ledger?cursor=" + *page.Pagination.NextCursor, key: b.key})
	if err := json.Unmarshal(res.body, &page); err != nil || res.status != http.StatusOK {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	if d := cmp.Diff([]string{"grant"}, []string{page.Data[0].Kind}); d != "" || len(page.Data) != 1 || page.Pagination.NextCursor != nil {
		t.Fatalf("second page %s", res.body)
	}
	res = b.do(t, request{method: "GET", path: "/account", key: b.key})
	var acc struct {
		Data struct{ Balance struct{ Amount int64 } }
	}
	if err := json.Unmarshal(res.body, &acc); err != nil || acc.Data.Balance.Amount != 5100 {
		t.Fatalf("account %s", res.body)
	}
	if res := b.do(t, request{method: "GET", path: "/account/ledger?cursor=bad", key: b.key}); res.status != http.StatusBadRequest {
		t.Fatalf("bad cursor: status %d", res.status)
	}
	// The gate: an empty balance cannot pay the minimum charge.
	if res := b.do(t, request{method: "POST", path: "/jobs", key: b.otherKey,
		body: []byte(`{"type":"ffmpeg","params":{"command":"ffmpeg -f lavfi -i testsrc out.mp4"}}`)}); res.status != http.StatusPaymentRequired {
		t.Fatalf("submit on an empty balance: status %d, body %s", res.status, res.body)
	}
}
