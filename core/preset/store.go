package preset

import "context"

// Store keeps accounts' presets. Built-ins are not in it: they live in code.
type Store interface {
	// Create saves a new preset at version 1; a name the account has is problem.ErrConflict.
	Create(ctx context.Context, p *Preset) error
	// Get returns the account's preset name; a missing one is problem.ErrNotFound.
	Get(ctx context.Context, accountID, name string) (*Preset, error)
	// List returns the account's presets by name.
	List(ctx context.Context, accountID string) ([]*Preset, error)
	// Update replaces the preset p.Name of p.AccountID if its stored version is version, and
	// stores it at version+1 (p.Version is set to it). A missing preset is problem.ErrNotFound;
	// another version is problem.ErrConflict.
	Update(ctx context.Context, p *Preset, version int) error
	// Delete removes the account's preset name; a missing one is problem.ErrNotFound.
	Delete(ctx context.Context, accountID, name string) error
}
