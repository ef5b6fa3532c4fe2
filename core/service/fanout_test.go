package service_test

import (
	"testing"
	"time"

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

// TestFanOutSkipsEndpointsMadeAfterTheEvent: the relay takes an event up after its change, and
// an endpoint made in between is not told of what happened before it existed; one made at the
// same moment or before is.
func TestFanOutSkipsEndpointsMadeAfterTheEvent(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanPro, 1000)
	j := h.submitJob(t, a, `{}`)
	at := h.clock.Now()
	mk := func() {
		t.Helper()
		if _, err := h.webhooks.CreateWebhookEndpoint(h.ctx, a, service.WebhookEndpointParams{Name: "e", URL: "https://hooks.example.com/in",
			SubscribedEvents: []string{webhook.EventJobCompleted}}); err != nil {
			t.Fatal(err)
		}
	}
	mk() // at the event's moment
	h.clock.Advance(time.Millisecond)
	mk() // after it
	m := job.Message{Key: webhook.EventJobCompleted + ":" + j.ID, Topic: service.TopicEvents, CreatedAt: at,
		Payload: []byte(`{"event":"job.completed","jobId":"` + j.ID + `","timing":{"createdAt":0}}`)}
	if n, err := h.fanOut.Fan(h.ctx, m); err != nil || n != 1 {
		t.Errorf("Fan = %d, %v; want 1: the endpoint made after the event is not told of it", n, err)
	}
}
