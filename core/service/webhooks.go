package service

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// WebhooksPorts are what managing webhook endpoints needs.
type WebhooksPorts struct {
	Store webhook.Store
	URLs  URLChecker
	Clock clock.Clock
}

// Webhooks manages an account's webhook endpoints and their deliveries.
type Webhooks struct {
	store webhook.Store
	urls  URLChecker
	clock clock.Clock
}

// NewWebhooks returns the Webhooks use case.
func NewWebhooks(p WebhooksPorts) (*Webhooks, error) {
	if err := need("Webhooks", port{"a webhook store", p.Store}, port{"a URL checker", p.URLs}, port{"a clock", p.Clock}); err != nil {
		return nil, err
	}
	return &Webhooks{store: p.Store, urls: p.URLs, clock: p.Clock}, nil
}

// WebhookEndpointView is an endpoint as clients read it. Secret is shown only by create and
// rotate-secret.
type WebhookEndpointView struct {
	ID               string   `json:"id"`
	Name             string   `json:"name"`
	URL              string   `json:"url"`
	SubscribedEvents []string `json:"subscribedEvents"`
	Enabled          bool     `json:"enabled"`
	Secret           string   `json:"secret,omitempty"`
	// PreviousSecretExpiresAt ends the rotation window (Unix ms); null outside one.
	PreviousSecretExpiresAt *int64 `json:"previousSecretExpiresAt"`
	CreatedAt               int64  `json:"createdAt"`
	UpdatedAt               int64  `json:"updatedAt"`
}

// DeliveryView is a delivery as clients read it: its state and the history of its attempts.
type DeliveryView struct {
	ID             string        `json:"id"`
	EndpointID     string        `json:"endpointId"`
	Event          string        `json:"event"`
	JobID          *string       `json:"jobId"`
	State          webhook.State `json:"state"`
	Attempts       int           `json:"attempts"`
	NextAttemptAt  *int64        `json:"nextAttemptAt"`
	LastStatusCode *int          `json:"lastStatusCode"`
	LastError      *string       `json:"lastError"`
	RedeliveryOf   *string       `json:"redeliveryOf"`
	CreatedAt      int64         `json:"createdAt"`
	History        []AttemptView `json:"history"`
	// Request is what every attempt POSTs: the raw body, and the headers that are the same at
	// each attempt. The signature, timestamp and attempt headers are computed per attempt and
	// are not kept.
	Request DeliveryRequestView `json:"request"`
}

// DeliveryRequestView is the request of a delivery, as sent.
type DeliveryRequestView struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// AttemptView is one attempt of a delivery.
type AttemptView struct {
	Attempt    int     `json:"attempt"`
	At         int64   `json:"at"`
	StatusCode *int    `json:"statusCode"`
	Error      *string `json:"error"`
	DurationMs int64   `json:"durationMs"`
}

func endpointView(e webhook.Endpoint, withSecret bool) WebhookEndpointView {
	v := WebhookEndpointView{ID: e.ID, Name: e.Name, URL: e.URL, SubscribedEvents: e.Events, Enabled: e.Enabled,
		CreatedAt: e.CreatedAt.UnixMilli(), UpdatedAt: e.UpdatedAt.UnixMilli()}
	if withSecret {
		v.Secret = e.Secret
	}
	if e.PreviousSecret != "" && e.PreviousUntil != nil {
		ms := e.PreviousUntil.UnixMilli()
		v.PreviousSecretExpiresAt = &ms
	}
	return v
}

func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// NewDeliveryView renders a delivery for clients.
func NewDeliveryView(d webhook.Delivery) DeliveryView {
	v := DeliveryView{ID: d.ID, EndpointID: d.EndpointID, Event: d.Event, JobID: nonZero(d.JobID), State: d.State,
		Attempts: d.Attempts, LastStatusCode: nonZero(d.LastStatusCode), LastError: nonZero(d.LastError),
		RedeliveryOf: nonZero(d.RedeliveryOf), CreatedAt: d.CreatedAt.UnixMilli(), History: []AttemptView{},
		// The names are the spec's and webhookout's, which sends them.
		Request: DeliveryRequestView{Body: string(d.Body), Headers: map[string]string{
			"Content-Type": "application/json", "X-Service-Event": d.Event, "X-Service-Delivery": d.ID}}}
	if d.NextAttemptAt != nil {
		ms := d.NextAttemptAt.UnixMilli()
		v.NextAttemptAt = &ms
	}
	for _, a := range d.History {
		v.History = append(v.History, AttemptView{Attempt: a.N, At: a.At.UnixMilli(), StatusCode: nonZero(a.StatusCode),
			Error: nonZero(a.Error), DurationMs: a.DurationMs})
	}
	return v
}

