package safehttp

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const body = "media bytes"

type testBundle struct {
	srv   *httptest.Server
	roots *x509.CertPool
	hits  *atomic.Int64
	dst   string
}

// setup starts a TLS server on 127.0.0.1. Every test talks only to loopback: refused addresses
// of other ranges are refused before a socket exists.
func setup(t *testing.T) testBundle {
	t.Helper()
	b := testBundle{hits: new(atomic.Int64), dst: filepath.Join(t.TempDir(), "input.bin")}
	mux := http.NewServeMux()
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		w.Write([]byte(body))
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		for range 10 {
			w.Write([]byte(body))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		http.NotFound(w, r)
	})
	b.srv = httptest.NewTLSServer(mux)
	t.Cleanup(b.srv.Close)
	b.roots = x509.NewCertPool()
	b.roots.AddCert(b.srv.Certificate())
	return b
}

func (b testBundle) config(allow ...string) Config {
	return Config{RootCAs: b.roots, AllowPrivate: prefixes(allow...), Timeout: 10 * time.Second}
}

func (b testBundle) port() string {
	_, port, _ := net.SplitHostPort(b.srv.Listener.Addr().String())
	return port
}

// lookup resolves every name to addrs, without DNS.
func lookup(addrs ...string) func(context.Context, string) ([]netip.Addr, error) {
	return func(context.Context, string) ([]netip.Addr, error) {
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	}
}

func TestDownloadLoopbackRefusedByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := Download(context.Background(), NewClient(b.config()), b.srv.URL+"/file", b.dst, 1<<20)

	if !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("error = %v, want ErrBlockedAddress", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("error %q does not name the address", err)
	}
	assertNoFile(t, b.dst)
	if n := b.hits.Load(); n != 0 {
		t.Errorf("server saw %d requests", n)
	}
}

func TestDownloadLoopbackAllowedWhenOpened(t *testing.T) {
	t.Parallel()
	b := setup(t)

	n, err := Download(context.Background(), NewClient(b.config("127.0.0.0/8")), b.srv.URL+"/file", b.dst, 1<<20)

	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	got, _ := os.ReadFile(b.dst)
	if n != int64(len(body)) || string(got) != body {
		t.Errorf("got %d bytes %q, want %q", n, got, body)
	}
}

func TestDownloadRedirects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		to     func(b testBundle) string
		lookup func(context.Context, string) ([]netip.Addr, error)
		want   error
	}{
		{name: "to a loopback address not opened", to: func(b testBundle) string { return "https://127.0.0.2:" + b.port() + "/file" }, want: ErrBlockedAddress},
		{name: "to a private address", to: func(b testBundle) string { return "https://10.0.0.1/file" }, want: ErrBlockedAddress},
		{name: "to cloud metadata", to: func(b testBundle) string { return "https://169.254.169.254/latest/meta-data/" }, want: ErrBlockedAddress},
		{name: "to mapped loopback", to: func(b testBundle) string { return "https://[::ffff:127.0.0.2]:" + b.port() + "/file" }, want: ErrBlockedAddress},
		{name: "to a name resolving to private", to: func(b testBundle) string { return "https://internal.example:" + b.port() + "/file" }, lookup: lookup("192.168.1.10"), want: ErrBlockedAddress},
		{name: "to plain http", to: func(b testBundle) string { return "http://127.0.0.1:" + b.port() + "/file" }, want: ErrScheme},
		{name: "to file", to: func(b testBundle) string { return "file:///etc/passwd" }, want: ErrScheme},
		{name: "to an allowed address", to: func(b testBundle) string { return b.srv.URL + "/file" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			cfg := b.config("127.0.0.1/32")
			cfg.LookupIP = tt.lookup

			_, err := Download(context.Background(), NewClient(cfg), b.srv.URL+"/redirect?to="+tt.to(b), b.dst, 1<<20)

			if tt.want == nil {
				if err != nil {
					t.Fatalf("Download: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			assertNoFile(t, b.dst)
			if n := b.hits.Load(); n != 1 {
				t.Errorf("server saw %d requests, want only the redirecting one", n)
			}
		})
	}
}

func TestDownloadTooManyRedirects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("127.0.0.0/8")
	cfg.MaxRedirects = 3

	_, err := Download(context.Background(), NewClient(cfg), b.srv.URL+"/loop", b.dst, 1<<20)

	if !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("error = %v, want ErrTooManyRedirects", err)
	}
	if n := b.hits.Load(); n != 4 {
		t.Errorf("server saw %d requests, want 4 (first + 3 redirects)", n)
	}
}

func TestDownloadNameResolvingToBlocked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		addrs []string
	}{
		{"private", []string{"10.0.0.1"}},
		{"loopback", []string{"127.0.0.1"}},
		{"mapped loopback", []string{"::ffff:127.0.0.1"}},
		{"link-local v6", []string{"fe80::1"}},
		{"mixed public and private", []string{"8.8.8.8", "10.0.0.1"}},
		{"NAT64 of private", []string{"64:ff9b::a00:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			cfg := b.config()
			cfg.LookupIP = lookup(tt.addrs...)

			_, err := Download(context.Background(), NewClient(cfg), "https://media.example:"+b.port()+"/file", b.dst, 1<<20)

			if !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("error = %v, want ErrBlockedAddress", err)
			}
			if !strings.Contains(err.Error(), "media.example") {
				t.Errorf("error %q does not name the host", err)
			}
			if n := b.hits.Load(); n != 0 {
				t.Errorf("server saw %d requests", n)
			}
		})
	}
}

