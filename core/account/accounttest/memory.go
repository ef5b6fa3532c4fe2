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
	keys     map[string]account.Key // by key ID
}

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{accounts: map[string]account.Account{}, keys: map[string]account.Key{}}
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

func copyKey(k account.Key) account.Key {
	if k.RevokedAt != nil {
		t := *k.RevokedAt
		k.RevokedAt = &t
	}
	return k
}
