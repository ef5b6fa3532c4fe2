package integration

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// The spec's request rate: "30 per minute (Free) ... REST and MCP; excess returns 429
// RATE_LIMITED with Retry-After".
const freePerMinute = 30

// rateAnswer is one answer of a request that the test client did not retry.
type rateAnswer struct {
	status int
	header http.Header
	body   []byte
}

// retryAfterSeconds is the answer's Retry-After, or -1.
func (a rateAnswer) retryAfterSeconds() int {
	n, err := strconv.Atoi(a.header.Get("Retry-After"))
	if err != nil {
		return -1
	}
	return n
}

// errorCode is the code of the answer's error envelope, or "".
func (a rateAnswer) errorCode() string {
	var env struct {
		Error apiError `json:"error"`
	}
	_ = json.Unmarshal(a.body, &env)
	return env.Error.Code
}

// rateClient sends requests as one account and never retries a 429; REST answers are checked
// against the contract.
type rateClient struct {
	t    *testing.T
	base string
	key  string
	rest *http.Client
	mcp  *http.Client
}

func newRateClient(t *testing.T, s *server, key string) *rateClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &rateClient{t: t, base: s.Base, key: key, rest: &http.Client{Transport: validating{t: t, next: tr}}, mcp: &http.Client{Transport: tr}}
}

func (c *rateClient) send(hc *http.Client, req *http.Request) rateAnswer {
	c.t.Helper()
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return rateAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// account is GET /account over REST.
func (c *rateClient) account() rateAnswer {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.base+"/account", nil)
	return c.send(c.rest, req)
}

// mcpPost POSTs one raw JSON-RPC message to /mcp, as a sessionless client of 2025-06-18 does.
func (c *rateClient) mcpPost(body string) rateAnswer {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	return c.send(c.mcp, req)
}

const (
	mcpGetAccount = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_account","arguments":{}}}`
	mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"1"}}}`
)

// spendFree spends a fresh Free account's minute with send, checking that each request passes
// with the RateLimit headers counting down, and returns when the first was sent.
func spendFree(t *testing.T, send func() rateAnswer) time.Time {
	t.Helper()
	first := time.Now()
	for i := range freePerMinute {
		a := send()
		if a.status != http.StatusOK || a.header.Get("RateLimit-Limit") != strconv.Itoa(freePerMinute) ||
			a.header.Get("RateLimit-Remaining") != strconv.Itoa(freePerMinute-1-i) {
			t.Fatalf("request %d of a Free account's %d: %d, RateLimit-Limit %q, RateLimit-Remaining %q: %.300s", i+1, freePerMinute,
				a.status, a.header.Get("RateLimit-Limit"), a.header.Get("RateLimit-Remaining"), a.body)
		}
	}
	return first
}

// checkRefused checks a refusal of the spent budget: 429 RATE_LIMITED in the error envelope, with
// a Retry-After that waits for the rest of the minute of the first request (to the second, and
// a second for the rounding), not for a share of the budget.
func checkRefused(t *testing.T, what string, a rateAnswer, first time.Time) {
	t.Helper()
	least := 60 - int(time.Since(first)/time.Second) - 1
	if a.status != http.StatusTooManyRequests || a.errorCode() != "RATE_LIMITED" || a.header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("%s: %d %v %.300s; want 429 RATE_LIMITED with RateLimit-Remaining 0", what, a.status, a.header, a.body)
	}
	if ra := a.retryAfterSeconds(); ra < least || ra > 60 {
		t.Fatalf("%s: Retry-After %q, want %d to 60: the budget is back when the minute of its first request is over",
			what, a.header.Get("Retry-After"), least)
	}
}

// TestRateLimitHoldsInEveryMinute: a Free key gets the spec's 30 requests a minute, and no more
// within that minute, however they are spread: after the 30th, requests keep being refused,
// with a Retry-After counting down to the end of the minute of the first, on the in-memory
// limiter and on Redis alike. A budget refilled continuously (GCRA, one every 2 s) lets a
// request through within 2 s and says so in its Retry-After.
func TestRateLimitHoldsInEveryMinute(t *testing.T) {
	t.Parallel()
	for _, limiter := range []string{"memory", "Redis"} {
		t.Run(limiter, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"MEDIAJOBS_RUNNER": "false"}
			if limiter == "Redis" {
				if c, err := net.DialTimeout("tcp", "127.0.0.1:6379", time.Second); err != nil {
					testenv.Missing(t, "Redis on 127.0.0.1:6379 (scripts/services.sh starts it)", err)
				} else {
					_ = c.Close()
				}
				env["MEDIAJOBS_REDIS_URL"] = "redis://127.0.0.1:6379/0"
			}
			s := startServer(t, serverOpts{Backend: sqliteBackend, Env: env})
			c := newRateClient(t, s, createAccount(t, s, "free").APIKey)
			first := spendFree(t, c.account)
			checkRefused(t, "request 31", c.account(), first)
			// Keep asking, at a client's pace, for 5 s: two refills of a 2 s share would pass.
			last := 61
			for time.Since(first) < 5*time.Second {
				// Time passing is what is under test, so this waits on the clock: a client's pace.
				time.Sleep(250 * time.Millisecond)
				a := c.account()
				checkRefused(t, "a request "+time.Since(first).Round(time.Millisecond).String()+" after the first", a, first)
				if ra := a.retryAfterSeconds(); ra > last {
					t.Fatalf("Retry-After went up from %d to %d", last, ra)
				}
				last = a.retryAfterSeconds()
			}
		})
	}
}

// TestRateLimitSharedByRESTAndMCP: REST and MCP spend one budget per account, and MCP refuses a
// tool call over it as REST refuses a request: HTTP 429 RATE_LIMITED with Retry-After and the
// error envelope, not a 200 carrying a tool error. Protocol traffic spends nothing.
func TestRateLimitSharedByRESTAndMCP(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_RUNNER": "false"}})

	t.Run("REST spends, MCP is refused", func(t *testing.T) {
		t.Parallel()
		c := newRateClient(t, s, createAccount(t, s, "free").APIKey)
		first := spendFree(t, c.account)
		checkRefused(t, "an MCP tools/call after REST spent the minute", c.mcpPost(mcpGetAccount), first)
		if a := c.mcpPost(mcpInitialize); a.status != http.StatusOK {
			t.Fatalf("initialize with the budget spent: %d %.300s; protocol traffic spends nothing", a.status, a.body)
		}
	})

	t.Run("MCP spends, REST is refused", func(t *testing.T) {
		t.Parallel()
		c := newRateClient(t, s, createAccount(t, s, "free").APIKey)
		first := spendFree(t, func() rateAnswer {
			a := c.mcpPost(mcpGetAccount)
			if a.status == http.StatusOK && (!strings.Contains(string(a.body), `"result"`) || strings.Contains(string(a.body), `"isError":true`)) {
				t.Fatalf("get_account over MCP within the budget: %.300s", a.body)
			}
			return a
		})
		checkRefused(t, "a REST request after MCP spent the minute", c.account(), first)
		checkRefused(t, "one more MCP tools/call", c.mcpPost(mcpGetAccount), first)
	})
}
