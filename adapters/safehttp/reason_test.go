package safehttp_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
)

// Reason's answers are the client's: none carries an address, a resolver, or the raw error.
func TestReason(t *testing.T) {
	t.Parallel()
	dns := &net.DNSError{Err: "no such host", Name: "internal.example", Server: "127.0.0.53:53", IsNotFound: true}
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 443}, Err: errors.New("connect: connection refused")}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"blocked", &safehttp.BlockedError{Host: "internal.example", Addr: netip.MustParseAddr("10.0.0.5"), Reason: "private"}, "refused (private, loopback or reserved) range"},
		{"blocked, wrapped", fmt.Errorf("get: %w", &url.Error{Op: "Get", URL: "https://x", Err: &safehttp.BlockedError{Addr: netip.MustParseAddr("127.0.0.1"), Reason: "loopback"}}), "refused"},
		{"scheme", safehttp.ErrScheme, "only https URLs"},
		{"bad URL", fmt.Errorf("%w: parse error", safehttp.ErrURL), "not a valid URL"},
		{"redirects", safehttp.ErrTooManyRedirects, "redirects too many times"},
		{"too large", fmt.Errorf("%w: 9 bytes", safehttp.ErrTooLarge), "too large"},
		{"status", &safehttp.StatusError{Code: 404, URL: "https://x/y"}, "the server answered 404"},
		{"dns", &url.Error{Op: "Get", URL: "https://internal.example", Err: &net.OpError{Op: "dial", Net: "tcp", Err: dns}}, "does not resolve"},
		{"timeout", context.DeadlineExceeded, "did not answer in time"},
		{"tls", x509.UnknownAuthorityError{}, "TLS certificate"},
		{"reset", refused, "the connection failed"},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 443}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "the server refused the connection"},
	}
	for _, tc := range tests {
		got := safehttp.Reason(tc.err)
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: Reason = %q, want %q", tc.name, got, tc.want)
		}
		for _, leak := range []string{"10.0.0.5", "127.0.0.53", "203.0.113.7", "internal.example", "safehttp:", "dial"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: Reason = %q shows %q", tc.name, got, leak)
			}
		}
	}
}
