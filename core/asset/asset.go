// Package asset holds uploaded files: their records and the Store port. The bytes live in the
// blob store under BlobKey; the record says who owns them.
package asset

import (
	"context"
	"time"
)

// Asset is an uploaded file, referenced as {base_url}/assets/<id>/content.
type Asset struct {
	ID          string
	AccountID   string
	Name        string
	ContentType string
	Size        int64
	CreatedAt   time.Time
}

// BlobKey is where an asset's bytes live in the blob store.
func BlobKey(id string) string { return "assets/" + id }

// Store is the port of asset records.
type Store interface {
	CreateAsset(ctx context.Context, a Asset) error
	// GetAsset returns the asset or job.ErrNotFound.
	GetAsset(ctx context.Context, id string) (Asset, error)
}
