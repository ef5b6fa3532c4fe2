package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
)

var _ preset.Store = (*Store)(nil)

type presetRow struct {
	bun.BaseModel `bun:"table:presets"`

	AccountID  string    `bun:"account_id,pk"`
	Name       string    `bun:"name,pk"`
	Version    int       `bun:"version"`
	Definition string    `bun:"definition"`
	CreatedAt  time.Time `bun:"created_at"`
	UpdatedAt  time.Time `bun:"updated_at"`
}

func toPresetRow(p *preset.Preset) (*presetRow, error) {
	def, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return &presetRow{AccountID: p.AccountID, Name: p.Name, Version: p.Version, Definition: string(def),
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC()}, nil
}

func (r *presetRow) preset() (*preset.Preset, error) {
	var p preset.Preset
	if err := json.Unmarshal([]byte(r.Definition), &p); err != nil {
		return nil, fmt.Errorf("sqlstore: preset %s of %s: %w", r.Name, r.AccountID, err)
	}
	p.AccountID, p.Name, p.Version = r.AccountID, r.Name, r.Version
	p.CreatedAt, p.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return &p, nil
}

// CreatePreset implements preset.Store.
func (s *Store) CreatePreset(ctx context.Context, p *preset.Preset) error {
	p.Version = 1
	r, err := toPresetRow(p)
	if err != nil {
		return err
	}
	_, err = s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("create preset "+p.Name, err)
}

// GetPreset implements preset.Store.
func (s *Store) GetPreset(ctx context.Context, accountID, name string) (*preset.Preset, error) {
	var r presetRow
	if err := s.r.NewSelect().Model(&r).Where("account_id = ? AND name = ?", accountID, name).Scan(ctx); err != nil {
		return nil, mapErr("preset "+name, err)
	}
	return r.preset()
}

// ListPresets implements preset.Store.
func (s *Store) ListPresets(ctx context.Context, accountID string) ([]*preset.Preset, error) {
	var rows []presetRow
	if err := s.r.NewSelect().Model(&rows).Where("account_id = ?", accountID).Order("name").Scan(ctx); err != nil {
		return nil, mapErr("presets", err)
	}
	out := make([]*preset.Preset, len(rows))
	for i := range rows {
		p, err := rows[i].preset()
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// UpdatePreset implements preset.Store: one conditional UPDATE on the stored version, so that of two
// updates from the same version one wins and the other is a conflict.
func (s *Store) UpdatePreset(ctx context.Context, p *preset.Preset, version int) error {
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var old presetRow
		if err := s.forUpdate(tx.NewSelect().Model(&old).Where("account_id = ? AND name = ?", p.AccountID, p.Name), false).Scan(ctx); err != nil {
			return mapErr("preset "+p.Name, err)
		}
		if old.Version != version {
			return fmt.Errorf("preset %s is at version %d, not %d: %w", p.Name, old.Version, version, problem.ErrConflict)
		}
		p.Version, p.CreatedAt = version+1, old.CreatedAt.UTC()
		r, err := toPresetRow(p)
		if err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model(r).Column("version", "definition", "updated_at").
			Where("account_id = ? AND name = ? AND version = ?", p.AccountID, p.Name, version).Exec(ctx)
		return affected("preset "+p.Name, res, err)
	})
}

// DeletePreset implements preset.Store.
func (s *Store) DeletePreset(ctx context.Context, accountID, name string) error {
	res, err := s.w.NewDelete().Model((*presetRow)(nil)).Where("account_id = ? AND name = ?", accountID, name).Exec(ctx)
	return affected("preset "+name, res, err)
}
