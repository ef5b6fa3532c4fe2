package logctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/logctx"
)

func TestHandlerAddsIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(logctx.NewHandler(slog.NewJSONHandler(&buf, nil))).With("component", "api")
	ctx := logctx.WithJob(logctx.WithRequest(context.Background(), "req_1"), "job_1")
	log.InfoContext(ctx, "job submitted")
	log.Info("no context")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), buf.Bytes())
	}
	var first, second map[string]any
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &second); err != nil {
		t.Fatal(err)
	}
	if first["request_id"] != "req_1" || first["job"] != "job_1" || first["component"] != "api" {
		t.Errorf("with context: %v", first)
	}
	if _, ok := second["request_id"]; ok {
		t.Errorf("without context: %v", second)
	}
	if got := logctx.Request(ctx); got != "req_1" {
		t.Errorf("Request = %q", got)
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	var seen string
	h := logctx.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = logctx.Request(r.Context()) }))
	for _, tt := range []struct{ sent, want string }{
		{"abc-123", "abc-123"},
		{"", "req_"},
		{"two words", "req_"},
		{strings.Repeat("x", 129), "req_"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		if tt.sent != "" {
			r.Header.Set(logctx.HeaderRequestID, tt.sent)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := w.Header().Get(logctx.HeaderRequestID)
		if !strings.HasPrefix(got, tt.want) || seen != got || (tt.want == "req_" && got == tt.sent) {
			t.Errorf("sent %q: answered %q, context %q", tt.sent, got, seen)
		}
	}
}
