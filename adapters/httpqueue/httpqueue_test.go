package httpqueue_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/adapters/httpqueue"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/core/workqueue/workqueuetest"
	"github.com/mediajobs/mediajobs/validator"
)

const token = "worker-token-of-the-test"

// logBuffer is a log the test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// serve runs the REST API, /internal/runner included when workerToken is set, over a fresh
// in-memory control plane.
func serve(t *testing.T, workerToken string, log *logBuffer) (*servicetest.Harness, string) {
	t.Helper()
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	h := servicetest.New(t, servicetest.Options{BaseURL: srv.URL, Types: types, WorkerToken: workerToken})
	workers := h.Workers
	if workerToken == "" {
		workers = nil
	}
	logger := slog.New(slog.DiscardHandler)
	if log != nil {
		logger = slog.New(slog.NewTextHandler(log, nil))
	}
	handler = httpapi.New(httpapi.UseCases{Auth: h.Auth, Submit: h.Submit, Jobs: h.Jobs, Cancel: h.Cancel, Batches: h.Batches,
		Uploads: h.Uploads, Webhooks: h.Webhooks, Credits: h.Credits, Types: types, Runs: h.Runs, Workers: workers, Idempotency: h.Idempotency},
		httpapi.Options{Verifier: noVerifier{}, Validate: validator.Validate, OpenAPI: contracts.OpenAPIJSON(),
			Logger: logger})
	return h, srv.URL
}

type noVerifier struct{}

func (noVerifier) Verify(urlsign.Kind, string, string, string, time.Time) error { return nil }
func (noVerifier) VerifyMember(string, string, time.Time) (time.Time, error)    { return time.Time{}, nil }
func (noVerifier) MemberToken(string, time.Time, time.Time) string              { return "t" }

func TestSuite(t *testing.T) {
	t.Parallel()
	workqueuetest.TestQueue(t, workqueuetest.Features{}, func(t *testing.T) workqueuetest.Harness {
		h, url := serve(t, token, nil)
		c, err := httpqueue.New(httpqueue.Config{URL: url, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return h.QueueHarness(t, c)
	})
}

// A missing or wrong worker token is refused, and the refusal is logged with the caller.
func TestWorkerTokenIsRequired(t *testing.T) {
	t.Parallel()
	var log logBuffer
	h, url := serve(t, token, &log)
	qh := h.QueueHarness(t, nil)
	qh.Submit(t, job.ClassCPU)
	for _, bad := range []string{"wrong", token + "x", strings.ToUpper(token)} {
		c, err := httpqueue.New(httpqueue.Config{URL: url, Token: bad})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1}); !errors.Is(err, httpqueue.ErrUnauthorized) {
			t.Fatalf("token %q: %v", bad, err)
		}
	}
	resp, err := http.Post(url+"/internal/runner/claim", "application/json", strings.NewReader(`{"class":"cpu","max":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	if n := strings.Count(log.String(), "runner call refused"); n != 4 {
		t.Fatalf("%d refusals logged, want 4:\n%s", n, log.String())
	}
	// Nothing was claimed.
	c, _ := httpqueue.New(httpqueue.Config{URL: url, Token: token})
	if as, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 5}); err != nil || len(as) != 1 {
		t.Fatalf("the right token claims the job: %v %v", as, err)
	}
}

// Without a worker token the control plane takes no remote workers: the routes are not there.
func TestNoWorkerTokenNoRoutes(t *testing.T) {
	t.Parallel()
	_, url := serve(t, "", nil)
	c, _ := httpqueue.New(httpqueue.Config{URL: url, Token: token})
	_, err := c.Claim(context.Background(), workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
	if err == nil || !strings.Contains(err.Error(), "takes no remote workers") {
		t.Fatalf("claim: %v", err)
	}
}

func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	for _, cfg := range []httpqueue.Config{{URL: "nats://x:4222", Token: "t"}, {URL: "http://x", Token: ""}, {URL: "x", Token: "t"}} {
		if _, err := httpqueue.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// A control plane that cannot be reached, or a gateway in front of one that answers that none
// is available, is workqueue.ErrUnavailable: the caller may send the same call again.
func TestUnavailableControlPlane(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(gateway.Close)
	for _, base := range []string{downURL, gateway.URL} {
		q, err := httpqueue.New(httpqueue.Config{URL: base, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		_, err = q.Heartbeat(context.Background(), workqueue.Beat{Lease: workqueue.Lease{JobID: "job_1", Attempt: 1, Token: "t"}})
		if !errors.Is(err, workqueue.ErrUnavailable) {
			t.Errorf("heartbeat to %s: %v, want ErrUnavailable", base, err)
		}
		q.CloseIdleConnections()
	}
}

// TestOpenGivesUpOnAnAnswerThatNeverBegins: an asset's read whose answer does not begin (its
// connection died under it, as in a network cut) is given up as unavailable within
// openAnswerWithin, for the runner to try again, and the next read on a new connection
// succeeds. Not parallel: it sets the package's wait.
func TestOpenGivesUpOnAnAnswerThatNeverBegins(t *testing.T) {
	defer httpqueue.SetOpenAnswerWithin(200 * time.Millisecond)()
	var calls atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			select { // the first answer never begins
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = w.Write([]byte("asset"))
	}))
	defer srv.Close()
	defer close(release)
	f := httpqueue.NewFiles("mjw_token", nil)
	defer f.CloseIdleConnections()
	l := workqueue.Lease{JobID: "job_1", Attempt: 1, Token: "t"}
	began := time.Now()
	if _, err := f.Open(context.Background(), srv.URL+"/a", l); !errors.Is(err, workqueue.ErrUnavailable) {
		t.Fatalf("an answer that never began: %v, want unavailable", err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("given up after %v", took)
	}
	r, err := f.Open(context.Background(), srv.URL+"/a", l)
	if err != nil {
		t.Fatalf("the next read: %v", err)
	}
	defer r.Close()
	if b, _ := io.ReadAll(r); string(b) != "asset" {
		t.Fatalf("read %q", b)
	}
}
