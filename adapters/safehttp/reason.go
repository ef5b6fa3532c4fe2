package safehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"
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
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the server refused the connection"
	default:
		return "the connection failed"
	}
}

// Public is err as a client may read it: its message is Reason(err), and errors.Is and
// errors.As still find the cause, which belongs in the operator's log.
func Public(err error) error {
	if err == nil {
		return nil
	}
	return &publicError{reason: Reason(err), err: err}
}

type publicError struct {
	reason string
	err    error
}

func (e *publicError) Error() string { return e.reason }
func (e *publicError) Unwrap() error { return e.err }

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
