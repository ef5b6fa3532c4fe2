// Package presettest holds the shared suite of the preset.Store port and an in-memory Store
// that passes it, for tests of code that uses the port.
//
// An adapter's test calls TestStore with a Constructor returning an empty store of its own:
//
//	presettest.TestStore(t, func(t *testing.T) preset.Store { return open(t) })
//
// Each test of the suite is an exported function too, so -run selects it by name.
package presettest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is a preset.Store in memory. Safe for concurrent use.
type Memory struct {
	mu      sync.Mutex
	presets map[[2]string]*preset.Preset
}

var _ preset.Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{presets: map[[2]string]*preset.Preset{}} }

// clone is a deep copy, through JSON as the SQL store keeps it.
func clone(p *preset.Preset) *preset.Preset {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	var c preset.Preset
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	c.AccountID = p.AccountID
	return &c
}

// CreatePreset implements preset.Store.
func (m *Memory) CreatePreset(_ context.Context, p *preset.Preset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.AccountID, p.Name}
	if m.presets[k] != nil {
		return fmt.Errorf("preset %s: %w", p.Name, problem.ErrConflict)
	}
	p.Version = 1
	m.presets[k] = clone(p)
	return nil
}

// GetPreset implements preset.Store.
func (m *Memory) GetPreset(_ context.Context, accountID, name string) (*preset.Preset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.presets[[2]string{accountID, name}]
	if p == nil {
		return nil, fmt.Errorf("preset %s: %w", name, problem.ErrNotFound)
	}
	return clone(p), nil
}

// ListPresets implements preset.Store.
func (m *Memory) ListPresets(_ context.Context, accountID string) ([]*preset.Preset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []*preset.Preset{}
	for k, p := range m.presets {
		if k[0] == accountID {
			out = append(out, clone(p))
		}
	}
	slices.SortFunc(out, func(a, b *preset.Preset) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdatePreset implements preset.Store.
func (m *Memory) UpdatePreset(_ context.Context, p *preset.Preset, version int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.AccountID, p.Name}
	old := m.presets[k]
	switch {
	case old == nil:
		return fmt.Errorf("preset %s: %w", p.Name, problem.ErrNotFound)
	case old.Version != version:
		return fmt.Errorf("preset %s is at version %d, not %d: %w", p.Name, old.Version, version, problem.ErrConflict)
	}
	p.Version, p.CreatedAt = version+1, old.CreatedAt
	m.presets[k] = clone(p)
	return nil
}

// DeletePreset implements preset.Store.
func (m *Memory) DeletePreset(_ context.Context, accountID, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{accountID, name}
	if m.presets[k] == nil {
		return fmt.Errorf("preset %s: %w", name, problem.ErrNotFound)
	}
	delete(m.presets, k)
	return nil
}
