package mcpserver_test

import (
	"context"
	"crypto/x509"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/adapters/mcpserver"
	adapterlimit "github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/ratelimit"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
)

type testBundle struct {
	url   string // the /mcp endpoint
	h     *servicetest.Harness
	acct  account.Account
	key   string // API key of acct
	media *httptest.Server
	waits *service.Waits
}

type setupOpts struct {
	limiter   ratelimit.Limiter
	perMinute int // 0: the plan's
	maxInline int64
	// authFailed is Options.AuthFailed; nil: none.
	authFailed func(*http.Request, error) error
}

// setup serves the MCP handler over loopback on a real service on SQLite. No runner runs: jobs
// stay waiting. A TLS media server on loopback, reachable by the upload fetcher, serves
// /clip.srt.
func setup(t *testing.T, opts ...setupOpts) *testBundle {
	t.Helper()
	var o setupOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)

	blobs, err := blobfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := urlsign.New(srv.URL, []byte("test key of at least thirty-two bytes"))
	if err != nil {
		t.Fatal(err)
	}
	types, err := jobtype.NewRegistry(ffmpegjob.Type{}, extractmetadata.Type{})
	if err != nil {
		t.Fatal(err)
	}
	// The waits of get_job hear of the jobs that end, as the application wires them, and of
	// nothing else: their recheck is an hour.
	waits := service.NewWaits()
	h := servicetest.New(t, servicetest.Options{BaseURL: srv.URL, Types: types, Signer: signer, Blobs: blobs, MaxUpload: 1 << 20,
		Start: time.Now().UTC().Truncate(time.Millisecond), Observer: waits, Waits: waits, WaitRecheck: time.Hour})
	acct, key := h.Open(t, "acct_a", account.PlanFree, 600)

	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/clip.srt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-subrip")
		_, _ = w.Write([]byte(srt))
	}))
	t.Cleanup(media.Close)
	roots := x509.NewCertPool()
	roots.AddCert(media.Certificate())
	fetch := safehttp.NewClient(safehttp.Config{RootCAs: roots, AllowPrivate: allowed})

	mux := http.NewServeMux()
	// Without a limiter of its own, a test gets a budget it cannot spend.
	limiter, perMinute := o.limiter, o.perMinute
	if limiter == nil {
		limiter, perMinute = adapterlimit.NewMemory(), 1<<20
	}
	if perMinute == 0 {
		perMinute = 30 // the Free plan's, as the spec states it
	}
	gate := ratelimit.NewGate(limiter, func(account.Account) int { return perMinute }, slog.New(slog.DiscardHandler))
	mux.Handle("/mcp", mcpserver.New(mcpserver.UseCases{Auth: h.Auth, Submit: h.Submit, Jobs: h.Jobs, Uploads: h.Uploads,
		Credits: h.Credits, Presets: h.Presets, Destinations: h.Destinations, Types: types, RateLimit: gate},
		mcpserver.Options{Fetch: fetch, AllowPrivateNetworks: allowed, MaxInline: o.maxInline, ProbeWait: 300 * time.Millisecond,
			AuthFailed: o.authFailed}))
	handler = mux
	return &testBundle{url: srv.URL + "/mcp", h: h, acct: acct, key: key, media: media, waits: waits}
}

// allowed is the operator's allow list of the tests: the media server's loopback, opened to
// the upload fetcher and to validate_command alike.
var allowed = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

const srt = "1\n00:00:00,000 --> 00:00:01,000\nhello\n"

// bearer adds the API key to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// Both kinds of client: the SDK's default (sessionless, server/discover) and one that insists
// on the session-based initialize handshake of 2025-06-18.
var protocols = []struct{ name, version string }{
	{"sessionless", ""},
	{"session 2025-06-18", "2025-06-18"},
}

// connect opens an MCP session with the SDK's own client, over HTTP, with the given key.
func connect(t *testing.T, endpoint, key, version string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "mediajobs-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{key: key, next: tr}}, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func mustConnect(t *testing.T, endpoint, key, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := connect(t, endpoint, key, version)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}
