package webhookout_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/adapters/webhookout"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/webhook"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// received is one request a receiver got: the raw body and the headers.
type received struct {
	body   []byte
	header http.Header
}

// receiver is a local HTTPS server answering with the statuses of answer, in turn (the last
// one for every later request); block, when set, holds each request until it closes.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer []int
	block  chan struct{}
	// arrived gets a value per request, before it is answered.
	arrived chan struct{}
}

func newReceiver(t testing.TB, answer ...int) *receiver {
	t.Helper()
	r := &receiver{answer: answer, arrived: make(chan struct{}, 64)}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, received{body: body, header: req.Header.Clone()})
		status := http.StatusNoContent
		if len(r.answer) > 0 {
			status = r.answer[min(n, len(r.answer)-1)]
		}
		block := r.block
		r.mu.Unlock()
		r.arrived <- struct{}{}
		if block != nil {
			select {
			case <-block:
			case <-req.Context().Done():
			}
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type testBundle struct {
	ctx   context.Context
	store *sqlstore.Store
	path  string
	clock *clocktest.Fake
	hooks *service.Webhooks
	fan   *service.FanOut
	acct  account.Account
	http  safehttp.Config // opens 127.0.0.0/8 and trusts the receivers
	recv  *receiver
	close func() error // closes the store once
}

func setup(t testing.TB, answer ...int) *testBundle {
	t.Helper()
	b := &testBundle{ctx: context.Background(), path: filepath.Join(t.TempDir(), "mediajobs.db"), clock: clocktest.New(t0)}
	b.recv = newReceiver(t, answer...)
	roots := x509.NewCertPool()
	roots.AddCert(b.recv.srv.Certificate())
	b.http = safehttp.Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, RootCAs: roots}
	b.open(t)
	b.acct = account.Account{ID: job.NewID("acc"), Plan: account.PlanFree, CreatedAt: t0}
	if err := b.store.CreateAccount(b.ctx, b.acct); err != nil {
		t.Fatal(err)
	}
	return b
}

// open (re)opens the SQLite store of the bundle and the service over it.
func (b *testBundle) open(t testing.TB) {
	t.Helper()
	s, err := sqlstore.OpenSQLite(b.ctx, b.path)
	if err != nil {
		t.Fatal(err)
	}
	closeOnce := sync.OnceValue(s.Close)
	b.close = closeOnce
	t.Cleanup(func() { _ = closeOnce() })
	signer, err := urlsign.New("https://media.example", []byte("test key of at least thirty-two bytes"))
	if err != nil {
		t.Fatal(err)
	}
	b.store = s
	if b.hooks, err = service.NewWebhooks(service.WebhooksPorts{Store: s, URLs: webhookout.URLChecker{HTTP: b.http}, Clock: b.clock}); err != nil {
		t.Fatal(err)
	}
	if b.fan, err = service.NewFanOut(service.FanOutPorts{Store: s, Jobs: s, Batches: s,
		Viewer: service.Viewer{Signer: signer, Clock: b.clock, URLTTL: time.Hour}}); err != nil {
		t.Fatal(err)
	}
}

func (b *testBundle) deliverer(cfg webhookout.Config) *webhookout.Deliverer {
	cfg.Store, cfg.Clock = b.store, b.clock
	if cfg.HTTP.AllowPrivate == nil {
		cfg.HTTP = b.http
	}
	return webhookout.New(cfg)
}

func (b *testBundle) endpoint(t testing.TB, url string, events ...string) service.WebhookEndpointView {
	t.Helper()
	if len(events) == 0 {
		events = []string{webhook.EventJobCompleted}
	}
	e, err := b.hooks.CreateWebhookEndpoint(b.ctx, b.acct, service.WebhookEndpointParams{Name: "receiver", URL: url, SubscribedEvents: events})
	if err != nil {
		t.Fatalf("CreateWebhookEndpoint: %v", err)
	}
	return e
}

