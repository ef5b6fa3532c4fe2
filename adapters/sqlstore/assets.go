package sqlstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/asset"
)

type assetRow struct {
	bun.BaseModel `bun:"table:assets"`

	ID          string `bun:"id,pk"`
	AccountID   string `bun:"account_id"`
	Name        string `bun:"name"`
	ContentType string `bun:"content_type"`
	Size        int64  `bun:"size"`
	// SHA256 is NULL for an asset stored before hashes were kept.
	SHA256    *string   `bun:"sha256"`
	CreatedAt time.Time `bun:"created_at"`
}

func (r assetRow) asset() asset.Asset {
	a := asset.Asset{ID: r.ID, AccountID: r.AccountID, Name: r.Name, ContentType: r.ContentType,
		Size: r.Size, CreatedAt: r.CreatedAt.UTC()}
	if r.SHA256 != nil {
		a.SHA256 = *r.SHA256
	}
	return a
}

// CreateAsset saves an asset record; a taken ID is problem.ErrConflict.
func (s *Store) CreateAsset(ctx context.Context, a asset.Asset) error {
	r := &assetRow{ID: a.ID, AccountID: a.AccountID, Name: a.Name, ContentType: a.ContentType,
		Size: a.Size, CreatedAt: a.CreatedAt.UTC()}
	if a.SHA256 != "" {
		r.SHA256 = &a.SHA256
	}
	_, err := s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("create asset "+a.ID, err)
}

// GetAsset returns the asset or problem.ErrNotFound.
func (s *Store) GetAsset(ctx context.Context, id string) (asset.Asset, error) {
	var r assetRow
	if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return asset.Asset{}, mapErr("asset "+id, err)
	}
	return r.asset(), nil
}

// FindAssetsBySHA256 returns the account's assets with these bytes, newest first.
func (s *Store) FindAssetsBySHA256(ctx context.Context, accountID, sha256 string) ([]asset.Asset, error) {
	found := []asset.Asset{}
	if sha256 == "" {
		return found, nil
	}
	var rows []assetRow
	err := s.r.NewSelect().Model(&rows).Where("account_id = ? AND sha256 = ?", accountID, sha256).
		OrderExpr("created_at DESC, id DESC").Scan(ctx)
	if err != nil {
		return nil, mapErr("assets by sha256", err)
	}
	for _, r := range rows {
		found = append(found, r.asset())
	}
	return found, nil
}
