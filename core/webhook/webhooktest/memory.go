package webhooktest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// Memory is a webhook.Store in memory. Safe for concurrent use.
type Memory struct {
	mu         sync.Mutex
	endpoints  map[string]webhook.Endpoint
	deliveries map[string]webhook.Delivery
	keys       map[string]string
}

var _ webhook.Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{endpoints: map[string]webhook.Endpoint{}, deliveries: map[string]webhook.Delivery{}, keys: map[string]string{}}
}

func copyEndpoint(e webhook.Endpoint) webhook.Endpoint {
	e.Events = slices.Clone(e.Events)
	if e.PreviousUntil != nil {
		t := *e.PreviousUntil
		e.PreviousUntil = &t
	}
	return e
}

func copyDelivery(d webhook.Delivery) webhook.Delivery {
	d.Body = slices.Clone(d.Body)
	d.History = slices.Clone(d.History)
	if d.NextAttemptAt != nil {
		t := *d.NextAttemptAt
		d.NextAttemptAt = &t
	}
	return d
}

// CreateEndpoint implements webhook.Store.
func (m *Memory) CreateEndpoint(_ context.Context, e webhook.Endpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.endpoints[e.ID]; ok {
		return fmt.Errorf("endpoint %s: %w", e.ID, problem.ErrConflict)
	}
	m.endpoints[e.ID] = copyEndpoint(e)
	return nil
}

// GetEndpoint implements webhook.Store.
func (m *Memory) GetEndpoint(_ context.Context, id string) (webhook.Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endpoints[id]
	if !ok {
		return webhook.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, problem.ErrNotFound)
	}
	return copyEndpoint(e), nil
}

// ListEndpoints implements webhook.Store.
func (m *Memory) ListEndpoints(_ context.Context, accountID string) ([]webhook.Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []webhook.Endpoint
	for _, e := range m.endpoints {
		if e.AccountID == accountID {
			out = append(out, copyEndpoint(e))
		}
	}
	slices.SortFunc(out, func(a, b webhook.Endpoint) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// UpdateEndpoint implements webhook.Store.
func (m *Memory) UpdateEndpoint(_ context.Context, id string, fn func(*webhook.Endpoint) error) (webhook.Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.endpoints[id]
	if !ok {
		return webhook.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, problem.ErrNotFound)
	}
	e = copyEndpoint(e)
	if err := fn(&e); err != nil {
		return webhook.Endpoint{}, err
	}
	m.endpoints[id] = copyEndpoint(e)
	return e, nil
}

// DeleteEndpoint implements webhook.Store.
func (m *Memory) DeleteEndpoint(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.endpoints[id]; !ok {
		return fmt.Errorf("endpoint %s: %w", id, problem.ErrNotFound)
	}
	delete(m.endpoints, id)
	for did, d := range m.deliveries {
		if d.EndpointID == id {
			delete(m.deliveries, did)
			delete(m.keys, d.Key)
		}
	}
	return nil
}

// CreateDelivery implements webhook.Store.
func (m *Memory) CreateDelivery(_ context.Context, d webhook.Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.endpoints[d.EndpointID]; !ok {
		return fmt.Errorf("delivery %s: endpoint %s: %w", d.ID, d.EndpointID, problem.ErrNotFound)
	}
	if _, ok := m.keys[d.Key]; ok {
		return fmt.Errorf("delivery %s: %w", d.Key, problem.ErrConflict)
	}
	if _, ok := m.deliveries[d.ID]; ok {
		return fmt.Errorf("delivery %s: %w", d.ID, problem.ErrConflict)
	}
	m.deliveries[d.ID] = copyDelivery(d)
	m.keys[d.Key] = d.ID
	return nil
}

// GetDelivery implements webhook.Store.
func (m *Memory) GetDelivery(_ context.Context, id string) (webhook.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.deliveries[id]
	if !ok {
		return webhook.Delivery{}, fmt.Errorf("delivery %s: %w", id, problem.ErrNotFound)
	}
	return copyDelivery(d), nil
}

// UpdateDelivery implements webhook.Store.
func (m *Memory) UpdateDelivery(_ context.Context, id string, fn func(*webhook.Delivery) error) (webhook.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.deliveries[id]
	if !ok {
		return webhook.Delivery{}, fmt.Errorf("delivery %s: %w", id, problem.ErrNotFound)
	}
	d = copyDelivery(d)
	if err := fn(&d); err != nil {
		return webhook.Delivery{}, err
	}
	m.deliveries[id] = copyDelivery(d)
	return d, nil
}

// ClaimDeliveries implements webhook.Store.
func (m *Memory) ClaimDeliveries(_ context.Context, p webhook.ClaimParams) ([]webhook.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []webhook.Delivery
	for _, d := range m.deliveries {
		if d.State == webhook.StatePending && d.NextAttemptAt != nil && !d.NextAttemptAt.After(p.Now) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b webhook.Delivery) int {
		return cmp.Or(a.NextAttemptAt.Compare(*b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	if len(due) > p.Limit {
		due = due[:max(p.Limit, 0)]
	}
	lease := p.Now.UTC().Add(p.Lease)
	out := make([]webhook.Delivery, len(due))
	for i, d := range due {
		out[i] = copyDelivery(d)
		d.NextAttemptAt = &lease
		m.deliveries[d.ID] = d
	}
	return out, nil
}

// ListDeliveries implements webhook.Store.
func (m *Memory) ListDeliveries(_ context.Context, p webhook.ListParams) (webhook.Page, error) {
	limit := p.NormalizeLimit()
	var after func(webhook.Delivery) bool
	if p.Cursor != "" {
		t, id, err := webhook.DecodeCursor(p.Cursor)
		if err != nil {
			return webhook.Page{}, err
		}
		after = func(d webhook.Delivery) bool { return d.Before(t, id) }
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []webhook.Delivery
	for _, d := range m.deliveries {
		if d.EndpointID == p.EndpointID && (after == nil || after(d)) {
			all = append(all, copyDelivery(d))
		}
	}
	slices.SortFunc(all, func(a, b webhook.Delivery) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	page := webhook.Page{Deliveries: all}
	if len(all) > limit {
		page.Deliveries = all[:limit]
		page.NextCursor = webhook.EncodeCursor(all[limit-1])
	}
	return page, nil
}
