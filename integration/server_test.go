package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
)

// backend is a store the server runs on.
type backend string

const (
	sqliteBackend   backend = "SQLite"
	postgresBackend backend = "Postgres"
)

var backends = []backend{sqliteBackend, postgresBackend}

// forEachBackend runs fn as a parallel subtest per backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// serverOpts configure one server. Env adds MEDIAJOBS_* (and other) variables.
type serverOpts struct {
	Backend backend
	Env     map[string]string
	// Unthrottled raises every plan's request rate (see unthrottledPricing); tests of the rate
	// limit itself leave it off.
	Unthrottled bool
	// RelativeData starts the server in the data directory's parent with --data naming it
	// relatively, as make run does (./var).
	RelativeData bool
	// PrivateParent makes the data directory's parent 0700, as /root is for a checkout in root's
	// home: the sandbox user cannot reach the data directory.
	PrivateParent bool
	// Data is the data directory; empty: a fresh one.
	Data string
}

// unthrottledPricing writes the built-in pricing with every plan's request rate raised, so that
// polling clients and load runs measure the service, not the per-minute limit, and returns its
// path for MEDIAJOBS_PRICING.
func unthrottledPricing(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "core", "billing", "pricing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	plans, _ := p["plans"].(map[string]any)
	for _, pl := range plans {
		pl.(map[string]any)["requestsPerMinute"] = 100_000_000
	}
	out, _ := json.Marshal(p)
	path := filepath.Join(dir, "pricing.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// server is a running `mediajobs serve`.
type server struct {
	Base string
	Data string
	env  []string
	log  *lockedBuffer
	opts serverOpts
	addr string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// dataDir is a fresh directory the sandbox user can traverse to: the runner's work
// directories live inside it, and the sandbox runs as an unprivileged user.
func dataDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(dir); p != "/" && p != "."; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// startServer runs `mediajobs serve` on a free loopback port with a fresh data directory (and a
// fresh schema on Postgres), waits for /readyz, and stops it when the test ends. Its log is
// printed when the test fails.
func startServer(t testing.TB, opts serverOpts) *server {
	t.Helper()
	data := opts.Data
	if data == "" {
		data = dataDir(t)
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEDIAJOBS_") && !strings.HasPrefix(kv, "SSL_CERT_") {
			env = append(env, kv)
		}
	}
	if opts.Backend == postgresBackend {
		env = append(env, "MEDIAJOBS_DATABASE_URL="+pgtest.Schema(t, "it_"))
	}
	if _, ok := opts.Env["MEDIAJOBS_PRICING"]; opts.Unthrottled && !ok {
		env = append(env, "MEDIAJOBS_PRICING="+unthrottledPricing(t, filepath.Dir(data)))
	}
	for k, v := range opts.Env {
		env = append(env, k+"="+v)
	}
	if opts.PrivateParent {
		if err := os.Chmod(filepath.Dir(data), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	s := &server{Base: "http://" + addr, Data: data, env: env, log: &lockedBuffer{}, opts: opts, addr: addr}
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			t.Logf("server log (%s, %s):\n%s", opts.Backend, s.Base, tail(s.log.String(), 8000))
		}
	})
	s.start(t)
	return s
}

// start runs the server process and waits until it is ready.
func (s *server) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--addr", s.addr, "--data", s.Data)
	if s.opts.RelativeData {
		cmd = exec.Command(binary, "serve", "--addr", s.addr, "--data", "./"+filepath.Base(s.Data))
		cmd.Dir = filepath.Dir(s.Data)
	}
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mediajobs serve: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("mediajobs serve exited before it was ready:\n%s", s.log.String())
		default:
		}
		resp, err := http.Get(s.Base + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mediajobs serve not ready after 60 s (last error %v):\n%s", err, s.log.String())
		}
		time.Sleep(50 * time.Millisecond) // the poll interval of a wait on /readyz
	}
}

// stop sends SIGTERM and waits for the server to exit, killing it after 15 s.
func (s *server) stop(t testing.TB) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		t.Errorf("mediajobs serve did not stop within 15 s of SIGTERM")
	}
}

// kill ends the server with SIGKILL, as a crash would.
func (s *server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// createdAccount is what `mediajobs accounts create` prints.
type createdAccount struct {
	AccountID string `json:"accountId"`
	APIKey    string `json:"apiKey"`
}

// createAccount runs `mediajobs accounts create` against the server's store while it runs.
func createAccount(t testing.TB, s *server, plan string) createdAccount {
	t.Helper()
	cmd := exec.Command(binary, "accounts", "create", "--data", s.Data, "--plan", plan)
	cmd.Env = s.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mediajobs accounts create: %v\n%s", err, stderr.String())
	}
	var a createdAccount
	if err := json.Unmarshal(out, &a); err != nil || a.APIKey == "" || a.AccountID == "" {
		t.Fatalf("mediajobs accounts create printed %q: %v", out, err)
	}
	return a
}

