// Package blob is the port of byte storage: uploaded assets and job outputs, under keys laid out
// per account and job. The local directory is the embedded default; an S3-compatible store is
// the scale-out one. Every adapter passes blobtest.Exercise.
package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store keeps bytes under keys.
type Store interface {
	// Put writes r under key, replacing what was there. More than max bytes (max > 0) is
	// ErrTooLarge, and nothing is kept.
	Put(ctx context.Context, key string, r io.Reader, max int64) (int64, error)
	// Open returns the blob under key, or problem.ErrNotFound.
	Open(ctx context.Context, key string) (Blob, error)
	// Delete removes the blob under key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// Blob is one stored object, seekable so that downloads can serve ranges.
type Blob interface {
	io.ReadSeekCloser
	Size() int64
	ModTime() time.Time
}

// ErrTooLarge is returned by Store.Put past its size cap.
var ErrTooLarge = errors.New("too large")

// AssetKey is where an uploaded asset's bytes live: under its account, so that a bucket rule
// can expire an account's objects.
func AssetKey(accountID, assetID string) string {
	return "accounts/" + accountID + "/assets/" + assetID
}

// OutputKey is where a job's output file lives.
func OutputKey(accountID, jobID, file string) string {
	return "accounts/" + accountID + "/jobs/" + jobID + "/" + file
}
