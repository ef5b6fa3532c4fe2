package webhook

import (
	"context"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// State is where a delivery stands.
type State string

// States of a delivery: pending until a 2xx answer (succeeded) or the last retry fails (failed).
const (
	StatePending   State = "pending"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
)

// Retries are the delays after the 1st, 2nd and 3rd failed attempts (spec: "retried after 5 s
// (1st), 25 s (2nd), 125 s (3rd)"). A delivery is tried at most MaxAttempts times: once, then
// once per retry; the failure of the 4th attempt marks it failed. The spec's "after three
// failures" counts the failed retries, as its limits table does ("Webhook retries: 3").
var Retries = []time.Duration{5 * time.Second, 25 * time.Second, 125 * time.Second}

// MaxAttempts is the first attempt and its three retries.
const MaxAttempts = 4

// Delivery is one event for one endpoint. Body is fixed when the event fans out, so every
// attempt sends, and signs, the same bytes.
type Delivery struct {
	ID         string
	EndpointID string
	AccountID  string
	// Key is unique: an event fans out to an endpoint once ("<event key>|<endpoint id>").
	Key   string
	Event string
	JobID string
	Body  []byte
	State State
	// Attempts made so far; History has one entry each.
	Attempts int
	// NextAttemptAt is when a pending delivery is due (while one is in flight, the end of its
	// lease); nil once it is settled.
	NextAttemptAt  *time.Time
	LastStatusCode int
	LastError      string
	History        []Attempt
	// RedeliveryOf names the delivery this one sends again, if any.
	RedeliveryOf string
	CreatedAt    time.Time
}

// Attempt is one POST of a delivery.
type Attempt struct {
	N          int       `json:"attempt"`
	At         time.Time `json:"at"`
	StatusCode int       `json:"statusCode,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMs int64     `json:"durationMs"`
}

// NewDeliveryParams make a pending delivery, due at Now.
type NewDeliveryParams struct {
	ID, Key, Event, JobID string
	Endpoint              Endpoint
	Body                  []byte
	Now                   time.Time
}

// NewDelivery returns a pending delivery due now.
func NewDelivery(p NewDeliveryParams) Delivery {
	now := p.Now.UTC().Truncate(time.Microsecond)
	return Delivery{ID: p.ID, EndpointID: p.Endpoint.ID, AccountID: p.Endpoint.AccountID, Key: p.Key,
		Event: p.Event, JobID: p.JobID, Body: p.Body, State: StatePending, NextAttemptAt: &now, CreatedAt: now}
}

// Succeeded reports whether status is a success: 2xx only.
func Succeeded(status int) bool { return status >= 200 && status <= 299 }

// Record adds an attempt that ended at now: a 2xx settles the delivery; a failure schedules the
// next retry or, after the last, fails it.
func (d *Delivery) Record(a Attempt, now time.Time) {
	d.Attempts++
	a.N = d.Attempts
	a.At = a.At.UTC().Truncate(time.Microsecond)
	d.History = append(d.History, a)
	d.LastStatusCode, d.LastError = a.StatusCode, a.Error
	switch {
	case a.Error == "" && Succeeded(a.StatusCode):
		d.State, d.NextAttemptAt = StateSucceeded, nil
	case d.Attempts >= MaxAttempts:
		d.State, d.NextAttemptAt = StateFailed, nil
	default:
		next := now.UTC().Truncate(time.Microsecond).Add(Retries[d.Attempts-1])
		d.State, d.NextAttemptAt = StatePending, &next
	}
}

// Abandon fails a pending delivery without an attempt (its endpoint was disabled).
func (d *Delivery) Abandon(reason string) {
	d.State, d.NextAttemptAt, d.LastError = StateFailed, nil, reason
}

// Store is the port of webhook persistence.
type Store interface {
	// CreateEndpoint saves a new endpoint; a taken ID is problem.ErrConflict.
	CreateEndpoint(ctx context.Context, e Endpoint) error
	// GetEndpoint returns an endpoint or problem.ErrNotFound.
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	// ListEndpoints returns an account's endpoints, oldest first.
	ListEndpoints(ctx context.Context, accountID string) ([]Endpoint, error)
	// UpdateEndpoint loads the endpoint, calls fn and saves what fn left, in one transaction.
	// fn's error writes nothing and is returned.
	UpdateEndpoint(ctx context.Context, id string, fn func(*Endpoint) error) (Endpoint, error)
	// DeleteEndpoint removes an endpoint and its deliveries; a missing one is problem.ErrNotFound.
	DeleteEndpoint(ctx context.Context, id string) error

	// CreateDelivery saves a new delivery. A delivery with the same Key (or ID) already there is
	// problem.ErrConflict and changes nothing, which makes fan-out idempotent.
	CreateDelivery(ctx context.Context, d Delivery) error
	// GetDelivery returns a delivery or problem.ErrNotFound.
	GetDelivery(ctx context.Context, id string) (Delivery, error)
	// UpdateDelivery loads the delivery, calls fn and saves what fn left, in one transaction.
	UpdateDelivery(ctx context.Context, id string, fn func(*Delivery) error) (Delivery, error)
	// ClaimDeliveries leases up to Limit pending deliveries due at Now, soonest first, by moving
	// their NextAttemptAt to Now+Lease: one claimer gets each (SKIP LOCKED where the database
	// has it), and a delivery whose deliverer dies comes back after the lease.
	ClaimDeliveries(ctx context.Context, p ClaimParams) ([]Delivery, error)
	// ListDeliveries returns an endpoint's deliveries newest first, a page at a time.
	ListDeliveries(ctx context.Context, p ListParams) (Page, error)
}

// ClaimParams select the deliveries a deliverer takes.
type ClaimParams struct {
	Limit int
	Lease time.Duration
	Now   time.Time
}

// ListParams select a page of an endpoint's deliveries.
type ListParams struct {
	EndpointID string
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
	Limit  int
}

// Page is one page of deliveries; NextCursor is empty on the last.
type Page struct {
	Deliveries []Delivery
	NextCursor string
}

// NormalizeLimit applies the default (20) and the cap (100), as job listings do.
func (p ListParams) NormalizeLimit() int {
	return job.ListParams{Limit: p.Limit}.NormalizeLimit()
}

// EncodeCursor is the opaque position after d in a newest-first listing by (CreatedAt, ID).
func EncodeCursor(d Delivery) string { return job.KeysetCursor(d.CreatedAt, d.ID) }

// DecodeCursor reads a cursor of EncodeCursor; anything else is a VALIDATION_ERROR naming it.
func DecodeCursor(s string) (time.Time, string, error) { return job.ParseKeysetCursor(s, "del_") }

// Before reports whether d sorts after the position (t, id) in a newest-first listing.
func (d Delivery) Before(t time.Time, id string) bool {
	return job.SortsAfter(d.CreatedAt, d.ID, t, id)
}
