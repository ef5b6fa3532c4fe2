package service

import (
	"context"
	"errors"
	"io"
	"time"
)

// BlobStore keeps bytes: uploaded assets and job outputs.
type BlobStore interface {
	// Put writes r under key. More than max bytes is ErrTooLarge, and nothing is kept.
	Put(ctx context.Context, key string, r io.Reader, max int64) (int64, error)
	// Open returns the blob under key, or problem.ErrNotFound.
	Open(ctx context.Context, key string) (Blob, error)
}

// Blob is one stored object, seekable so that downloads can serve ranges.
type Blob interface {
	io.ReadSeekCloser
	Size() int64
	ModTime() time.Time
}

// ErrTooLarge is returned by BlobStore.Put past its size cap.
var ErrTooLarge = errors.New("too large")

// Publisher sends bus messages. Messages are hints: the store is the truth, and handling one
// twice is harmless.
type Publisher interface {
	Publish(ctx context.Context, topic string, payload []byte) error
}

// Bus topics.
const (
	// TopicDispatchPrefix + class wakes the runners of a compute class: work is waiting.
	TopicDispatchPrefix = "jobs.dispatch."
	// TopicCancel carries the ID of a job cancelled while it may be running.
	TopicCancel = "jobs.cancel"
	// TopicRunner carries runner reports (RunnerReport) back to the control plane.
	TopicRunner = "jobs.runner"
	// TopicEvents carries job events (Event) out: the webhook fan-out subscribes.
	TopicEvents = "jobs.events"
	// TopicBatchJobDone carries, through the outbox, a batch's job that reached a terminal
	// status (BatchJobDone): HandleBatchJobDone counts it.
	TopicBatchJobDone = "batch.job_done"
)