// WebhookEndpointParams are the fields of POST /webhook-endpoints.
type WebhookEndpointParams struct {
	Name             string
	URL              string
	SubscribedEvents []string
}

// WebhookEndpointPatch are the fields of PATCH /webhook-endpoints/{id}; nil leaves one as is.
type WebhookEndpointPatch struct {
	Name             *string
	URL              *string
	SubscribedEvents *[]string
	Enabled          *bool
}

func (s *Webhooks) checkURL(ctx context.Context, raw string) error {
	if err := s.urls.CheckURL(ctx, raw); err != nil {
		return problem.Reject(problem.CodeValidation, "url %q cannot receive webhooks: %v", raw, err)
	}
	return nil
}

// CreateWebhookEndpoint saves an enabled endpoint with a new secret, which the view shows this
// once.
func (s *Webhooks) CreateWebhookEndpoint(ctx context.Context, a account.Account, p WebhookEndpointParams) (WebhookEndpointView, error) {
	e, err := webhook.NewEndpoint(webhook.NewEndpointParams{ID: job.NewID("we"), AccountID: a.ID, Name: p.Name, URL: p.URL,
		Events: p.SubscribedEvents, Now: s.clock.Now()})
	if err != nil {
		return WebhookEndpointView{}, err
	}
	if err := s.checkURL(ctx, e.URL); err != nil {
		return WebhookEndpointView{}, err
	}
	if err := s.store.CreateEndpoint(ctx, e); err != nil {
		return WebhookEndpointView{}, err
	}
	return endpointView(e, true), nil
}

// ownEndpoint returns the account's endpoint; another account's is NOT_FOUND, as a missing one.
func (s *Webhooks) ownEndpoint(ctx context.Context, a account.Account, id string) (webhook.Endpoint, error) {
	e, err := s.store.GetEndpoint(ctx, id)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && e.AccountID != a.ID) {
		return webhook.Endpoint{}, problem.Reject(problem.CodeNotFound, "webhook endpoint %q not found", id)
	}
	return e, err
}

// GetWebhookEndpoint returns the account's endpoint, without its secret.
func (s *Webhooks) GetWebhookEndpoint(ctx context.Context, a account.Account, id string) (WebhookEndpointView, error) {
	e, err := s.ownEndpoint(ctx, a, id)
	if err != nil {
		return WebhookEndpointView{}, err
	}
	return endpointView(e, false), nil
}

