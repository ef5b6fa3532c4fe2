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
	// SHA256 is the lowercase hex SHA-256 of the bytes; empty for an upload stored before
	// hashes were kept, which no lookup by hash finds.
	SHA256    string
	CreatedAt time.Time
}

// BlobKey is where an asset's bytes live in the blob store.
func BlobKey(id string) string { return "assets/" + id }

// Store is the port of asset records.
type Store interface {
	CreateAsset(ctx context.Context, a Asset) error
	// GetAsset returns the asset or problem.ErrNotFound.
	GetAsset(ctx context.Context, id string) (Asset, error)
	// FindAssetsBySHA256 returns the account's assets whose bytes have this SHA-256 (lowercase
	// hex), newest first; none is an empty slice. Another account's are never among them.
	FindAssetsBySHA256(ctx context.Context, accountID, sha256 string) ([]Asset, error)
}

// CheckSHA256 refuses a hash that is not 64 lowercase hex digits, naming field.
func CheckSHA256(field, sum string) error {
	ok := len(sum) == 64 && strings.IndexFunc(sum, func(r rune) bool {
		return (r < '0' || r > '9') && (r < 'a' || r > 'f')
	}) < 0
	if !ok {
		return problem.Reject(problem.CodeValidation, "%s %q is not a SHA-256: want 64 hex digits", field, sum)
	}
	return nil
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