// complete stores a completed job of the account and fans its job.completed out, as the relay
// does after the commit.
func (b *testBundle) complete(t testing.TB) *job.Job {
	t.Helper()
	now := b.clock.Now()
	j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: b.acct.ID, Type: "ffmpeg", Class: job.ClassCPU,
		Params: json.RawMessage(`{}`), Timeout: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	out, err := job.NewOutput([]job.File{{Path: "out.mp4", Size: 10}}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []error{j.Dispatch(now, time.Minute), j.Start(now, time.Minute), j.Complete(now, out, 1000)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if err := b.store.Create(b.ctx, j); err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(service.Event{Event: webhook.EventJobCompleted, JobID: j.ID, Output: j.Output, Cost: j.Cost, Timing: j.Timing()})
	if err != nil {
		t.Fatal(err)
	}
	m := job.Message{Key: webhook.EventJobCompleted + ":" + j.ID, Topic: service.TopicEvents, Payload: payload}
	for range 2 { // a message handled twice after a crash makes one delivery
		if err := b.fan.Handle(b.ctx, m); err != nil {
			t.Fatalf("FanOut: %v", err)
		}
	}
	return j
}

func (b *testBundle) deliveries(t testing.TB, endpointID string) []service.DeliveryView {
	t.Helper()
	ds, _, err := b.hooks.ListDeliveries(b.ctx, b.acct, endpointID, webhook.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func drain(t testing.TB, d *webhookout.Deliverer) int {
	t.Helper()
	n, err := d.Drain(context.Background())
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	return n
}

// hmacHex is an independent computation of the signature over the raw bytes received.
func hmacHex(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "." + string(body)))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestSignedDeliveryVerifies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.endpoint(t, b.recv.srv.URL+"/hooks?src=test")
	j := b.complete(t)
	if n := drain(t, b.deliverer(webhookout.Config{})); n != 1 {
		t.Fatalf("delivered %d, want 1 (one per endpoint, however often the event is handled)", n)
	}
	got := b.recv.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	h := got[0].header
	if want := hmacHex(e.Secret, h.Get("X-Service-Timestamp"), got[0].body); h.Get("X-Service-Signature") != want {
		t.Fatalf("X-Service-Signature %q, independent HMAC %q", h.Get("X-Service-Signature"), want)
	}
	ds := b.deliveries(t, e.ID)
	wantHeaders := map[string]string{"X-Service-Event": "job.completed", "X-Service-Delivery": ds[0].ID, "X-Service-Attempt": "1",
		"X-Service-Timestamp": "1795341600", "X-Service-Signature-Previous": "", "Content-Type": "application/json"}
	gotHeaders := map[string]string{}
	for k := range wantHeaders {
		gotHeaders[k] = h.Get(k)
	}
	if d := cmp.Diff(wantHeaders, gotHeaders); d != "" {
		t.Errorf("headers (-want +got):\n%s", d)
	}
	var ev service.Event
	if err := json.Unmarshal(got[0].body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Event != "job.completed" || ev.JobID != j.ID || ev.Output == nil || len(ev.Output.Files) != 1 ||
		!strings.HasPrefix(ev.Output.Files[0].URL, "https://media.example/") {
		t.Errorf("body %s: want job.completed of %s with a signed output URL", got[0].body, j.ID)
	}
	if ds[0].State != webhook.StateSucceeded || ds[0].Attempts != 1 || *ds[0].LastStatusCode != 204 || ds[0].NextAttemptAt != nil {
		t.Errorf("delivery %+v: want succeeded after one 204", ds[0])
	}
}

func TestRetriesFollowTheScheduleOnTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t, 500, 500, 200)
	e := b.endpoint(t, b.recv.srv.URL)
	b.complete(t)
	d := b.deliverer(webhookout.Config{})
	steps := []struct {
		advance time.Duration
		total   int // requests received after the step
	}{{0, 1}, {0, 1}, {5*time.Second - time.Millisecond, 1}, {time.Millisecond, 2}, {24 * time.Second, 2}, {time.Second, 3}, {time.Hour, 3}}
	for i, s := range steps {
		b.clock.Advance(s.advance)
		drain(t, d)
		if n := len(b.recv.requests()); n != s.total {
			t.Fatalf("step %d (+%v): %d requests, want %d", i, s.advance, n, s.total)
		}
	}
	ds := b.deliveries(t, e.ID)
	var attempts []string
	for _, r := range b.recv.requests() {
		attempts = append(attempts, r.header.Get("X-Service-Attempt"))
	}
	if d := cmp.Diff([]string{"1", "2", "3"}, attempts); d != "" {
		t.Errorf("X-Service-Attempt (-want +got):\n%s", d)
	}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	var hist [][2]int64
	for _, a := range ds[0].History {
		hist = append(hist, [2]int64{a.At, int64(*a.StatusCode)})
	}
	if d := cmp.Diff([][2]int64{{ms(0), 500}, {ms(5 * time.Second), 500}, {ms(30 * time.Second), 200}}, hist); d != "" {
		t.Errorf("history (at, status) (-want +got):\n%s", d)
	}
	if ds[0].State != webhook.StateSucceeded || ds[0].Attempts != 3 {
		t.Errorf("delivery %+v: want succeeded on the 3rd attempt", ds[0])
	}
}

func TestFailedAfterTheThirdRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, 503)
	e := b.endpoint(t, b.recv.srv.URL)
	b.complete(t)
	d := b.deliverer(webhookout.Config{})
	for _, adv := range []time.Duration{0, 5 * time.Second, 25 * time.Second, 125 * time.Second, time.Hour} {
		b.clock.Advance(adv)
		drain(t, d)
	}
	ds := b.deliveries(t, e.ID)
	if n := len(b.recv.requests()); n != 4 || ds[0].State != webhook.StateFailed || ds[0].Attempts != 4 {
		t.Fatalf("%d requests, delivery %s after %d attempts; want failed after 4", n, ds[0].State, ds[0].Attempts)
	}
}

