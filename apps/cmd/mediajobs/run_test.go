package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestRunInterruptedDuringSubmit: a Ctrl-C while the submit is under way, the job made on the
// service but its answer not yet read, waits for the answer and cancels the job it names,
// rather than leaving it to run unwatched. CI met that race in the priority test.
func TestRunInterruptedDuringSubmit(t *testing.T) {
	t.Parallel()
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/ffmpeg/validate":
			_, _ = w.Write([]byte(`{"data":{"valid":true}}`))
		case r.Method == http.MethodPost && r.URL.Path == "/jobs":
			interrupt() // the user presses Ctrl-C while the service makes the job
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"data":{"id":"job_made","status":"waiting"}}`))
		case r.Method == http.MethodPost && r.URL.Path == "/jobs/job_made/cancel":
			_, _ = w.Write([]byte(`{"id":"job_made","status":"cancelled","type":"ffmpeg","createdAt":1}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"NOT_FOUND","message":"not in this test"}}`))
		}
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := runRun(ctx, []string{"--server", srv.URL, "--key", "mj_test",
		"ffmpeg -f lavfi -i testsrc=duration=1 -frames:v 1 one.png"}, &stdout, &stderr)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "POST /jobs/job_made/cancel"; !strings.Contains(strings.Join(seen, "\n"), want) {
		t.Errorf("requests %q; want %q among them; stderr:\n%s", seen, want, stderr.String())
	}
	if !strings.Contains(stderr.String(), "job_made cancelled") {
		t.Errorf("stderr does not say the job was cancelled:\n%s", stderr.String())
	}
}
