package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/problem"
)

// Event names of the spec, and the test event of POST /webhook-endpoints/{id}/test.
const (
	EventJobRunning     = "job.running"
	EventJobCompleted   = "job.completed"
	EventJobFailed      = "job.failed"
	EventJobCancelled   = "job.cancelled"
	EventBatchCompleted = "batch.completed"
	// EventJobDelivered and EventJobDeliveryFailed tell how a complete job's outputs were
	// copied to its destination; they never change the job.
	EventJobDelivered      = "job.delivered"
	EventJobDeliveryFailed = "job.delivery_failed"
	// EventTest is sent by SendTest only; it cannot be subscribed to.
	EventTest = "webhook.test"
)

// Events are the names an endpoint may subscribe to.
var Events = []string{EventJobCompleted, EventJobFailed, EventJobRunning, EventJobCancelled, EventBatchCompleted,
	EventJobDelivered, EventJobDeliveryFailed}

// Limits of the spec.
const (
	MaxNameLength = 50
	// RotationWindow is how long the previous secret still signs after a rotation.
	RotationWindow = 24 * time.Hour
	// Timeout is the receiver's time to answer 2xx.
	Timeout = 10 * time.Second
	// SecretPrefix begins every signing secret.
	SecretPrefix = "whsec_"
)

// Endpoint is a receiver of an account's events.
type Endpoint struct {
	ID        string
	AccountID string
	Name      string
	URL       string
	Events    []string
	Enabled   bool
	// Secret signs every delivery; PreviousSecret also signs, as X-Service-Signature-Previous,
	// until PreviousUntil.
	Secret         string
	PreviousSecret string
	PreviousUntil  *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// NewEndpointParams are the fields a client gives.
type NewEndpointParams struct {
	ID, AccountID, Name, URL string
	Events                   []string
	Now                      time.Time
}

// NewEndpoint validates the fields and returns an enabled endpoint with a fresh secret.
func NewEndpoint(p NewEndpointParams) (Endpoint, error) {
	e := Endpoint{ID: p.ID, AccountID: p.AccountID, Enabled: true, Secret: NewSecret(),
		CreatedAt: p.Now.UTC().Truncate(time.Microsecond)}
	e.UpdatedAt = e.CreatedAt
	if err := e.SetName(p.Name); err != nil {
		return Endpoint{}, err
	}
	if err := e.SetURL(p.URL); err != nil {
		return Endpoint{}, err
	}
	if err := e.SetEvents(p.Events); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// SetName sets a name of 1 to 50 characters.
func (e *Endpoint) SetName(name string) error {
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameLength || strings.TrimSpace(name) == "" {
		return problem.Reject(problem.CodeValidation, "name must be 1 to %d characters, not blank; got %d", MaxNameLength, n)
	}
	if !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return problem.Reject(problem.CodeValidation, "name %q holds a control character or is not UTF-8", name)
	}
	e.Name = name
	return nil
}

// SetURL sets an absolute https URL with a host and no credentials. Where it may point is the
// caller's check (service.URLChecker): it needs DNS.
func (e *Endpoint) SetURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || raw == "":
		return problem.Reject(problem.CodeValidation, "url %q is not a URL", raw)
	case u.Scheme != "https":
		return problem.Reject(problem.CodeValidation, "url %q must be https", raw)
	case u.Hostname() == "":
		return problem.Reject(problem.CodeValidation, "url %q has no host", raw)
	case u.User != nil:
		return problem.Reject(problem.CodeValidation, "url must not carry credentials")
	case !validPort(u.Port()):
		return problem.Reject(problem.CodeValidation, "url %q: port %q is not 1 to 65535", raw, u.Port())
	case strings.Contains(raw, "#"):
		return problem.Reject(problem.CodeValidation, "url %q has a fragment (#...), which a request never carries", raw)
	case len(raw) > 2048:
		return problem.Reject(problem.CodeValidation, "url is longer than 2048 characters")
	}
	e.URL = raw
	return nil
}

// validPort reports whether port, from a URL, is none (the scheme's) or 1 to 65535.
func validPort(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// SetEvents sets at least one known event, without duplicates; it keeps them sorted.
func (e *Endpoint) SetEvents(events []string) error {
	if len(events) == 0 {
		return problem.Reject(problem.CodeValidation, "subscribedEvents needs at least one of %s", strings.Join(Events, ", "))
	}
	out := make([]string, 0, len(events))
	for _, ev := range events {
		if !slices.Contains(Events, ev) {
			return problem.Reject(problem.CodeValidation, "subscribedEvents: %q is not an event; use %s", ev, strings.Join(Events, ", "))
		}
		if slices.Contains(out, ev) {
			return problem.Reject(problem.CodeValidation, "subscribedEvents: %q is given twice", ev)
		}
		out = append(out, ev)
	}
	slices.Sort(out)
	e.Events = out
	return nil
}

// Subscribed reports whether the endpoint takes event now.
//
// The spec fires a webhook on any terminal status, but names events only for complete and
// failed: job.cancelled is ours. An endpoint subscribed to both of the spec's terminal events
// (job.completed and job.failed) asked to hear how every job ends, so it receives job.cancelled
// too, whether or not it lists it; an endpoint that lists only one of them chose outcomes and
// receives a cancellation only by listing job.cancelled.
func (e *Endpoint) Subscribed(event string) bool {
	if !e.Enabled {
		return false
	}
	if event == EventJobCancelled && slices.Contains(e.Events, EventJobCompleted) && slices.Contains(e.Events, EventJobFailed) {
		return true
	}
	return slices.Contains(e.Events, event)
}

// RotationInProgressError refuses a rotation while the previous one's window is open.
type RotationInProgressError struct {
	// Until is when the secret before the last rotation stops signing: rotating is possible
	// again from then.
	Until time.Time
}

func (e *RotationInProgressError) Error() string {
	return "the secret was rotated less than 24 hours ago; the secret before it signs until " +
		e.Until.UTC().Format(time.RFC3339) + ", and a delivery carries two signatures at most"
}

// Rotate replaces the secret; the old one keeps signing, as X-Service-Signature-Previous, for
// RotationWindow. A second rotation within that window is refused (*RotationInProgressError):
// it would drop the secret receivers were promised for the whole window, since a delivery
// signs with two secrets at most.
func (e *Endpoint) Rotate(now time.Time) error {
	if _, ok := e.Previous(now); ok {
		return &RotationInProgressError{Until: *e.PreviousUntil}
	}
	until := now.UTC().Truncate(time.Microsecond).Add(RotationWindow)
	e.PreviousSecret, e.PreviousUntil = e.Secret, &until
	e.Secret = NewSecret()
	return nil
}

// Previous returns the previous secret while its window lasts.
func (e *Endpoint) Previous(now time.Time) (string, bool) {
	if e.PreviousSecret == "" || e.PreviousUntil == nil || !now.Before(*e.PreviousUntil) {
		return "", false
	}
	return e.PreviousSecret, true
}

// NewSecret returns whsec_ and 32 random bytes in hex.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms.
	return SecretPrefix + hex.EncodeToString(b[:])
}

// Verify tells whether signature (an X-Service-Signature or X-Service-Signature-Previous
// value) is secret's signature of body at timestamp, comparing in constant time. A receiver
// also checks that timestamp is recent, against replays.
func Verify(secret string, timestamp int64, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(signature))
}

// Sign returns "sha256=<hex HMAC-SHA256 of '<timestamp>.<body>' under secret>", the value of
// X-Service-Signature. timestamp is Unix seconds, as sent in X-Service-Timestamp.
func Sign(secret string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