func TestHangingReceiverIsCut(t *testing.T) {
	t.Parallel()
	if got := webhookout.New(webhookout.Config{Store: setup(t).store}).Timeout(); got != 10*time.Second {
		t.Fatalf("default timeout %v, want the spec's 10 s", got)
	}
	b := setup(t)
	b.recv.block = make(chan struct{}) // never answers
	t.Cleanup(func() { close(b.recv.block) })
	e := b.endpoint(t, b.recv.srv.URL)
	b.complete(t)
	drain(t, b.deliverer(webhookout.Config{Timeout: 300 * time.Millisecond}))
	ds := b.deliveries(t, e.ID)
	if ds[0].LastError == nil || !strings.Contains(*ds[0].LastError, "no answer within 300ms") || ds[0].State != webhook.StatePending ||
		*ds[0].NextAttemptAt != t0.Add(5*time.Second).UnixMilli() {
		t.Fatalf("delivery %+v: want a failed attempt cut at the timeout and a retry in 5 s", ds[0])
	}
}

func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.recv.block = make(chan struct{})
	fast := newReceiver(t)
	b.http.RootCAs.AddCert(fast.srv.Certificate())
	b.endpoint(t, b.recv.srv.URL)
	b.endpoint(t, fast.srv.URL)
	b.complete(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		drain(t, b.deliverer(webhookout.Config{Workers: 4}))
	}()
	<-b.recv.arrived
	select {
	case <-fast.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the fast endpoint got nothing while the slow one held its request")
	}
	close(b.recv.block)
	<-done
}

func TestCrashBetweenAttemptsLosesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, 500, 200)
	e := b.endpoint(t, b.recv.srv.URL)
	b.complete(t)
	drain(t, b.deliverer(webhookout.Config{}))
	// The process dies: store and deliverer go; a new one starts on the same database.
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
	b.open(t)
	b.clock.Advance(5 * time.Second)
	drain(t, b.deliverer(webhookout.Config{}))
	ds := b.deliveries(t, e.ID)
	if n := len(b.recv.requests()); n != 2 || ds[0].State != webhook.StateSucceeded || len(ds[0].History) != 2 {
		t.Fatalf("%d requests, delivery %+v; want the retry sent after the restart", n, ds[0])
	}
}

