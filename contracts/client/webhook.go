package client

import (
	"net/http"

	"github.com/mediajobs/mediajobs/core/webhook"
)

// WebhookVerifier checks that a delivery comes from the service: the HMAC-SHA256 of
// "<X-Service-Timestamp>.<raw body>" under one of Secrets, `sha256=` hex, compared in constant
// time against X-Service-Signature or, during a secret rotation, X-Service-Signature-Previous,
// with a timestamp within Tolerance (default DefaultWebhookTolerance) of Now. It is the
// service's own receiver-side check, core/webhook's, so there is one implementation.
type WebhookVerifier = webhook.Verifier

// DefaultWebhookTolerance bounds how old (or how far ahead) a delivery's timestamp may be.
const DefaultWebhookTolerance = webhook.DefaultTolerance

// Errors of WebhookVerifier.Verify and VerifyWebhook.
var (
	ErrNoSignature        = webhook.ErrNoSignature
	ErrSignatureTimestamp = webhook.ErrTimestamp
	ErrSignatureMismatch  = webhook.ErrSignature
)

// VerifyWebhook checks a delivery's headers against its raw body, exactly as received (not
// re-serialised JSON), with the endpoint's secrets: the current one and, while you rotate, the
// previous one. It is nil when a signature matches within DefaultWebhookTolerance.
func VerifyWebhook(h http.Header, body []byte, secrets ...string) error {
	return WebhookVerifier{Secrets: secrets}.Verify(h, body)
}
