package assettest

import (
	"cmp"
	"context"
	"slices"
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

func (m *Memory) FindAssetsBySHA256(_ context.Context, accountID, sha256 string) ([]asset.Asset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	found := []asset.Asset{}
	for _, a := range m.assets {
		if a.AccountID == accountID && a.SHA256 == sha256 && sha256 != "" {
			found = append(found, a)
		}
	}
	// Newest first, as the SQL stores order them; the ID breaks a tie.
	slices.SortFunc(found, func(a, b asset.Asset) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return found, nil
}
