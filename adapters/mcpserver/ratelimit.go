package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/core/account"
)

// budget spends the account's request budget for a POST that calls tools, before the SDK reads
// it, through the gate REST calls too (one budget per account, ratelimit.Key): one request per
// tools/call message it carries (a JSON-RPC batch, which protocol versions before 2025-06-18
// allow, may carry several). Over the budget the POST is answered as REST answers: 429
// RATE_LIMITED with Retry-After and the error envelope (503 SERVICE_UNAVAILABLE when the
// limiter's backend fails), so no tool runs; a call within it carries the RateLimit-* headers.
// Protocol traffic (initialize, tools/list, notifications) spends nothing and carries none.
//
// It must run before the SDK because the SDK writes its 200 and the JSON-RPC response as soon
// as a tool returns: a tool can only answer a refusal as a tool error, never as an HTTP status.
func (h *Handler) budget(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := r.Context().Value(accountKey{}).(account.Account)
		if !ok || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		// jsonRPCErrors has read the body, bounded, into memory.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		for range toolCalls(body) {
			d, err := h.uc.RateLimit.Allow(r.Context(), a)
			httpapi.SetRateLimitHeaders(w.Header(), d)
			if err != nil {
				httpapi.WriteError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// toolCalls counts the tools/call messages of a POST body: a JSON-RPC message or a batch of
// them, read as the SDK reads them (its readBatch and jsonrpc.DecodeMessage, whose decoder
// matches keys by case, where encoding/json would take "METHOD" for "method"). jsonRPCErrors
// has refused a body that is not one JSON value. A body that is neither counts none; the SDK
// refuses it.
func toolCalls(body []byte) int {
	var raws []json.RawMessage // copies: a RawMessage decoded into would write over body
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &raws) != nil {
			return 0
		}
	} else {
		raws = []json.RawMessage{body}
	}
	n := 0
	for _, raw := range raws {
		if msg, err := jsonrpc.DecodeMessage(raw); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
				n++
			}
		}
	}
	return n
}
