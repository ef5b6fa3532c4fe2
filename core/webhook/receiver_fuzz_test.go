package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/webhook"
)

// FuzzVerify: headers and body come from whoever can reach the receiver. Verify never panics,
// and it accepts only a signature made with the secret over this body and timestamp.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	f.Add(strconv.FormatInt(now.Unix(), 10), "sha256=00", "", []byte(`{"event":"job.completed"}`))
	f.Add("not-a-number", "sha1=abc", "sha256=", []byte{})
	f.Add("-1", "sha256=zz", "sha256=00ff", []byte("x"))
	f.Fuzz(func(t *testing.T, ts, sig, prev string, body []byte) {
		h := http.Header{}
		h.Set("X-Service-Timestamp", ts)
		h.Set("X-Service-Signature", sig)
		if prev != "" {
			h.Set("X-Service-Signature-Previous", prev)
		}
		v := webhook.Verifier{Secrets: []string{"whsec_fuzz"}, Now: func() time.Time { return now }}
		if v.Verify(h, body) != nil {
			return
		}
		mac := hmac.New(sha256.New, []byte("whsec_fuzz"))
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		if sig != want && prev != want {
			t.Fatalf("accepted a signature that is not the HMAC of this body: %q", sig)
		}
	})
}
