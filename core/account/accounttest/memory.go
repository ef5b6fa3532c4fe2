package accounttest

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is an in-memory account.Store for tests.
type Memory struct {
	mu       sync.Mutex
	accounts map[string]account.Account
	keys     map[string]account.Key     // by key ID
	sessions map[string]account.Session // by hash
}

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{accounts: map[string]account.Account{}, keys: map[string]account.Key{},
		sessions: map[string]account.Session{}}
}

var _ account.Store = (*Memory)(nil)

func (m *Memory) CreateAccount(_ context.Context, a account.Account) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.accounts[a.ID]; ok {
		return problem.ErrConflict
	}
	m.accounts[a.ID] = a
	return nil
}

func (m *Memory) GetAccount(_ context.Context, id string) (account.Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return account.Account{}, problem.ErrNotFound
	}
	return a, nil
}

func (m *Memory) SetPlan(_ context.Context, id string, p account.Plan) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return problem.ErrNotFound
	}
	a.Plan = p
	m.accounts[id] = a
	return nil
}

func (m *Memory) ListAccounts(_ context.Context, p account.ListParams) ([]account.Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []account.Account
	for _, a := range m.accounts {
		if a.ID > p.After && (p.Plan == "" || a.Plan == p.Plan) {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

func (m *Memory) CreateKey(_ context.Context, k account.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.accounts[k.AccountID]; !ok {
		return problem.ErrNotFound
	}
	for _, o := range m.keys {
		if o.ID == k.ID || o.Hash == k.Hash {
			return problem.ErrConflict
		}
	}
	m.keys[k.ID] = copyKey(k)
	return nil
}

func (m *Memory) AccountByKeyHash(_ context.Context, hash string) (account.Account, account.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.keys {
		if k.Hash == hash && k.RevokedAt == nil {
			return m.accounts[k.AccountID], copyKey(k), nil
		}
	}
	return account.Account{}, account.Key{}, problem.ErrNotFound
}

func (m *Memory) RevokeKey(_ context.Context, accountID, keyID string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[keyID]
	if !ok || k.AccountID != accountID {
		return problem.ErrNotFound
	}
	if k.RevokedAt == nil {
		t := at
		k.RevokedAt = &t
		m.keys[keyID] = k
	}
	return nil
}

func (m *Memory) ListKeys(_ context.Context, accountID string) ([]account.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []account.Key{}
	for _, k := range m.keys {
		if k.AccountID == accountID {
			out = append(out, copyKey(k))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func (m *Memory) TouchKey(_ context.Context, keyID string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[keyID]
	if !ok {
		return problem.ErrNotFound
	}
	if k.LastUsedAt == nil || at.After(*k.LastUsedAt) {
		t := at
		k.LastUsedAt = &t
		m.keys[keyID] = k
	}
	return nil
}

func (m *Memory) CreateSession(_ context.Context, s account.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[s.KeyID]
	if !ok || k.AccountID != s.AccountID {
		return problem.ErrNotFound
	}
	if _, ok := m.sessions[s.Hash]; ok {
		return problem.ErrConflict
	}
	m.sessions[s.Hash] = s
	return nil
}

func (m *Memory) SessionByHash(_ context.Context, hash string) (account.Account, account.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[hash]
	if !ok || m.keys[s.KeyID].RevokedAt != nil {
		return account.Account{}, account.Session{}, problem.ErrNotFound
	}
	return m.accounts[s.AccountID], s, nil
}

func (m *Memory) DeleteSession(_ context.Context, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, hash)
	return nil
}

func (m *Memory) DeleteExpiredSessions(_ context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for h, s := range m.sessions {
		if s.ExpiresAt.Before(now) {
			delete(m.sessions, h)
			n++
		}
	}
	return n, nil
}

func copyKey(k account.Key) account.Key {
	if k.RevokedAt != nil {
		t := *k.RevokedAt
		k.RevokedAt = &t
	}
	if k.LastUsedAt != nil {
		t := *k.LastUsedAt
		k.LastUsedAt = &t
	}
	return k
}
