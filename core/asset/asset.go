// Package asset holds uploaded files: their records and the Store port. The bytes live in the
// blob store under BlobKey; the record says who owns them.
package asset

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/mediajobs/mediajobs/core/problem"
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
	// GetAsset returns the asset or problem.ErrNotFound.
	GetAsset(ctx context.Context, id string) (Asset, error)
}

// CheckName refuses an asset name that is not a plain file name: at most 255 bytes, not "." or
// "..", no slashes, no control or invalid characters. The name is shown back and suggests a
// download's file name, never a path.
func CheckName(name string) error {
	bad := len(name) > 255 || name == "." || name == ".." || strings.ContainsAny(name, `/\`) ||
		strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0
	if bad {
		return problem.Reject(problem.CodeValidation, "name %q is not a plain file name (at most 255 characters, no slashes or control characters)", name)
	}
	return nil
}
