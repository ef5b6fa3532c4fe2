package logctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
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
