package assettest

import (
	"context"
	"sync"

	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is an in-memory asset.Store for tests.
type Memory struct {
	mu     sync.Mutex
	assets map[string]asset.Asset
}

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{assets: map[string]asset.Asset{}} }

var _ asset.Store = (*Memory)(nil)

func (m *Memory) CreateAsset(_ context.Context, a asset.Asset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.assets[a.ID]; ok {
		return problem.ErrConflict
	}
	m.assets[a.ID] = a
	return nil
}

func (m *Memory) GetAsset(_ context.Context, id string) (asset.Asset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.assets[id]
	if !ok {
		return asset.Asset{}, problem.ErrNotFound
	}
	return a, nil
}
