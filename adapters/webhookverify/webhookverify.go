// Package webhookverify checks, on the receiver's side, that a webhook delivery comes from the
// service: the HMAC-SHA256 of "<timestamp>.<raw body>" under the endpoint's secret, compared in
// constant time, in X-Service-Signature or (during a rotation) X-Service-Signature-Previous, with
// a timestamp close to now. Standard library only: copy it into any receiver.
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far X-Service-Timestamp may be from now: it bounds replays.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrNoSignature = errors.New("webhookverify: no X-Service-Signature")
	ErrTimestamp   = errors.New("webhookverify: X-Service-Timestamp missing or outside the tolerance")
	ErrSignature   = errors.New("webhookverify: no signature matches")
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
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts))
		m.Write([]byte{'.'})
		m.Write(body)
		want := m.Sum(nil)
		for _, s := range sigs {
			got, err := hex.DecodeString(strings.TrimPrefix(s, "sha256="))
			if err == nil && strings.HasPrefix(s, "sha256=") && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrSignature
}