func TestRotationSignsWithBothSecretsFor24Hours(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.endpoint(t, b.recv.srv.URL)
	rotated, err := b.hooks.RotateWebhookSecret(b.ctx, b.acct, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := b.deliverer(webhookout.Config{})
	for _, adv := range []time.Duration{0, 24*time.Hour - time.Second, time.Second} {
		b.clock.Advance(adv)
		b.complete(t)
		drain(t, d)
	}
	got := b.recv.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	for i, r := range got {
		ts := r.header.Get("X-Service-Timestamp")
		if r.header.Get("X-Service-Signature") != hmacHex(rotated.Secret, ts, r.body) {
			t.Errorf("request %d: X-Service-Signature is not the new secret's", i)
		}
		prev := r.header.Get("X-Service-Signature-Previous")
		if inWindow := i < 2; inWindow && prev != hmacHex(e.Secret, ts, r.body) {
			t.Errorf("request %d: X-Service-Signature-Previous %q is not the old secret's", i, prev)
		} else if !inWindow && prev != "" {
			t.Errorf("request %d, 24 h after the rotation: X-Service-Signature-Previous still sent", i)
		}
	}
}

func TestPrivateAddressesRefused(t *testing.T) {
	t.Parallel()
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
	}
	for _, url := range []string{"https://127.0.0.1/hook", "https://10.0.0.1/hook", "https://169.254.169.254/latest",
		"https://[::1]/hook", "https://[::ffff:127.0.0.1]/hook", "https://0.0.0.0/", "https://internal.example/hook"} {
		t.Run(url, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			// No allow-list: the production policy, with a resolver that answers a private address.
			hooks, err := service.NewWebhooks(service.WebhooksPorts{Store: b.store, URLs: webhookout.URLChecker{HTTP: safehttp.Config{LookupIP: lookup}}, Clock: b.clock})
			if err != nil {
				t.Fatal(err)
			}
			_, err = hooks.CreateWebhookEndpoint(b.ctx, b.acct, service.WebhookEndpointParams{Name: "x", URL: url,
				SubscribedEvents: []string{webhook.EventJobFailed}})
			if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), "refused (private, loopback or reserved) range") {
				t.Fatalf("CreateWebhookEndpoint(%s): %v, want a VALIDATION_ERROR saying its range is refused", url, err)
			}
			// What a name resolved to stays on this side: the message is no oracle of the
			// network behind the service.
			if strings.Contains(err.Error(), "10.1.2.3") || strings.Contains(err.Error(), "safehttp") {
				t.Fatalf("CreateWebhookEndpoint(%s): %v shows the resolution or a raw error", url, err)
			}
			if es, _ := b.hooks.ListWebhookEndpoints(b.ctx, b.acct); len(es) != 0 {
				t.Fatalf("a refused endpoint was saved: %+v", es)
			}
		})
	}
}

// TestAddressCheckedAtEveryDelivery: an endpoint that passed at creation is checked again when
// sent; here the deliverer's policy no longer opens loopback, so nothing reaches the receiver.
func TestAddressCheckedAtEveryDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.endpoint(t, b.recv.srv.URL)
	b.complete(t)
	drain(t, b.deliverer(webhookout.Config{HTTP: safehttp.Config{AllowPrivate: []netip.Prefix{}, RootCAs: b.http.RootCAs}}))
	ds := b.deliveries(t, e.ID)
	if n := len(b.recv.requests()); n != 0 || ds[0].LastError == nil || !strings.Contains(*ds[0].LastError, "refused (private, loopback or reserved) range") ||
		strings.Contains(*ds[0].LastError, "127.0.0.1") {
		t.Fatalf("%d requests, delivery %+v; want none sent and the block recorded", n, ds[0])
	}
}

func TestDisabledEndpointGetsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.endpoint(t, b.recv.srv.URL)
	b.complete(t)
	off := false
	if _, err := b.hooks.UpdateWebhookEndpoint(b.ctx, b.acct, e.ID, service.WebhookEndpointPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	b.complete(t) // no delivery for a disabled endpoint
	drain(t, b.deliverer(webhookout.Config{}))
	ds := b.deliveries(t, e.ID)
	if n := len(b.recv.requests()); n != 0 || len(ds) != 1 || ds[0].State != webhook.StateFailed {
		t.Fatalf("%d requests, deliveries %+v; want the one pending abandoned, none new", n, ds)
	}
}
