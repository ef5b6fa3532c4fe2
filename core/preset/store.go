package preset

import "context"

// Store keeps accounts' presets. Built-ins are not in it: they live in code.
type Store interface {
	// CreatePreset saves a new preset at version 1; a name the account has is problem.ErrConflict.
	CreatePreset(ctx context.Context, p *Preset) error
	// GetPreset returns the account's preset name; a missing one is problem.ErrNotFound.
	GetPreset(ctx context.Context, accountID, name string) (*Preset, error)
	// ListPresets returns the account's presets by name.
	ListPresets(ctx context.Context, accountID string) ([]*Preset, error)
	// UpdatePreset replaces the preset p.Name of p.AccountID if its stored version is version, and
	// stores it at version+1 (p.Version is set to it). A missing preset is problem.ErrNotFound;
	// another version is problem.ErrConflict.
	UpdatePreset(ctx context.Context, p *Preset, version int) error
	// DeletePreset removes the account's preset name; a missing one is problem.ErrNotFound.
	DeletePreset(ctx context.Context, accountID, name string) error
}
