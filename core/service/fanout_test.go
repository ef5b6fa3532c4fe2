package service_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// TestFanOutCountsItsDeliveries: Fan answers how many deliveries an event made, so the
// deliverer is woken only for those: none for an account without a subscribed endpoint, none
// for an event handed on again (its deliveries exist).
func TestFanOutCountsItsDeliveries(t *testing.T) {
	t.Parallel()
	h := setup(t)
	hooked := h.open(t, account.PlanPro, 1000)
	plain := h.open(t, account.PlanPro, 1000)
	for _, events := range [][]string{{webhook.EventJobCompleted}, {webhook.EventJobCompleted, webhook.EventJobFailed}, {webhook.EventJobFailed}} {
		if _, err := h.webhooks.CreateWebhookEndpoint(h.ctx, hooked, service.WebhookEndpointParams{Name: "e", URL: "https://hooks.example.com/in",
			SubscribedEvents: events}); err != nil {
			t.Fatal(err)
		}
	}
	event := func(a account.Account) job.Message {
		j := h.submitJob(t, a, `{}`)
		return job.Message{Key: webhook.EventJobCompleted + ":" + j.ID, Topic: service.TopicEvents,
			Payload: []byte(`{"event":"job.completed","jobId":"` + j.ID + `","timing":{"createdAt":0}}`)}
	}
	m := event(hooked)
	for _, tt := range []struct {
		name string
		m    job.Message
		want int
	}{
		{"two of three endpoints subscribe", m, 2},
		{"handed on again", m, 0},
		{"an account without endpoints", event(plain), 0},
	} {
		n, err := h.fanOut.Fan(h.ctx, tt.m)
		if err != nil || n != tt.want {
			t.Errorf("%s: Fan = %d, %v; want %d", tt.name, n, err, tt.want)
		}
	}
}