func TestDownloadNameResolvingToOpenedRange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("127.0.0.0/8")
	cfg.LookupIP = lookup("127.0.0.1")

	// httptest's certificate is valid for example.com, so TLS verification runs for real.
	_, err := Download(context.Background(), NewClient(cfg), "https://example.com:"+b.port()+"/file", b.dst, 1<<20)

	if err != nil {
		t.Fatalf("Download: %v", err)
	}
}

func TestDownloadPlainHTTPRefused(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	dst := filepath.Join(t.TempDir(), "in.bin")
	cfg := Config{AllowPrivate: prefixes("127.0.0.0/8")}

	_, err := Download(context.Background(), NewClient(cfg), srv.URL, dst, 1<<20)
	if !errors.Is(err, ErrScheme) {
		t.Fatalf("error = %v, want ErrScheme", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server saw %d requests", n)
	}

	cfg.AllowHTTP = true
	if _, err := Download(context.Background(), NewClient(cfg), srv.URL, dst, 1<<20); err != nil {
		t.Fatalf("with AllowHTTP: %v", err)
	}
}

func TestDownloadSizeCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		path     string
		maxBytes int64
		wantErr  error
	}{
		{"exact fit", "/file", int64(len(body)), nil},
		{"announced length over", "/file", int64(len(body)) - 1, ErrTooLarge},
		{"streamed body fits", "/chunked", int64(10 * len(body)), nil},
		{"streamed body over", "/chunked", int64(10*len(body)) - 1, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			n, err := Download(context.Background(), NewClient(b.config("127.0.0.0/8")), b.srv.URL+tt.path, b.dst, tt.maxBytes)

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				assertNoFile(t, b.dst)
				return
			}
			if fi, err := os.Stat(b.dst); err != nil || fi.Size() != n {
				t.Errorf("file size = %v (%v), want %d", fi, err, n)
			}
		})
	}
}

func TestDownloadFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("127.0.0.0/8")
	client := NewClient(cfg)
	// A client of 200 ms for the slow server only: a loaded machine took longer than that for
	// the TLS handshake and a 404.
	cfg.Timeout = 200 * time.Millisecond
	hasty := NewClient(cfg)

	_, err := Download(context.Background(), hasty, b.srv.URL+"/slow?sig=secret", b.dst, 1<<20)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("slow server: error = %v, want a timeout", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q leaks the URL query", err)
	}

	_, err = Download(context.Background(), client, b.srv.URL+"/missing", b.dst, 1<<20)
	if !errors.Is(err, ErrStatus) {
		t.Errorf("404: error = %v, want ErrStatus", err)
	}
	assertNoFile(t, b.dst)

	if err := os.Symlink("/etc/passwd", b.dst); err != nil {
		t.Fatal(err)
	}
	if _, err := Download(context.Background(), client, b.srv.URL+"/file", b.dst, 1<<20); err == nil {
		t.Error("Download wrote through an existing symlink")
	}
}

func TestClientIgnoresProxyEnvironment(t *testing.T) {
	t.Parallel()
	tr := NewClient(Config{}).Transport.(*schemeGuard).next.(*http.Transport)
	if tr.Proxy != nil {
		t.Error("transport has a Proxy func; it would honour HTTPS_PROXY and bypass the dial guard")
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url    string
		lookup func(context.Context, string) ([]netip.Addr, error)
		want   error
	}{
		{url: "https://hooks.example/receive", lookup: lookup("93.184.216.34")},
		{url: "https://hooks.example/receive", lookup: lookup("93.184.216.34", "2606:2800:220:1::1")},
		{url: "http://hooks.example/receive", lookup: lookup("93.184.216.34"), want: ErrScheme},
		{url: "ftp://hooks.example/", want: ErrScheme},
		{url: "HTTPS://10.0.0.1/", want: ErrBlockedAddress},
		{url: "https://10.0.0.1/", want: ErrBlockedAddress},
		{url: "https://127.0.0.1:8443/", want: ErrBlockedAddress},
		{url: "https://[::1]/", want: ErrBlockedAddress},
		{url: "https://[::ffff:127.0.0.1]/", want: ErrBlockedAddress},
		{url: "https://[fe80::1%25eth0]/", want: ErrBlockedAddress},
		{url: "https://169.254.169.254/", want: ErrBlockedAddress},
		{url: "https://internal.example/", lookup: lookup("172.20.0.5"), want: ErrBlockedAddress},
		{url: "https://user:pw@hooks.example/", lookup: lookup("93.184.216.34"), want: ErrURL},
		{url: "https:///path", want: ErrURL},
		{url: "://bad", want: ErrURL},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			cfg := Config{LookupIP: tt.lookup}
			if cfg.LookupIP == nil {
				cfg.LookupIP = func(context.Context, string) ([]netip.Addr, error) {
					return nil, errors.New("test: no DNS here")
				}
			}
			err := CheckURL(context.Background(), tt.url, cfg)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("CheckURL(%q) = %v, want %v", tt.url, err, tt.want)
			}
		})
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://hooks.example/x", "https://10.0.0.1/", "https://[::ffff:127.0.0.1]/", "http://a/", "https://[64:ff9b::a00:1]:443/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// Every name resolves to a private address: nothing may pass unless it is a literal
		// public address.
		cfg := Config{LookupIP: lookup("10.0.0.1")}
		if err := CheckURL(context.Background(), raw, cfg); err == nil {
			u, _ := urlHost(raw)
			addr, perr := netip.ParseAddr(u)
			if perr != nil || blockedReason(addr) != "" {
				t.Fatalf("CheckURL(%q) passed, host %q", raw, u)
			}
		}
	})
}

func assertNoFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s exists after a failed download", path)
	}
}

func urlHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return u.Hostname(), nil
}