// validating checks every response against the OpenAPI document and reports a mismatch as a
// test error.
type validating struct {
	t    testing.TB
	next http.RoundTripper
}

func (v validating) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := contract.Validate(req, resp); err != nil {
		v.t.Errorf("response does not match openapi.yaml: %v", err)
	}
	return resp, nil
}

// client talks to one server as one account (Key may be empty); every response it receives is
// validated against the contract.
type client struct {
	t    testing.TB
	Base string
	Key  string
	hc   *http.Client
}

func newClient(t testing.TB, s *server, key string) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	t.Cleanup(tr.CloseIdleConnections)
	return &client{t: t, Base: s.Base, Key: key, hc: &http.Client{
		Transport:     validating{t: t, next: tr},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// unchecked returns the client without the contract check of each response: a benchmark
// times the service as its clients see it, and the check (a walk of the OpenAPI schema per
// response, 1 to 6 ms on 2 cores) is the test's own cost.
func (c *client) unchecked() *client {
	cc := *c
	if v, ok := c.hc.Transport.(validating); ok {
		hc := *c.hc
		hc.Transport = v.next
		cc.hc = &hc
	}
	return &cc
}

// as returns a client of the same server with another key.
func (c *client) as(key string) *client {
	cc := *c
	cc.Key = key
	return &cc
}

// response is a finished exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request; body is JSON-encoded unless it is a []byte or an io.Reader. A target
// starting with http is absolute; anything else is relative to the server.
func (c *client) do(method, target string, body any, header http.Header) response {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case io.Reader:
		r = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(j)
		if header == nil {
			header = http.Header{}
		}
		if header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/json")
		}
	}
	if !strings.HasPrefix(target, "http") {
		target = c.Base + target
	}
	for attempt := 0; ; attempt++ {
		if seeker, ok := r.(io.Seeker); ok {
			_, _ = seeker.Seek(0, io.SeekStart)
		}
		req, err := http.NewRequest(method, target, r)
		if err != nil {
			c.t.Fatal(err)
		}
		for k, vs := range header {
			req.Header[k] = vs
		}
		if c.Key != "" && req.Header.Get("Authorization") == "" {
			req.Header.Set("Authorization", "Bearer "+c.Key)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			c.t.Fatalf("%s %s: %v", method, target, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			c.t.Fatalf("%s %s: reading body: %v", method, target, err)
		}
		// A polling client honours Retry-After; the plan's per-minute rate is not what these
		// tests are about.
		if resp.StatusCode == http.StatusTooManyRequests && attempt < 20 {
			time.Sleep(retryAfter(resp.Header)) // the server's own Retry-After, as a client honours it
			continue
		}
		return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
}

func retryAfter(h http.Header) time.Duration {
	var s int
	if _, err := fmt.Sscan(h.Get("Retry-After"), &s); err != nil || s <= 0 {
		return time.Second
	}
	return time.Duration(s) * time.Second
}

// decode unmarshals the body's data envelope into v and fails the test on a status other than
// want.
func (r response) decode(t testing.TB, want int, v any) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	if v == nil {
		return
	}
	env := struct {
		Data json.RawMessage `json:"data"`
	}{}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("data %s: %v", env.Data, err)
	}
}

