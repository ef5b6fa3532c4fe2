package mcpserver_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/adapters/mcpserver"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/ratelimit"
	"github.com/mediajobs/mediajobs/core/service"
)

type testBundle struct {
	url   string // the /mcp endpoint
	svc   *service.Service
	acct  account.Account
	key   string // API key of acct
	media *httptest.Server
}

type setupOpts struct {
	limiter   ratelimit.Limiter
	perMinute int // 0: the plan's
	maxInline int64
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
	ctx := context.Background()
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)

	store, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "mediajobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
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
	svc := &service.Service{Jobs: store, Accounts: store, Assets: store, Blobs: blobs, Types: types,
		Clock: clock.System{}, Signer: signer,
		Config: service.Config{BaseURL: srv.URL, URLTTL: time.Hour, Lease: time.Minute, MaxUpload: 1 << 20}}

	now := time.Now().UTC().Truncate(time.Millisecond)
	acct := account.Account{ID: "acct_a", Plan: account.PlanFree, CreatedAt: now}
	if err := store.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	key, k := account.NewKey(acct.ID, "key_a", now)
	if err := store.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}

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
	fetch := safehttp.NewClient(safehttp.Config{RootCAs: roots,
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})

	mux := http.NewServeMux()
	// The Free plan's limits, as the spec states them.
	limits := func(account.Account) account.Limits {
		l := account.Limits{RequestsPerMinute: 30, ExecutionCap: 5 * time.Minute, Concurrency: 1}
		if o.perMinute > 0 {
			l.RequestsPerMinute = o.perMinute
		}
		return l
	}
	mux.Handle("/mcp", mcpserver.New(svc, mcpserver.Options{Fetch: fetch, Limiter: o.limiter, Limits: limits,
		MaxInline: o.maxInline, ProbeWait: 300 * time.Millisecond}))
	handler = mux
	return &testBundle{url: srv.URL + "/mcp", svc: svc, acct: acct, key: key, media: media}
}

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
