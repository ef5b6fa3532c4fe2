package mcpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
)

// /mcp authenticates on its own and shares the API's limit on failed authentications: past the
// budget its 401 becomes 429 with Retry-After, and a valid key still passes.
func TestFailedAuthSharesTheAPIsLimit(t *testing.T) {
	t.Parallel()
	gate := httpapi.NewAuthFailureGate(httpapi.AuthFailures{PerMinute: 3}, slog.New(slog.DiscardHandler))
	b := setup(t, setupOpts{authFailed: gate.Failed})
	call := func(key string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, b.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp, string(body)
	}
	for i := range 3 {
		if resp, _ := call("mj_bad"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d within the budget: %d", i+1, resp.StatusCode)
		}
	}
	resp, body := call("mj_bad")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "RATE_LIMITED") ||
		strings.Contains(body, "UNAUTHORIZED") {
		t.Fatalf("past the budget: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := call(b.key); resp.StatusCode != http.StatusOK {
		t.Fatalf("a valid key past the budget: %d", resp.StatusCode)
	}
}
