package httpapi_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/batch/batchtest"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/validator"
)

const maxUpload = 1 << 10

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// contract is the OpenAPI document every response of these tests is checked against.
var contract = sync.OnceValues(func() (*contracts.ResponseValidator, error) {
	return contracts.NewResponseValidator(context.Background())
})

type testBundle struct {
	url      string
	h        *servicetest.Harness
	jobs     *batchtest.Memory // jobs, batches and the outbox
	clock    *clocktest.Fake
	acct     account.Account
	key      string // the API key of acct
	otherKey string // the API key of another account
	ready    *readiness
}

type readiness struct {
	mu  sync.Mutex
	err error
}

func (r *readiness) check(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

type setupOpts struct {
	// allowPrivate is Options.AllowPrivateNetworks.
	allowPrivate  []netip.Prefix
	authenticated []httpapi.Middleware
	workerToken   string
	secureCookies bool
	maxJSONBody   int64 // 0 means 4 KiB
	authFailures  httpapi.AuthFailures
	logger        *slog.Logger
}

func setup(t *testing.T, opts ...setupOpts) *testBundle {
	t.Helper()
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)

	signer, err := urlsign.New(srv.URL, []byte("test key of at least thirty-two bytes"))
	if err != nil {
		t.Fatal(err)
	}
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	h := servicetest.New(t, servicetest.Options{BaseURL: srv.URL, Types: types, Signer: signer,
		Blobs: &dirBlobs{dir: t.TempDir()}, MaxUpload: maxUpload, Start: t0, WorkerToken: o.workerToken})
	workers := h.Workers
	if o.workerToken == "" {
		workers = nil
	}
	b := &testBundle{url: srv.URL, h: h, jobs: h.Store, clock: h.Clock, ready: &readiness{}}
	b.acct, b.key = h.Open(t, "acct_a", account.PlanFree, 1000)
	_, b.otherKey = h.Open(t, "acct_b", account.PlanFree, 1000)

	handler = httpapi.New(httpapi.UseCases{Auth: h.Auth, Submit: h.Submit, Jobs: h.Jobs, Cancel: h.Cancel, Batches: h.Batches,
		Uploads: h.Uploads, Webhooks: h.Webhooks, Credits: h.Credits, Presets: h.Presets, Destinations: h.Destinations, Types: types, Runs: h.Runs, Workers: workers, Idempotency: h.Idempotency}, httpapi.Options{
		Verifier:             signer,
		Validate:             validator.Validate,
		MaxJSONBody:          cmp.Or(o.maxJSONBody, 4<<10),
		OpenAPI:              contracts.OpenAPIJSON(),
		Ready:                b.ready.check,
		Authenticated:        o.authenticated,
		AuthFailures:         o.authFailures,
		Logger:               o.logger,
		Now:                  b.clock.Now,
		SecureCookies:        o.secureCookies,
		AllowPrivateNetworks: o.allowPrivate,
	})
	return b
}

// request is one call of the API.
type request struct {
	method string
	path   string
	key    string // bearer key; empty sends none
	body   []byte
	header map[string]string
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// errorBody decodes { error: { code, message } }.
func (r response) errorBody(t *testing.T) (problem.Code, string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    problem.Code `json:"code"`
			Message string       `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return e.Error.Code, e.Error.Message
}

// data decodes { data: ... } into v.
func (r response) data(t *testing.T, v any) {
	t.Helper()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Data == nil {
		t.Fatalf("data body %q: %v", r.body, err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("data %s: %v", env.Data, err)
	}
}

// do sends req over loopback and checks the response against the OpenAPI document.
func (b *testBundle) do(t *testing.T, req request) response {
	t.Helper()
	target := req.path
	if !strings.HasPrefix(target, "http") {
		target = b.url + req.path
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequest(req.method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.body != nil && req.header["Content-Type"] == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		if v == "-" {
			hr.Header.Del(k)
			continue
		}
		hr.Header.Set(k, v)
	}
	if req.key != "" {
		hr.Header.Set("Authorization", "Bearer "+req.key)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	v, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(hr, resp); err != nil {
		t.Errorf("response breaks the contract: %v", err)
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: out}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jobCount is how many jobs of the account the store holds.
func (b *testBundle) jobCount(t *testing.T) int {
	t.Helper()
	page, err := b.jobs.List(context.Background(), job.ListParams{AccountID: b.acct.ID, Limit: job.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Jobs)
}

// seedJob stores a job of acct in the given status; a complete one gets the files, stored as
// blobs.
func (b *testBundle) seedJob(t *testing.T, status job.Status, files map[string]string) *job.Job {
	t.Helper()
	ctx := context.Background()
	j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: b.acct.ID, Type: ffmpegjob.Name,
		Params: json.RawMessage(`{"command":"ffmpeg -i https://example.com/a.mp4 out.mp4"}`), Class: job.ClassCPU,
		Timeout: time.Minute, Now: b.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	now := b.clock.Now()
	step := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	switch status {
	case job.StatusWaiting:
	case job.StatusCancelled:
		step(j.Cancel(now))
	default:
		step(j.Dispatch(now, time.Minute))
		step(j.Start(now, time.Minute))
		switch status {
		case job.StatusFailed:
			step(j.Fail(now, job.NewError(problem.CodeRunnerError, "ffmpeg exited with status 1", []byte("boom")), 10))
		case job.StatusComplete:
			var fs []job.File
			for name, content := range files {
				_, err := b.h.Blobs.Put(ctx, blob.OutputKey(j.AccountID, j.ID, name), strings.NewReader(content), 1<<20)
				step(err)
				fs = append(fs, job.File{Path: name, Size: int64(len(content))})
			}
			out, err := job.NewOutput(fs, nil, "")
			step(err)
			step(j.Complete(now, out, 1000))
		}
	}
	step(b.jobs.Create(ctx, j))
	return j
}

// dirBlobs is a blob.Store over a directory whose blobs are real files, so that downloads are
// served as from the local store.
type dirBlobs struct {
	dir string
}

func (d *dirBlobs) path(key string) string { return filepath.Join(d.dir, filepath.FromSlash(key)) }

func (d *dirBlobs) Put(_ context.Context, key string, r io.Reader, max int64) (int64, error) {
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	if max <= 0 {
		max = 1 << 40
	}
	n, err := io.Copy(f, io.LimitReader(r, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > max {
		err = blob.ErrTooLarge
	}
	if err != nil {
		_ = os.Remove(p)
		return 0, err
	}
	return n, nil
}

func (d *dirBlobs) Delete(_ context.Context, key string) error {
	if err := os.Remove(d.path(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (d *dirBlobs) Open(_ context.Context, key string) (blob.Blob, error) {
	f, err := os.Open(d.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, problem.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return fileBlob{File: f, size: st.Size(), mod: st.ModTime()}, nil
}

type fileBlob struct {
	*os.File
	size int64
	mod  time.Time
}

func (b fileBlob) Size() int64        { return b.size }
func (b fileBlob) ModTime() time.Time { return b.mod }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
