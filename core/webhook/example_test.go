package webhook_test

import (
	"fmt"
	"time"

	"github.com/mediajobs/mediajobs/core/webhook"
)

// The sender signs "<timestamp>.<raw body>" with the endpoint's secret; the receiver checks the
// signature against the raw body it received, and during a rotation against either secret.
func ExampleSign() {
	secret := "whsec_0123456789abcdef"
	body := []byte(`{"event":"job.completed","jobId":"job_1"}`)
	ts := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC).Unix()

	sig := webhook.Sign(secret, ts, body)
	fmt.Println(sig[:7], len(sig))
	fmt.Println("genuine:", webhook.Verify(secret, ts, body, sig))
	fmt.Println("body changed:", webhook.Verify(secret, ts, []byte(`{"event":"job.completed","jobId":"job_2"}`), sig))
	fmt.Println("other secret:", webhook.Verify("whsec_other", ts, body, sig))
	// Output:
	// sha256= 71
	// genuine: true
	// body changed: false
	// other secret: false
}

// Rotating a secret keeps the old one valid, as X-Service-Signature-Previous, for 24 hours.
func ExampleEndpoint_Rotate() {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	ep, err := webhook.NewEndpoint(webhook.NewEndpointParams{ID: "we_1", AccountID: "acc_1", Name: "orders",
		URL: "https://hooks.example.com/mediajobs", Events: []string{webhook.EventJobCompleted}, Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	old := ep.Secret
	if err := ep.Rotate(now); err != nil {
		fmt.Println(err)
		return
	}
	prev, ok := ep.Previous(now.Add(23 * time.Hour))
	fmt.Println("old secret still signs after 23 h:", ok && prev == old)
	fmt.Println("rotating again at once:", ep.Rotate(now.Add(time.Minute)))
	_, ok = ep.Previous(now.Add(24 * time.Hour))
	fmt.Println("after 24 h:", ok)
	// Output:
	// old secret still signs after 23 h: true
	// rotating again at once: the secret was rotated less than 24 hours ago; the secret before it signs until 2026-11-25T09:00:00Z, and a delivery carries two signatures at most
	// after 24 h: false
}
