package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/webhook"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event":"job.failed"}`)
	headers := func(ts time.Time, sig, prev string) http.Header {
		h := http.Header{}
		h.Set("X-Service-Timestamp", strconv.FormatInt(ts.Unix(), 10))
		if sig != "" {
			h.Set("X-Service-Signature", webhook.Sign(sig, ts.Unix(), body))
		}
		if prev != "" {
			h.Set("X-Service-Signature-Previous", webhook.Sign(prev, ts.Unix(), body))
		}
		return h
	}
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		want    error
	}{
		{"Valid", []string{"new"}, headers(now, "new", ""), nil},
		{"OldSecretDuringRotation", []string{"old"}, headers(now, "new", "old"), nil},
		{"Forged", []string{"new"}, headers(now, "other", ""), webhook.ErrSignature},
		{"NoSignature", []string{"new"}, headers(now, "", ""), webhook.ErrNoSignature},
		{"Stale", []string{"new"}, headers(now.Add(-6*time.Minute), "new", ""), webhook.ErrTimestamp},
		{"Future", []string{"new"}, headers(now.Add(6*time.Minute), "new", ""), webhook.ErrTimestamp},
		{"EdgeOfTolerance", []string{"new"}, headers(now.Add(-5*time.Minute), "new", ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := webhook.Verifier{Secrets: tt.secrets, Now: func() time.Time { return now }}
			if err := v.Verify(tt.h, body); !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
		})
	}
	v := webhook.Verifier{Secrets: []string{"new"}, Now: func() time.Time { return now }}
	if err := v.Verify(headers(now, "new", ""), append(body, ' ')); !errors.Is(err, webhook.ErrSignature) {
		t.Fatalf("a changed body verified: %v", err)
	}
}
