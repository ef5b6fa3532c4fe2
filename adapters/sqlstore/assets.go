package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/asset"
)

type assetRow struct {
	bun.BaseModel `bun:"table:assets"`

	ID          string    `bun:"id,pk"`
	AccountID   string    `bun:"account_id"`
	Name        string    `bun:"name"`
	ContentType string    `bun:"content_type"`
	Size        int64     `bun:"size"`
	CreatedAt   time.Time `bun:"created_at"`
}

// CreateAsset saves an asset record; a taken ID is problem.ErrConflict.
func (s *Store) CreateAsset(ctx context.Context, a asset.Asset) error {
	r := &assetRow{ID: a.ID, AccountID: a.AccountID, Name: a.Name, ContentType: a.ContentType,
		Size: a.Size, CreatedAt: a.CreatedAt.UTC()}
	_, err := s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("create asset "+a.ID, err)
}

// GetAsset returns the asset or problem.ErrNotFound.
func (s *Store) GetAsset(ctx context.Context, id string) (asset.Asset, error) {
	var r assetRow
	if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return asset.Asset{}, mapErr("asset "+id, err)
	}
	return asset.Asset{ID: r.ID, AccountID: r.AccountID, Name: r.Name, ContentType: r.ContentType,
		Size: r.Size, CreatedAt: r.CreatedAt.UTC()}, nil
}
