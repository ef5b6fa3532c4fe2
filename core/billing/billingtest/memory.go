// Package billingtest holds the shared suite of billing.Ledger and an in-memory Ledger for tests.
//
// A new adapter's test calls TestLedger once, with the Features the adapter has and a Constructor
// that returns an empty ledger of its own on each call:
//
//	billingtest.TestLedger(t, billingtest.Features{}, func(t *testing.T) billing.Ledger { return open(t) })
//
// Each test of the suite is an exported function too (TestConcurrentChargesAppliedOnce, …), so a
// failure names the function to read, and -run selects it by that name.
package billingtest

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/billing"
)

// Memory is an in-memory billing.Ledger. One mutex makes every Append a transaction.
type Memory struct {
	mu      sync.Mutex
	entries []billing.Entry
	keys    map[string]bool
	balance map[string]int64
}

// NewMemory returns an empty ledger.
func NewMemory() *Memory { return &Memory{keys: map[string]bool{}, balance: map[string]int64{}} }

var _ billing.Ledger = (*Memory)(nil)

func (m *Memory) Append(_ context.Context, entries ...billing.Entry) ([]billing.Entry, error) {
	for _, e := range entries {
		if err := e.Check(); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []billing.Entry
	batch := map[string]bool{}
	for _, e := range entries {
		if m.keys[e.Key] || batch[e.Key] {
			continue
		}
		batch[e.Key] = true
		e.CreatedAt = e.CreatedAt.UTC().Truncate(time.Microsecond)
		out = append(out, e)
	}
	for i := range out {
		out[i].Seq = int64(len(m.entries)) + 1
		m.entries = append(m.entries, out[i])
		m.keys[out[i].Key] = true
		m.balance[out[i].AccountID] += out[i].Amount
	}
	return out, nil
}

func (m *Memory) Balance(_ context.Context, accountID string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.balance[accountID], nil
}

func (m *Memory) Entries(_ context.Context, p billing.EntriesParams) (billing.EntryPage, error) {
	var before int64
	if p.Cursor != "" {
		n, err := billing.DecodeCursor(p.Cursor)
		if err != nil {
			return billing.EntryPage{}, err
		}
		before = n
	}
	m.mu.Lock()
	var all []billing.Entry
	for _, e := range m.entries {
		if e.AccountID == p.AccountID && (before == 0 || e.Seq < before) {
			all = append(all, e)
		}
	}
	m.mu.Unlock()
	sort.Slice(all, func(a, b int) bool { return all[a].Seq > all[b].Seq })
	limit := p.NormalizeLimit()
	page := billing.EntryPage{Entries: all}
	if len(all) > limit {
		page.Entries = all[:limit]
		page.NextCursor = billing.EncodeCursor(all[limit-1].Seq)
	}
	return page, nil
}

func (m *Memory) Spent(_ context.Context, accountID string, since time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, e := range m.entries {
		if e.AccountID == accountID && e.Kind == billing.KindCharge && !e.CreatedAt.Before(since) {
			n -= e.Amount
		}
	}
	return n, nil
}
