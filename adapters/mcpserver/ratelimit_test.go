package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	memlimit "github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/ratelimit"
)

// rpcAnswer is the HTTP answer to one raw POST.
type rpcAnswer struct {
	status int
	header http.Header
	body   string
}

// rpc POSTs a raw JSON-RPC body to the endpoint with the account's key, as a client of
// protocolVersion.
func rpc(t *testing.T, b *testBundle, protocolVersion, body string) rpcAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rpcAnswer{status: resp.StatusCode, header: resp.Header, body: string(got)}
}

const (
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	listTools  = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	getAccount = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_account","arguments":{}}}`
	submitJob  = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"submit_job","arguments":{"type":"ffmpeg","params":{"command":"ffmpeg -f lavfi -i testsrc=d=1 out.mp4"}}}}`
)

// A tools/call spends one request of the account's budget, the one REST spends (same limiter,
// same key); over it, the POST is answered as REST answers, 429 RATE_LIMITED with Retry-After,
// the RateLimit-* headers and the error envelope, and the tool does not run. Protocol traffic
// spends nothing.
func TestRateLimitIsShared(t *testing.T) {
	t.Parallel()
	lim := memlimit.NewMemory()
	b := setup(t, setupOpts{limiter: lim, perMinute: 3})
	ctx := context.Background()
	// A REST request spends from the same budget, under the same key.
	if d, err := lim.Allow(ctx, ratelimit.Key(b.acct.ID), 3); err != nil || !d.Allowed {
		t.Fatalf("the first request was refused: %+v %v", d, err)
	}
	for _, body := range []string{initialize, listTools, initialize, listTools} {
		if a := rpc(t, b, "2025-06-18", body); a.status != http.StatusOK || a.header.Get("RateLimit-Limit") != "" {
			t.Fatalf("protocol traffic: %d, RateLimit-Limit %q: %s", a.status, a.header.Get("RateLimit-Limit"), a.body)
		}
	}
	for i, left := range []string{"1", "0"} {
		a := rpc(t, b, "2025-06-18", getAccount)
		if a.status != http.StatusOK || !strings.Contains(a.body, `"result"`) || strings.Contains(a.body, `"isError":true`) ||
			a.header.Get("RateLimit-Limit") != "3" || a.header.Get("RateLimit-Remaining") != left || a.header.Get("RateLimit-Reset") != "60" {
			t.Fatalf("call %d within the budget: %d %v %s", i+1, a.status, a.header, a.body)
		}
	}

	a := rpc(t, b, "2025-06-18", submitJob)
	retry, err := strconv.Atoi(a.header.Get("Retry-After"))
	if a.status != http.StatusTooManyRequests || err != nil || retry < 1 || retry > 60 || a.header.Get("RateLimit-Remaining") != "0" ||
		!strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Fatalf("over the budget: %d %v %s; want 429 with Retry-After and RateLimit-Remaining 0", a.status, a.header, a.body)
	}
	var env struct {
		Error struct {
			Code    problem.Code `json:"code"`
			Message string       `json:"message"`
		} `json:"error"`
	}
	want := fmt.Sprintf("the free plan allows 3 requests per minute, shared by REST and MCP; retry after %d seconds", retry)
	if err := json.Unmarshal([]byte(a.body), &env); err != nil || env.Error.Code != problem.CodeRateLimited || env.Error.Message != want {
		t.Errorf("over the budget, body %s; want {error: {RATE_LIMITED, %q}}", a.body, want)
	}
	if page, _ := b.h.Store.List(ctx, job.ListParams{AccountID: b.acct.ID}); len(page.Jobs) != 0 {
		t.Error("a submit_job refused by the rate limit stored a job")
	}
	// The budget is the account's, whichever access point spends it.
	if d, _ := lim.Allow(ctx, ratelimit.Key(b.acct.ID), 3); d.Allowed {
		t.Error("REST was allowed a request after MCP spent the budget")
	}

	// The SDK's client sees a refused call as an error and keeps its session.
	cs := mustConnect(t, b.url, b.key, "")
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_account", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("the SDK client's call over the budget: %v; want Too Many Requests", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("the session after a refused call: %v", err)
	}
}

// A JSON-RPC batch (protocol versions before 2025-06-18) spends one request per tools/call it
// carries; one that the budget cannot cover is refused whole.
func TestRateLimitCountsEveryCallOfABatch(t *testing.T) {
	t.Parallel()
	lim := memlimit.NewMemory()
	b := setup(t, setupOpts{limiter: lim, perMinute: 3})
	a := rpc(t, b, "2025-03-26", "["+getAccount+","+listTools+","+strings.Replace(getAccount, `"id":3`, `"id":5`, 1)+"]")
	if a.status != http.StatusOK || a.header.Get("RateLimit-Remaining") != "1" || strings.Count(a.body, `"jsonrpc":"2.0"`) != 3 {
		t.Fatalf("a batch of two calls and a listing, budget 3: %d %v, %d answers; want 200 with 1 left and 3 answers: %s",
			a.status, a.header, strings.Count(a.body, `"jsonrpc":"2.0"`), a.body)
	}
	a = rpc(t, b, "2025-03-26", "["+getAccount+","+strings.Replace(getAccount, `"id":3`, `"id":5`, 1)+"]")
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "RATE_LIMITED") {
		t.Fatalf("a batch of two calls with 1 left: %d %v %s; want 429 RATE_LIMITED", a.status, a.header, a.body)
	}
}

// A body the budget and the SDK could read apart runs no tool unspent: data after the message
// (which the SDK's decoder ignores) is refused before either reads it, and keys that differ
// from "method" by case only (which encoding/json would take for it) are read by the SDK's rule.
func TestRateLimitCountsWhatTheSDKRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		refused    bool // 400 -32700 before the SDK
	}{
		{"data after the message", getAccount + ` x`, true},
		{"half a surrogate pair", strings.Replace(getAccount, `"arguments":{}`, `"arguments":{},"x":"\ud800"`, 1), true},
		{"a second message after the first", getAccount + getAccount, true},
		{"a batch with data after it", "[" + getAccount + "] x", true},
		{"METHOD beside method", strings.Replace(getAccount, `"method":"tools/call"`, `"method":"tools/call","METHOD":"x"`, 1), false},
		{"METHOD after method", strings.Replace(getAccount, `"method":"tools/call"`, `"METHOD":"x","method":"tools/call"`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{limiter: memlimit.NewMemory(), perMinute: 2})
			ran := 0
			for range 4 {
				a := rpc(t, b, "2025-06-18", tc.body)
				switch {
				case tc.refused && (a.status != http.StatusBadRequest || !strings.Contains(a.body, "-32700")):
					t.Fatalf("%d %s; want 400 with a -32700 parse error", a.status, a.body)
				case a.status == http.StatusOK && strings.Contains(a.body, `"result"`):
					ran++
				}
			}
			if ran > 2 {
				t.Errorf("%d tool calls ran on a budget of 2 a minute", ran)
			}
			if !tc.refused && ran != 2 {
				t.Errorf("%d tool calls ran; want the 2 the budget covers", ran)
			}
		})
	}
}

// With the limiter's backend down, MCP fails closed exactly as REST does: 503 with Retry-After,
// and the tool does not run.
func TestRateLimiterDownFailsClosed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{limiter: brokenLimiter{}, perMinute: 30})
	a := rpc(t, b, "2025-06-18", submitJob)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") != "5" || !strings.Contains(a.body, `"SERVICE_UNAVAILABLE"`) ||
		strings.Contains(a.body, "6379") || a.header.Get("RateLimit-Limit") != "" {
		t.Fatalf("got %d %v %s; want 503 SERVICE_UNAVAILABLE with Retry-After 5", a.status, a.header, a.body)
	}
	if page, _ := b.h.Store.List(context.Background(), job.ListParams{AccountID: b.acct.ID}); len(page.Jobs) != 0 {
		t.Fatal("a call refused for the limiter's outage stored a job")
	}
	if a := rpc(t, b, "2025-06-18", initialize); a.status != http.StatusOK {
		t.Fatalf("initialize with the limiter down: %d %s; protocol traffic spends nothing", a.status, a.body)
	}
}

type brokenLimiter struct{}

func (brokenLimiter) Allow(context.Context, string, int) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, errors.New("dial tcp 127.0.0.1:6379: connection refused")
}
