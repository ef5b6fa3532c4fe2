package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// The receiver's side: Verifier checks that a delivery comes from the service, the HMAC-SHA256
// of "<timestamp>.<raw body>" under the endpoint's secret (Sign), compared in constant time, in
// X-Service-Signature or (during a rotation) X-Service-Signature-Previous, with a timestamp
// close to now. Standard library only; contracts/client offers it to receivers in Go.

// DefaultTolerance is how far X-Service-Timestamp may be from now: it bounds replays.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrNoSignature = errors.New("webhook: no X-Service-Signature")
	ErrTimestamp   = errors.New("webhook: X-Service-Timestamp missing or outside the tolerance")
	ErrSignature   = errors.New("webhook: no signature matches")
)

// Verifier checks deliveries signed with one of Secrets (list the new and the old secret while
// you rotate).
type Verifier struct {
	Secrets []string
	// Tolerance bounds the timestamp's distance from Now; default DefaultTolerance.
	Tolerance time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Verify checks the headers of a delivery against its raw body, exactly as received (not
// re-serialised JSON).
func (v Verifier) Verify(h http.Header, body []byte) error {
	sigs := []string{h.Get("X-Service-Signature"), h.Get("X-Service-Signature-Previous")}
	if sigs[0] == "" {
		return ErrNoSignature
	}
	tol, now := v.Tolerance, time.Now
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if v.Now != nil {
		now = v.Now
	}
	ts := h.Get("X-Service-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if d := now().Sub(time.Unix(sec, 0)); d > tol || d < -tol {
		return ErrTimestamp
	}
	for _, secret := range v.Secrets {
		for _, s := range sigs {
			if s != "" && Verify(secret, sec, body, s) {
				return nil
			}
		}
	}
	return ErrSignature
}
