package safehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"syscall"
	"time"
)

var (
	// ErrScheme: the URL (or a redirect) is not https, or not http(s) at all.
	ErrScheme = errors.New("safehttp: scheme not allowed")
	// ErrTooLarge: the body is larger than the caller's limit.
	ErrTooLarge = errors.New("safehttp: response too large")
	// ErrTooManyRedirects: the redirect chain is longer than Config.MaxRedirects.
	ErrTooManyRedirects = errors.New("safehttp: too many redirects")
	// ErrStatus: the server answered with a non-2xx status.
	ErrStatus = errors.New("safehttp: unexpected status")
	// ErrURL: the URL cannot be used at all (unparsable, no host, credentials in it).
	ErrURL = errors.New("safehttp: bad URL")
)

const (
	DefaultTimeout      = 10 * time.Minute
	DefaultMaxRedirects = 5
	dialTimeout         = 10 * time.Second
)

// Config is the guard's policy. The zero value is the production default: https only, public
// addresses only, system roots, 10 minutes, 5 redirects.
type Config struct {
	// AllowPrivate opens blocked ranges (MEDIAJOBS_ALLOW_PRIVATE_NETWORKS, see ParseAllowList).
	AllowPrivate []netip.Prefix
	// AllowHTTP permits plain http; for tests only.
	AllowHTTP bool
	// RootCAs replaces the system roots (tests trust a local TLS server with it).
	RootCAs *x509.CertPool
	// Timeout bounds a whole request, body included; default DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects caps followed redirects; 0 means DefaultMaxRedirects, negative follows none.
	MaxRedirects int
	// LookupIP resolves host names; default net.DefaultResolver. Tests use it to make a name
	// resolve to a private address without any DNS.
	LookupIP func(ctx context.Context, host string) ([]netip.Addr, error)
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRedirects == 0 {
		c.MaxRedirects = DefaultMaxRedirects
	}
	if c.LookupIP == nil {
		c.LookupIP = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	return c
}

// NewClient returns a client that checks every request's scheme (redirects included) and every
// address it connects to, after resolution, so DNS answers and redirects cannot lead it to a
// blocked address. It never uses a proxy.
func NewClient(cfg Config) *http.Client {
	cfg = cfg.withDefaults()
	g := &guard{cfg: cfg}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.dialContext,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          64,
		// Webhook deliveries go to few hosts, many at a time: keep their connections warm
		// rather than paying a TLS handshake per attempt. A reused connection goes to an
		// address already checked when it was dialled.
		MaxIdleConnsPerHost: 16,
	}
	return &http.Client{
		Transport: &schemeGuard{cfg: cfg, next: tr},
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > max(cfg.MaxRedirects, 0) {
				return fmt.Errorf("%w: more than %d", ErrTooManyRedirects, max(cfg.MaxRedirects, 0))
			}
			return checkScheme(req.URL, cfg.AllowHTTP)
		},
	}
}

// schemeGuard refuses non-https requests before they reach the transport, so the check holds
// for the first request and every redirect alike.
type schemeGuard struct {
	cfg  Config
	next http.RoundTripper
}

func (s *schemeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkScheme(req.URL, s.cfg.AllowHTTP); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return s.next.RoundTrip(req)
}

func checkScheme(u *url.URL, allowHTTP bool) error {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowHTTP:
	default:
		return fmt.Errorf("%w: %q (https is required)", ErrScheme, u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: no host", ErrURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in the URL", ErrURL)
	}
	return nil
}

type guard struct {
	cfg Config
}

// resolve returns the addresses for host, refusing the lot if any one is blocked: a name that
// mixes public and private answers is treated as an attack, not load balancing.
func (g *guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = g.cfg.LookupIP(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("safehttp: resolve %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("safehttp: resolve %s: no addresses", host)
		}
	}
	for i, a := range addrs {
		if err := CheckAddr(a, g.cfg.AllowPrivate); err != nil {
			var be *BlockedError
			if errors.As(err, &be) {
				be.Host = host
			}
			return nil, err
		}
		addrs[i] = a.WithZone("").Unmap()
	}
	return addrs, nil
}

func (g *guard) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{
		Timeout: dialTimeout,
		// Control sees the socket address actually dialled: a second check that nothing between
		// resolve and connect (a future refactor, a dialer fallback) can bypass.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("safehttp: dial %q: %w", address, err)
			}
			return CheckAddr(ap.Addr(), g.cfg.AllowPrivate)
		},
	}
	var firstErr error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// CheckURL vets a URL without sending anything: https (unless AllowHTTP), a host, and every
// address the host resolves to allowed. Use it when a webhook endpoint is created; the client
// checks again at each delivery, since DNS answers change.
func CheckURL(ctx context.Context, rawURL string, cfg Config) error {
	cfg = cfg.withDefaults()
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrURL, err)
	}
	if err := checkScheme(u, cfg.AllowHTTP); err != nil {
		return err
	}
	_, err = (&guard{cfg: cfg}).resolve(ctx, u.Hostname())
	return err
}

// Download GETs rawURL with client (from NewClient) into a new file at dst and returns its size.
// It fails with ErrTooLarge as soon as the body passes maxBytes, and leaves no file behind on
// any failure. dst must not exist: the file is created exclusively and never through a symlink.
func Download(ctx context.Context, client *http.Client, rawURL, dst string, maxBytes int64) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrURL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		// url.Error would print the full URL, and a presigned URL's query is a credential.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, fmt.Errorf("safehttp: get %s: %w", redact(req.URL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, &StatusError{Code: resp.StatusCode, URL: redact(req.URL)}
	}
	if resp.ContentLength > maxBytes {
		return 0, fmt.Errorf("%w: %d bytes announced, limit %d", ErrTooLarge, resp.ContentLength, maxBytes)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return 0, fmt.Errorf("safehttp: create %s: %w", dst, err)
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, maxBytes+1))
	if err == nil && n > maxBytes {
		err = fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return 0, fmt.Errorf("safehttp: download %s: %w", redact(req.URL), err)
	}
	return n, nil
}

// StatusError is a non-2xx answer; it matches ErrStatus.
type StatusError struct {
	Code int
	URL  string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%v: %d %s from %s", ErrStatus, e.Code, http.StatusText(e.Code), e.URL)
}

func (e *StatusError) Is(target error) bool { return target == ErrStatus }

// redact drops the query, which for presigned URLs is a credential.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery = ""
	c.User = nil
	return c.String()
}
