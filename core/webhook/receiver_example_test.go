package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/webhook"
)

func ExampleVerifier() {
	v := webhook.Verifier{Secrets: []string{"whsec_new", "whsec_old"}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := v.Verify(r.Header, body); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Deduplicate on X-Service-Delivery, then handle the event.
		w.WriteHeader(http.StatusNoContent)
	})

	body := `{"event":"job.completed","jobId":"job_1"}`
	send := func(secret string) int {
		ts := time.Now().Unix()
		req := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
		req.Header.Set("X-Service-Timestamp", fmt.Sprint(ts))
		req.Header.Set("X-Service-Signature", webhook.Sign(secret, ts, []byte(body)))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}
	fmt.Println(send("whsec_new"), send("whsec_forged"))
	// Output: 204 401
}
