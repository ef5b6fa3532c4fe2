package idempotencytest

import (
	"context"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is an idempotency.Store in memory.
type Memory struct {
	mu   sync.Mutex
	recs map[[2]string]idempotency.Record
}

var _ idempotency.Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{recs: map[[2]string]idempotency.Record{}} }

// ReserveKey implements idempotency.Store.
func (m *Memory) ReserveKey(_ context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{rec.AccountID, rec.Key}
	if old, ok := m.recs[k]; ok && now.Before(old.ExpiresAt) && (old.State == idempotency.Done || now.Before(old.LeaseUntil)) {
		return clone(old), false, nil
	}
	m.recs[k] = clone(rec)
	return idempotency.Record{}, true, nil
}

// CompleteKey implements idempotency.Store.
func (m *Memory) CompleteKey(_ context.Context, accountID, key, owner, fingerprint string, response []byte) error {
	return m.updatePending(accountID, key, owner, func(r *idempotency.Record) {
		r.State, r.Fingerprint, r.Response = idempotency.Done, fingerprint, append([]byte(nil), response...)
	})
}

// RenewKey implements idempotency.Store.
func (m *Memory) RenewKey(_ context.Context, accountID, key, owner string, until time.Time) error {
	return m.updatePending(accountID, key, owner, func(r *idempotency.Record) { r.LeaseUntil = until })
}

// updatePending changes the pending record of (accountID, key) that owner holds;
// problem.ErrNotFound when it holds none.
func (m *Memory) updatePending(accountID, key, owner string, change func(*idempotency.Record)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{accountID, key}
	r, ok := m.recs[k]
	if !ok || r.State != idempotency.Pending || r.Owner != owner {
		return problem.ErrNotFound
	}
	change(&r)
	m.recs[k] = r
	return nil
}

// ReleaseKey implements idempotency.Store.
func (m *Memory) ReleaseKey(_ context.Context, accountID, key, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{accountID, key}
	if r, ok := m.recs[k]; ok && r.State == idempotency.Pending && r.Owner == owner {
		delete(m.recs, k)
	}
	return nil
}

// GetKey implements idempotency.Store.
func (m *Memory) GetKey(_ context.Context, accountID, key string) (idempotency.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[[2]string{accountID, key}]
	if !ok {
		return idempotency.Record{}, problem.ErrNotFound
	}
	return clone(r), nil
}

// PurgeKeys implements idempotency.Store.
func (m *Memory) PurgeKeys(_ context.Context, now time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, r := range m.recs {
		if !now.Before(r.ExpiresAt) {
			delete(m.recs, k)
			n++
		}
	}
	return n, nil
}

func clone(r idempotency.Record) idempotency.Record {
	if r.Response != nil {
		r.Response = append([]byte(nil), r.Response...)
	}
	return r
}