// ListWebhookEndpoints returns the account's endpoints, oldest first.
func (s *Webhooks) ListWebhookEndpoints(ctx context.Context, a account.Account) ([]WebhookEndpointView, error) {
	es, err := s.store.ListEndpoints(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	out := make([]WebhookEndpointView, len(es))
	for i, e := range es {
		out[i] = endpointView(e, false)
	}
	return out, nil
}

// UpdateWebhookEndpoint changes the fields the patch gives; a new URL is vetted as at creation.
func (s *Webhooks) UpdateWebhookEndpoint(ctx context.Context, a account.Account, id string, p WebhookEndpointPatch) (WebhookEndpointView, error) {
	if _, err := s.ownEndpoint(ctx, a, id); err != nil {
		return WebhookEndpointView{}, err
	}
	if p.URL != nil {
		probe := webhook.Endpoint{}
		if err := probe.SetURL(*p.URL); err != nil {
			return WebhookEndpointView{}, err
		}
		if err := s.checkURL(ctx, *p.URL); err != nil {
			return WebhookEndpointView{}, err
		}
	}
	e, err := s.store.UpdateEndpoint(ctx, id, func(e *webhook.Endpoint) error {
		if p.Name != nil {
			if err := e.SetName(*p.Name); err != nil {
				return err
			}
		}
		if p.URL != nil {
			if err := e.SetURL(*p.URL); err != nil {
				return err
			}
		}
		if p.SubscribedEvents != nil {
			if err := e.SetEvents(*p.SubscribedEvents); err != nil {
				return err
			}
		}
		if p.Enabled != nil {
			e.Enabled = *p.Enabled
		}
		e.UpdatedAt = s.clock.Now().UTC()
		return nil
	})
	if err != nil {
		return WebhookEndpointView{}, err
	}
	return endpointView(e, false), nil
}

// DeleteWebhookEndpoint removes the account's endpoint and its deliveries.
func (s *Webhooks) DeleteWebhookEndpoint(ctx context.Context, a account.Account, id string) error {
	if _, err := s.ownEndpoint(ctx, a, id); err != nil {
		return err
	}
	return s.store.DeleteEndpoint(ctx, id)
}

// RotateWebhookSecret gives the endpoint a new secret, shown this once. For
// webhook.RotationWindow deliveries carry both signatures.
func (s *Webhooks) RotateWebhookSecret(ctx context.Context, a account.Account, id string) (WebhookEndpointView, error) {
	if _, err := s.ownEndpoint(ctx, a, id); err != nil {
		return WebhookEndpointView{}, err
	}
	e, err := s.store.UpdateEndpoint(ctx, id, func(e *webhook.Endpoint) error {
		now := s.clock.Now()
		var inProgress *webhook.RotationInProgressError
		if err := e.Rotate(now); errors.As(err, &inProgress) {
			return problem.Reject(problem.CodeConflict, "webhook endpoint %s: %s; rotate again after then", id, err)
		} else if err != nil {
			return err
		}
		e.UpdatedAt = now.UTC()
		return nil
	})
	if err != nil {
		return WebhookEndpointView{}, err
	}
	return endpointView(e, true), nil
}

// TestEvent is the body of a webhook.test delivery.
type TestEvent struct {
	Event      string `json:"event"`
	EndpointID string `json:"endpointId"`
	CreatedAt  int64  `json:"createdAt"`
}

// SendTestWebhook queues a signed webhook.test delivery to the endpoint, sent as any other.
func (s *Webhooks) SendTestWebhook(ctx context.Context, a account.Account, id string) (DeliveryView, error) {
	e, err := s.ownEndpoint(ctx, a, id)
	if err != nil {
		return DeliveryView{}, err
	}
	if !e.Enabled {
		return DeliveryView{}, problem.Reject(problem.CodeConflict, "webhook endpoint %s is disabled; enable it to send a test", id)
	}
	now := s.clock.Now()
	body, err := json.Marshal(TestEvent{Event: webhook.EventTest, EndpointID: e.ID, CreatedAt: now.UnixMilli()})
	if err != nil {
		return DeliveryView{}, err
	}
	delID := job.NewID("del")
	d := webhook.NewDelivery(webhook.NewDeliveryParams{ID: delID, Key: "test:" + delID, Event: webhook.EventTest,
		Endpoint: e, Body: body, Now: now})
	if err := s.store.CreateDelivery(ctx, d); err != nil {
		return DeliveryView{}, err
	}
	return NewDeliveryView(d), nil
}

// ListDeliveries returns a page of the endpoint's deliveries, newest first.
func (s *Webhooks) ListDeliveries(ctx context.Context, a account.Account, endpointID string, p webhook.ListParams) ([]DeliveryView, string, error) {
	if _, err := s.ownEndpoint(ctx, a, endpointID); err != nil {
		return nil, "", err
	}
	p.EndpointID = endpointID
	page, err := s.store.ListDeliveries(ctx, p)
	if err != nil {
		return nil, "", err
	}
	out := make([]DeliveryView, len(page.Deliveries))
	for i, d := range page.Deliveries {
		out[i] = NewDeliveryView(d)
	}
	return out, page.NextCursor, nil
}

// Redeliver sends a delivery's body again as a new delivery (a new del_ ID, a fresh retry
// schedule, redeliveryOf naming the original), whatever the original's state.
func (s *Webhooks) Redeliver(ctx context.Context, a account.Account, deliveryID string) (DeliveryView, error) {
	orig, err := s.store.GetDelivery(ctx, deliveryID)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && orig.AccountID != a.ID) {
		return DeliveryView{}, problem.Reject(problem.CodeNotFound, "delivery %q not found", deliveryID)
	}
	if err != nil {
		return DeliveryView{}, err
	}
	e, err := s.ownEndpoint(ctx, a, orig.EndpointID)
	if err != nil {
		return DeliveryView{}, err
	}
	delID := job.NewID("del")
	d := webhook.NewDelivery(webhook.NewDeliveryParams{ID: delID, Key: "redeliver:" + delID, Event: orig.Event,
		JobID: orig.JobID, Endpoint: e, Body: orig.Body, Now: s.clock.Now()})
	d.RedeliveryOf = orig.ID
	if err := s.store.CreateDelivery(ctx, d); err != nil {
		return DeliveryView{}, err
	}
	return NewDeliveryView(d), nil
}
