package destinationtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is a destination.Store in memory, for the core's tests and the in-memory harness.
type Memory struct {
	mu           sync.Mutex
	destinations map[string]destination.Destination
	order        []string // destination IDs in creation order
	deliveries   map[string]destination.Delivery
}

var _ destination.Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{destinations: map[string]destination.Destination{}, deliveries: map[string]destination.Delivery{}}
}

// copyDelivery keeps a caller from changing the stored files through its slice.
func copyDelivery(d destination.Delivery) destination.Delivery {
	d.Files = slices.Clone(d.Files)
	if d.NextAttemptAt != nil {
		t := *d.NextAttemptAt
		d.NextAttemptAt = &t
	}
	return d
}

func copyDestination(d destination.Destination) destination.Destination {
	d.Secret.Box = slices.Clone(d.Secret.Box)
	return d
}

// CreateDestination implements destination.Store.
func (m *Memory) CreateDestination(_ context.Context, d destination.Destination) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.destinations[d.ID]; ok {
		return fmt.Errorf("destination %s: %w", d.ID, problem.ErrConflict)
	}
	m.destinations[d.ID] = copyDestination(d)
	m.order = append(m.order, d.ID)
	return nil
}

// GetDestination implements destination.Store.
func (m *Memory) GetDestination(_ context.Context, id string) (destination.Destination, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.destinations[id]
	if !ok {
		return destination.Destination{}, fmt.Errorf("destination %s: %w", id, problem.ErrNotFound)
	}
	return copyDestination(d), nil
}

// ListDestinations implements destination.Store.
func (m *Memory) ListDestinations(_ context.Context, accountID string) ([]destination.Destination, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []destination.Destination{}
	for _, id := range m.order {
		if d := m.destinations[id]; d.AccountID == accountID {
			out = append(out, copyDestination(d))
		}
	}
	return out, nil
}

// ListSealedWith implements destination.Store.
func (m *Memory) ListSealedWith(_ context.Context, notKeyID string, limit int) ([]destination.Destination, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []destination.Destination
	for _, id := range slices.Sorted(maps.Keys(m.destinations)) {
		if d := m.destinations[id]; d.Secret.KeyID != notKeyID && len(out) < limit {
			out = append(out, copyDestination(d))
		}
	}
	return out, nil
}

// SetSecret implements destination.Store.
func (m *Memory) SetSecret(_ context.Context, id string, s destination.Sealed) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.destinations[id]
	if !ok {
		return fmt.Errorf("destination %s: %w", id, problem.ErrNotFound)
	}
	d.Secret = destination.Sealed{KeyID: s.KeyID, Box: slices.Clone(s.Box)}
	m.destinations[id] = d
	return nil
}

// DeleteDestination implements destination.Store.
func (m *Memory) DeleteDestination(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.destinations[id]; !ok {
		return fmt.Errorf("destination %s: %w", id, problem.ErrNotFound)
	}
	for _, d := range m.deliveries {
		if d.DestinationID == id && (d.State == destination.StateAwaiting || d.State == destination.StatePending) {
			return fmt.Errorf("destination %s has deliveries to make: %w", id, problem.ErrConflict)
		}
	}
	delete(m.destinations, id)
	m.order = slices.DeleteFunc(m.order, func(o string) bool { return o == id })
	return nil
}

// CreateJobDelivery implements destination.Store; a destination deleted meanwhile is
// problem.ErrNotFound.
func (m *Memory) CreateJobDelivery(_ context.Context, d destination.Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.destinations[d.DestinationID]; !ok {
		return fmt.Errorf("destination %s: %w", d.DestinationID, problem.ErrNotFound)
	}
	if _, ok := m.deliveries[d.JobID]; ok {
		return fmt.Errorf("delivery of %s: %w", d.JobID, problem.ErrConflict)
	}
	m.deliveries[d.JobID] = copyDelivery(d)
	return nil
}

// GetJobDelivery implements destination.Store.
func (m *Memory) GetJobDelivery(_ context.Context, jobID string) (destination.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.deliveries[jobID]
	if !ok {
		return destination.Delivery{}, fmt.Errorf("delivery of %s: %w", jobID, problem.ErrNotFound)
	}
	return copyDelivery(d), nil
}

// UpdateJobDelivery implements destination.Store.
func (m *Memory) UpdateJobDelivery(_ context.Context, jobID string, fn func(*destination.Delivery) error) (destination.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.deliveries[jobID]
	if !ok {
		return destination.Delivery{}, fmt.Errorf("delivery of %s: %w", jobID, problem.ErrNotFound)
	}
	d = copyDelivery(d)
	if err := fn(&d); err != nil {
		return destination.Delivery{}, err
	}
	d.JobID = jobID
	m.deliveries[jobID] = copyDelivery(d)
	return d, nil
}

// ClaimJobDeliveries implements destination.Store.
func (m *Memory) ClaimJobDeliveries(_ context.Context, p destination.ClaimParams) ([]destination.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []destination.Delivery
	for _, d := range m.deliveries {
		if d.State == destination.StatePending && d.NextAttemptAt != nil && !d.NextAttemptAt.After(p.Now) {
			due = append(due, d)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := due[i], due[j]
		if !a.NextAttemptAt.Equal(*b.NextAttemptAt) {
			return a.NextAttemptAt.Before(*b.NextAttemptAt)
		}
		return a.JobID < b.JobID
	})
	if len(due) > p.Limit {
		due = due[:max(p.Limit, 0)]
	}
	out := make([]destination.Delivery, len(due))
	lease := p.Now.Add(p.Lease)
	for i, d := range due {
		out[i] = copyDelivery(d)
		stored := m.deliveries[d.JobID]
		stored.NextAttemptAt = &lease
		m.deliveries[d.JobID] = stored
	}
	return out, nil
}
