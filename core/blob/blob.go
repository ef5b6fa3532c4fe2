// Package blob is the port of byte storage: uploaded assets and job outputs, under keys laid out
// per account and job. The local directory is the embedded default; an S3-compatible store is
// the scale-out one. Every adapter passes blobtest.TestStore.
package blob

import (
	"context"
	"errors"
	"io"
	"strconv"
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

// Presigner is the optional capability of a Store whose blobs can be reached without going
// through the API: a URL that lets whoever holds it GET, or PUT, the bytes of one key until ttl
// has passed, signed by the storage itself. Runners on other machines fetch inputs and upload
// outputs through such URLs. A store that has it says so by implementing it; callers find out
// with a type assertion. A presigned PUT carries no size cap, so whoever hands one out checks the
// size afterwards (Open, then Size) and deletes what is too large.
type Presigner interface {
	// PresignGet returns a URL for a GET of key, valid for ttl.
	PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error)
	// PresignPut returns a URL for a PUT of the bytes of key, valid for ttl; the PUT replaces
	// what was there.
	PresignPut(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// ErrTooLarge is returned by Store.Put past its size cap.
var ErrTooLarge = errors.New("too large")

// AssetKey is where an uploaded asset's bytes live: under its account, so that a bucket rule
// can expire an account's objects.
func AssetKey(accountID, assetID string) string {
	return "accounts/" + accountID + "/assets/" + assetID
}

// OutputKey is where a job's output file lives when its first attempt stored it.
func OutputKey(accountID, jobID, file string) string {
	return "accounts/" + accountID + "/jobs/" + jobID + "/" + file
}

// AttemptOutputKey is where attempt (Lease.Attempt, from 1) of a job stores its output file.
// Each attempt after the first has keys of its own, beside the first's ("job_x.2/out.mp4"; a job
// ID has no dot, so no other job's key and no file name of the first attempt is one of them): a
// runner whose lease lapsed while it uploaded writes where no later attempt reads, never over
// the outputs of the attempt that completed the job.
func AttemptOutputKey(accountID, jobID string, attempt int, file string) string {
	if attempt <= 1 {
		return OutputKey(accountID, jobID, file)
	}
	return OutputKey(accountID, jobID+"."+strconv.Itoa(attempt), file)
}
