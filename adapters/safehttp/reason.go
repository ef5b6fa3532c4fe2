package safehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// Reason says why a request through this package failed in its caller's terms, for messages
// clients see: never an address a name resolved to, a resolver's address, or a raw Go error
// (those tell an attacker what the network behind the service looks like). The error itself
// belongs in the operator's log.
func Reason(err error) string {
	var (
		blocked *BlockedError
		status  *StatusError
		dnsErr  *net.DNSError
		netErr  net.Error
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &blocked), errors.Is(err, ErrBlockedAddress):
		return "its address is on a refused (private, loopback or reserved) range"
	case errors.Is(err, ErrScheme):
		return "only https URLs are allowed"
	case errors.Is(err, ErrURL):
		return "it is not a valid URL"
	case errors.Is(err, ErrTooManyRedirects):
		return "it redirects too many times"
	case errors.Is(err, ErrTooLarge):
		return "it is too large"
	case errors.As(err, &status):
		return fmt.Sprintf("the server answered %d", status.Code)
	case errors.As(err, &dnsErr):
		return "its host name does not resolve"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "the server did not answer in time"
	case isTLS(err):
		return "its TLS certificate is not valid"
	default:
		return "the connection failed"
	}
}

// isTLS tells a certificate or handshake failure.
func isTLS(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record)
}
