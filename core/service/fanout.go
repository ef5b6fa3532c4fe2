package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// FanOutPorts are what turning events into deliveries needs.
type FanOutPorts struct {
	Store   webhook.Store
	Jobs    job.Store
	Batches batch.Store
	Viewer  Viewer
}

// FanOut turns job and batch events into durable webhook deliveries.
type FanOut struct {
	store   webhook.Store
	jobs    job.Store
	batches batch.Store
	viewer  Viewer
}

// NewFanOut returns the FanOut use case.
func NewFanOut(p FanOutPorts) (*FanOut, error) {
	err := errors.Join(need("FanOut", port{"a webhook store", p.Store}, port{"a job store", p.Jobs}, port{"a batch store", p.Batches}),
		p.Viewer.check())
	if err != nil {
		return nil, err
	}
	return &FanOut{store: p.Store, jobs: p.Jobs, batches: p.Batches, viewer: p.Viewer}, nil
}

// Handle is the Relay handler of TopicEvents: it writes one delivery per enabled endpoint of
// the job's (or, for batch.completed, the batch's) account subscribed to the event. The body is fixed here, output URLs minted here
// for Config.URLTTL, so every attempt sends the same bytes. It is idempotent: a delivery's key
// is the message key and the endpoint, and a key already stored is skipped.
func (s *FanOut) Handle(ctx context.Context, m job.Message) error {
	_, err := s.Fan(ctx, m)
	return err
}

// Fan is Handle, answering how many deliveries it wrote: a deliverer need not look for due
// deliveries after an event no endpoint subscribes to, as most are.
func (s *FanOut) Fan(ctx context.Context, m job.Message) (int, error) {
	var ev Event
	if err := json.Unmarshal(m.Payload, &ev); err != nil {
		return 0, fmt.Errorf("event %s: %w", m.Key, err)
	}
	var (
		accountID string
		body      []byte
	)
	if ev.Event == webhook.EventBatchCompleted {
		// A batch event is sent as written: it has no file URLs to mint.
		var be BatchEvent
		if err := json.Unmarshal(m.Payload, &be); err != nil {
			return 0, fmt.Errorf("event %s: %w", m.Key, err)
		}
		b, err := s.batches.GetBatch(ctx, be.BatchID)
		if errors.Is(err, problem.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		accountID, body = b.AccountID, m.Payload
	} else {
		j, err := s.jobs.Get(ctx, ev.JobID)
		if errors.Is(err, problem.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		accountID = j.AccountID
	}
	es, err := s.store.ListEndpoints(ctx, accountID)
	if err != nil {
		return 0, err
	}
	written := 0
	now := s.viewer.Clock.Now()
	for _, e := range es {
		if !e.Subscribed(ev.Event) {
			continue
		}
		// An endpoint hears of what happens once it exists. The relay takes an event up a
		// moment after its change (the outbox is behind by a pass), and an endpoint made in
		// that moment is not told of what happened before it.
		if !m.CreatedAt.IsZero() && e.CreatedAt.After(m.CreatedAt) {
			continue
		}
		if body == nil {
			if ev.Output != nil {
				o := s.viewer.Sign(ev.JobID, *ev.Output)
				ev.Output = &o
			}
			if body, err = json.Marshal(ev); err != nil {
				return written, err
			}
		}
		d := webhook.NewDelivery(webhook.NewDeliveryParams{ID: job.NewID("del"), Key: m.Key + "|" + e.ID, Event: ev.Event,
			JobID: ev.JobID, Endpoint: e, Body: body, Now: now})
		switch err := s.store.CreateDelivery(ctx, d); {
		case err == nil:
			written++
		case !errors.Is(err, problem.ErrConflict):
			return written, err
		}
	}
	return written, nil
}
