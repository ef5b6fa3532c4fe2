// Package blobstore chooses the blob.Store of the --blobs URL: a local directory (file://, the
// embedded default) or an S3-compatible bucket (s3://), so that the apps hold no such logic.
package blobstore

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/adapters/blobs3"
	"github.com/mediajobs/mediajobs/core/blob"
)

// Open returns the store raw names:
//
//	""              a directory "blobs" under dataDir
//	file://DIR      the directory DIR: file:///srv/blobs, or file://var/blobs relative to the
//	                working directory
//	s3://BUCKET?... a bucket, as blobs3.ParseURL reads it, with the standard AWS credentials
//
// Anything else is an error that names what was given.
func Open(ctx context.Context, raw, dataDir string) (blob.Store, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	shown := raw
	if u, err := url.Parse(raw); err == nil {
		shown = u.Redacted() // a password typed into the URL stays out of logs
	}
	switch {
	case raw == "":
		return blobfs.New(filepath.Join(dataDir, "blobs"))
	case ok && strings.EqualFold(scheme, "file"):
		// Read as a path, not as a URL: file://var/blobs would otherwise be host "var".
		if rest == "" {
			return nil, fmt.Errorf("blobs %q: the directory is missing; want file:///ABSOLUTE/DIR or file://RELATIVE/DIR", shown)
		}
		if strings.ContainsAny(rest, "?#") {
			return nil, fmt.Errorf("blobs %q: a file:// URL takes no query or fragment", shown)
		}
		return blobfs.New(filepath.FromSlash(rest))
	case ok && strings.EqualFold(scheme, "s3"):
		return blobs3.Open(ctx, raw)
	default:
		return nil, fmt.Errorf("blobs %q: want file://DIR (a local directory) or s3://BUCKET?endpoint=URL&region=R (an S3-compatible bucket)", shown)
	}
}