// apiError is the error envelope's content.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorOf returns the error of a rejection and fails the test on a status other than want.
func (r response) errorOf(t testing.TB, want int) apiError {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	var env struct {
		Error apiError `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	return env.Error
}

// Job as GET /jobs/{id} shows it.
type jobView struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	Status      string    `json:"status"`
	Progress    *float64  `json:"progress"`
	Output      *output   `json:"output"`
	Error       *jobError `json:"error"`
	Cost        *cost     `json:"cost"`
	RetryOf     string    `json:"retryOf"`
	CreatedAt   int64     `json:"createdAt"`
	StartedAt   *int64    `json:"startedAt"`
	CompletedAt *int64    `json:"completedAt"`
}

type output struct {
	Data      json.RawMessage `json:"data"`
	File      *file           `json:"file"`
	Files     []file          `json:"files"`
	ExpiresAt *int64          `json:"expiresAt"`
}

type file struct {
	URL  string `json:"url"`
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size"`
	Meta *meta  `json:"meta"`
}

type meta struct {
	Format     string `json:"format"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	DurationMs int64  `json:"durationMs"`
}

type jobError struct {
	Code      string  `json:"code"`
	Message   string  `json:"message"`
	Detail    *string `json:"detail"`
	Retryable bool    `json:"retryable"`
}

type cost struct {
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Formatted string `json:"formatted"`
}

type created struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	RetryOf string `json:"retryOf"`
}

// ffmpegJob is the body of POST /jobs for an ffmpeg command.
func ffmpegJob(command string, inputs map[string]any, params map[string]any) map[string]any {
	p := map[string]any{"command": command}
	for k, v := range params {
		p[k] = v
	}
	body := map[string]any{"type": "ffmpeg", "params": p}
	if inputs != nil {
		body["inputs"] = inputs
	}
	return body
}

// submit posts a job and returns its ID; it must be accepted.
func (c *client) submit(body any) string {
	c.t.Helper()
	var cr created
	c.do(http.MethodPost, "/jobs", body, nil).decode(c.t, http.StatusCreated, &cr)
	if cr.Status != "waiting" || !strings.HasPrefix(cr.ID, "job_") {
		c.t.Fatalf("POST /jobs answered %+v, want a waiting job_", cr)
	}
	return cr.ID
}

func (c *client) job(id string) jobView {
	c.t.Helper()
	var j jobView
	c.do(http.MethodGet, "/jobs/"+id, nil, nil).decode(c.t, http.StatusOK, &j)
	return j
}

var terminal = map[string]bool{"complete": true, "failed": true, "cancelled": true}

// waitFor polls the job every 150 ms until cond holds, for at most a minute.
func (c *client) waitFor(id string, what string, cond func(jobView) bool) jobView {
	c.t.Helper()
	return c.waitWithin(id, what, 60*time.Second, cond)
}

// waitWithin is waitFor with a deadline of d.
func (c *client) waitWithin(id string, what string, d time.Duration, cond func(jobView) bool) jobView {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		j := c.job(id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("job %s: not %s after %v; last seen %+v", id, what, d, j)
		}
		if terminal[j.Status] {
			c.t.Fatalf("job %s ended %s before it was %s: %+v %s", id, j.Status, what, j, errorText(j))
		}
		time.Sleep(150 * time.Millisecond) // the poll interval of a wait on the job's state
	}
}

// waitTerminal follows the job until its status is terminal, for at most a minute: each GET
// /jobs/{id}?wait= answers once the job has ended, or after the wait with the job as it stands.
func (c *client) waitTerminal(id string) jobView {
	c.t.Helper()
	return c.waitTerminalWithin(id, time.Minute)
}

// waitTerminalWithin is waitTerminal for at most d: it hears of the job's end as it happens, so
// that a benchmark times the job, not a poll.
func (c *client) waitTerminalWithin(id string, d time.Duration) jobView {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		var j jobView
		asked := time.Now()
		c.do(http.MethodGet, "/jobs/"+id+"?wait=10", nil, nil).decode(c.t, http.StatusOK, &j)
		if terminal[j.Status] {
			return j
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("job %s: not terminal after %v; last seen %+v", id, d, j)
		}
		if time.Since(asked) < time.Second {
			// Answered without waiting (the account holds its most waits, or the server is
			// stopping): poll, as the clients do.
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// complete submits a job and waits for it to complete.
func (c *client) complete(body any) jobView {
	c.t.Helper()
	id := c.submit(body)
	j := c.waitTerminal(id)
	if j.Status != "complete" {
		c.t.Fatalf("job %s ended %s, want complete: %s", id, j.Status, errorText(j))
	}
	return j
}

func errorText(j jobView) string {
	if j.Error == nil {
		return "(no error)"
	}
	d := ""
	if j.Error.Detail != nil {
		d = *j.Error.Detail
	}
	return fmt.Sprintf("%s: %s\n%s", j.Error.Code, j.Error.Message, d)
}

// get downloads a URL (a signed file URL needs no key) and returns the exchange.
func (c *client) get(target string, header http.Header) response {
	c.t.Helper()
	return c.as("").do(http.MethodGet, target, nil, header)
}

// mustGet downloads a URL that must answer 200.
func (c *client) mustGet(target string) []byte {
	c.t.Helper()
	r := c.get(target, nil)
	if r.Status != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", target, r.Status, r.Body)
	}
	return r.Body
}

// ffmpegBare runs ffmpeg on the host, outside the service, in dir.
func ffmpegBare(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "ffmpeg", append([]string{"-hide_banner", "-loglevel", "error", "-nostdin", "-y"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ffmpeg %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// makeMedia writes a small H.264 MP4 test pattern of the given seconds and returns its bytes.
func makeMedia(t testing.TB, seconds float64) []byte {
	t.Helper()
	return generate(t, "-f", "lavfi", "-i", fmt.Sprintf("testsrc=duration=%g:size=128x72:rate=10", seconds),
		"-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "ultrafast")
}

// generate runs the bare FFmpeg with args and an MP4 output of its own, and returns its bytes.
func generate(t testing.TB, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := ffmpegBare(context.Background(), dir, append(args, "out.mp4")...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// processesWith returns the PIDs whose command line contains marker; with comm set, only those
// whose program is comm (bwrap's command line holds FFmpeg's arguments too).
func processesWith(marker string, comm ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if len(comm) > 0 {
			c, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			if err != nil || strings.TrimSpace(string(c)) != comm[0] {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}
