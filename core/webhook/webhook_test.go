package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestSignIsHMACOfTimestampDotBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"event":"job.completed","jobId":"job_1"}`)
	m := hmac.New(sha256.New, []byte("whsec_k"))
	m.Write([]byte("1700000000." + string(body)))
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := webhook.Sign("whsec_k", 1700000000, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestNewEndpointValidates(t *testing.T) {
	t.Parallel()
	ok := webhook.NewEndpointParams{ID: "we_1", AccountID: "acc", Name: "n", URL: "https://example.com/h",
		Events: []string{webhook.EventJobRunning, webhook.EventJobCompleted}, Now: t0}
	tests := []struct {
		name   string
		change func(*webhook.NewEndpointParams)
		want   string // part of the message; empty: valid
	}{
		{"Valid", func(*webhook.NewEndpointParams) {}, ""},
		{"Name50", func(p *webhook.NewEndpointParams) { p.Name = strings.Repeat("é", 50) }, ""},
		{"NameEmpty", func(p *webhook.NewEndpointParams) { p.Name = "" }, "name must be 1 to 50"},
		{"Name51", func(p *webhook.NewEndpointParams) { p.Name = strings.Repeat("a", 51) }, "name must be 1 to 50"},
		{"HTTP", func(p *webhook.NewEndpointParams) { p.URL = "http://example.com" }, "must be https"},
		{"NoHost", func(p *webhook.NewEndpointParams) { p.URL = "https:///x" }, "no host"},
		{"Credentials", func(p *webhook.NewEndpointParams) { p.URL = "https://u:p@example.com" }, "credentials"},
		{"Port", func(p *webhook.NewEndpointParams) { p.URL = "https://example.com:8443/h" }, ""},
		{"PortPastRange", func(p *webhook.NewEndpointParams) { p.URL = "https://example.com:99999/h" }, `port "99999"`},
		{"PortZero", func(p *webhook.NewEndpointParams) { p.URL = "https://example.com:0/h" }, `port "0"`},
		{"Fragment", func(p *webhook.NewEndpointParams) { p.URL = "https://example.com/h#frag" }, "fragment"},
		{"NotURL", func(p *webhook.NewEndpointParams) { p.URL = "::" }, "not a URL"},
		{"NoEvents", func(p *webhook.NewEndpointParams) { p.Events = nil }, "at least one"},
		{"UnknownEvent", func(p *webhook.NewEndpointParams) { p.Events = []string{"job.exploded"} }, `"job.exploded" is not an event`},
		{"TestEvent", func(p *webhook.NewEndpointParams) { p.Events = []string{webhook.EventTest} }, "is not an event"},
		{"Twice", func(p *webhook.NewEndpointParams) { p.Events = []string{"job.failed", "job.failed"} }, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := ok
			tt.change(&p)
			e, err := webhook.NewEndpoint(p)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("NewEndpoint: %v", err)
				}
				if !strings.HasPrefix(e.Secret, "whsec_") || !e.Enabled {
					t.Fatalf("endpoint %+v: want an enabled endpoint with a whsec_ secret", e)
				}
				return
			}
			if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewEndpoint: %v, want a VALIDATION_ERROR containing %q", err, tt.want)
			}
		})
	}
}

func TestRotationWindow(t *testing.T) {
	t.Parallel()
	e, err := webhook.NewEndpoint(webhook.NewEndpointParams{ID: "we_1", Name: "n", URL: "https://example.com", Events: []string{"job.failed"}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Previous(t0); ok {
		t.Fatal("a new endpoint has a previous secret")
	}
	old := e.Secret
	if err := e.Rotate(t0); err != nil {
		t.Fatal(err)
	}
	if e.Secret == old || !strings.HasPrefix(e.Secret, "whsec_") {
		t.Fatalf("Rotate kept the secret or lost its prefix: %q", e.Secret)
	}
	for _, tt := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {24*time.Hour - time.Second, true}, {24 * time.Hour, false}, {25 * time.Hour, false}} {
		prev, ok := e.Previous(t0.Add(tt.at))
		if ok != tt.want || (ok && prev != old) {
			t.Errorf("Previous at +%v = %q, %v; want the old secret: %v", tt.at, prev, ok, tt.want)
		}
	}
	// A second rotation inside the window would drop the first secret early: refused, saying
	// until when; from the window's end it goes through.
	current := e.Secret
	var inProgress *webhook.RotationInProgressError
	if err := e.Rotate(t0.Add(time.Hour)); !errors.As(err, &inProgress) || !inProgress.Until.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("second Rotate within 24 h = %v, want RotationInProgressError until +24h", err)
	}
	if prev, ok := e.Previous(t0.Add(time.Hour)); e.Secret != current || !ok || prev != old {
		t.Fatalf("a refused Rotate changed the secrets")
	}
	if err := e.Rotate(t0.Add(24 * time.Hour)); err != nil {
		t.Fatalf("Rotate after the window: %v", err)
	}
	if prev, ok := e.Previous(t0.Add(24 * time.Hour)); !ok || prev != current {
		t.Errorf("after the second rotation the previous secret is %q, want the first rotation's", prev)
	}
}

// TestRetrySchedule pins the semantics: four attempts in all, the 2nd, 3rd and 4th 5 s, 25 s
// and 125 s after the failure before them; the 4th failure fails the delivery.
func TestRetrySchedule(t *testing.T) {
	t.Parallel()
	d := webhook.NewDelivery(webhook.NewDeliveryParams{ID: "del_1", Key: "k", Event: "job.failed", Now: t0})
	now := t0
	var gaps []time.Duration
	for d.State == webhook.StatePending {
		d.Record(webhook.Attempt{At: now, StatusCode: 500}, now)
		if d.NextAttemptAt != nil {
			gaps = append(gaps, d.NextAttemptAt.Sub(now))
			now = *d.NextAttemptAt
		}
	}
	if d.State != webhook.StateFailed || d.Attempts != 4 || len(d.History) != 4 {
		t.Fatalf("after failures: state %s, %d attempts, %d in history; want failed after 4", d.State, d.Attempts, len(d.History))
	}
	if diff := cmp.Diff([]time.Duration{5 * time.Second, 25 * time.Second, 125 * time.Second}, gaps); diff != "" {
		t.Fatalf("retry delays (-want +got):\n%s", diff)
	}

	ok := webhook.NewDelivery(webhook.NewDeliveryParams{ID: "del_2", Key: "k2", Now: t0})
	ok.Record(webhook.Attempt{At: t0, StatusCode: 302}, t0)
	ok.Record(webhook.Attempt{At: t0, StatusCode: 204}, t0)
	if ok.State != webhook.StateSucceeded || ok.NextAttemptAt != nil || ok.LastStatusCode != 204 {
		t.Fatalf("a 204 after a 302: %+v; want succeeded (3xx is a failure)", ok)
	}
	if got := []int{ok.History[0].N, ok.History[1].N}; got[0] != 1 || got[1] != 2 {
		t.Fatalf("attempt numbers %v", got)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	d := webhook.Delivery{ID: "del_x", CreatedAt: t0.Add(123 * time.Microsecond)}
	ts, id, err := webhook.DecodeCursor(webhook.EncodeCursor(d))
	if err != nil || id != d.ID || !ts.Equal(d.CreatedAt) {
		t.Fatalf("DecodeCursor = %v %s %v", ts, id, err)
	}
	for _, bad := range []string{"", "!!", "eA", "MTIzfGpvYl94"} {
		if _, _, err := webhook.DecodeCursor(bad); problem.CodeOf(err) != problem.CodeValidation {
			t.Errorf("DecodeCursor(%q): %v, want VALIDATION_ERROR", bad, err)
		}
	}
}

func TestSubscribed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		events  []string
		enabled bool
		event   string
		want    bool
	}{
		{"listed", []string{webhook.EventJobFailed}, true, webhook.EventJobFailed, true},
		{"not listed", []string{webhook.EventJobFailed}, true, webhook.EventJobCompleted, false},
		{"disabled", []string{webhook.EventJobFailed}, false, webhook.EventJobFailed, false},
		{"cancelled listed", []string{webhook.EventJobCancelled}, true, webhook.EventJobCancelled, true},
		{"cancelled to every spec terminal event", []string{webhook.EventJobCompleted, webhook.EventJobFailed}, true, webhook.EventJobCancelled, true},
		{"cancelled to every spec event", []string{webhook.EventJobCompleted, webhook.EventJobFailed, webhook.EventJobRunning}, true, webhook.EventJobCancelled, true},
		{"cancelled not to completed only", []string{webhook.EventJobCompleted}, true, webhook.EventJobCancelled, false},
		{"cancelled not to failed only", []string{webhook.EventJobFailed, webhook.EventJobRunning}, true, webhook.EventJobCancelled, false},
		{"cancelled not when disabled", []string{webhook.EventJobCompleted, webhook.EventJobFailed}, false, webhook.EventJobCancelled, false},
		{"batch not implied", []string{webhook.EventJobCompleted, webhook.EventJobFailed}, true, webhook.EventBatchCompleted, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := webhook.Endpoint{Events: tt.events, Enabled: tt.enabled}
			if got := e.Subscribed(tt.event); got != tt.want {
				t.Fatalf("%v.Subscribed(%s) = %v, want %v", tt.events, tt.event, got, tt.want)
			}
		})
	}
}
