package batch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// Status is a batch's state: running until every job of it has finished, then complete.
type Status string

const (
	StatusRunning  Status = "running"
	StatusComplete Status = "complete"
)

// MaxJobs bounds the jobs of one batch.
const MaxJobs = 100

// Batch is jobs submitted together. Each job's terminal status is counted once; when the count
// reaches Total the batch is complete.
type Batch struct {
	ID        string
	AccountID string
	// JobIDs are the batch's jobs in submit order.
	JobIDs    []string
	Status    Status
	Succeeded int
	Failed    int
	Cancelled int

	// Outbox holds the messages emitted by this change; the store writes them in the same
	// transaction, as job.Store.Update does a job's.
	Outbox []job.Message

	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time
}

// New returns a running batch of the given jobs.
func New(id, accountID string, jobIDs []string, now time.Time) (*Batch, error) {
	if !strings.HasPrefix(id, "bat_") || accountID == "" {
		return nil, fmt.Errorf("new batch: id %q and account %q are required", id, accountID)
	}
	if len(jobIDs) == 0 || len(jobIDs) > MaxJobs {
		return nil, fmt.Errorf("new batch: %d jobs; 1 to %d", len(jobIDs), MaxJobs)
	}
	t := now.UTC().Truncate(time.Microsecond)
	return &Batch{ID: id, AccountID: accountID, JobIDs: append([]string(nil), jobIDs...), Status: StatusRunning,
		CreatedAt: t, UpdatedAt: t}, nil
}

// Total is the number of jobs in the batch.
func (b *Batch) Total() int { return len(b.JobIDs) }

// Finished is the number of jobs counted so far.
func (b *Batch) Finished() int { return b.Succeeded + b.Failed + b.Cancelled }

// Count records one job's terminal status: complete counts as succeeded, failed as failed,
// cancelled as cancelled. It reports whether this count completed the batch.
func (b *Batch) Count(st job.Status, now time.Time) (bool, error) {
	if b.Status == StatusComplete || b.Finished() >= b.Total() {
		return false, fmt.Errorf("batch %s: %w: every job is already counted", b.ID, job.ErrIllegalTransition)
	}
	switch st {
	case job.StatusComplete:
		b.Succeeded++
	case job.StatusFailed:
		b.Failed++
	case job.StatusCancelled:
		b.Cancelled++
	default:
		return false, fmt.Errorf("batch %s: %w: a %s job has not finished", b.ID, job.ErrIllegalTransition, st)
	}
	t := now.UTC().Truncate(time.Microsecond)
	b.UpdatedAt = t
	if b.Finished() < b.Total() {
		return false, nil
	}
	b.Status, b.CompletedAt = StatusComplete, &t
	return true, nil
}

// Emit records a message to be written with the batch's change.
func (b *Batch) Emit(topic, key string, payload []byte) {
	b.Outbox = append(b.Outbox, job.Message{Key: key, Topic: topic, Payload: payload})
}

// Clone returns a deep copy.
func (b *Batch) Clone() *Batch {
	c := *b
	c.JobIDs = append([]string(nil), b.JobIDs...)
	c.Outbox = append([]job.Message(nil), b.Outbox...)
	if b.CompletedAt != nil {
		t := *b.CompletedAt
		c.CompletedAt = &t
	}
	return &c
}

// Store keeps batches. A batch's jobs live in the job.Store the same adapter implements.
type Store interface {
	// CreateBatch saves a new batch and its jobs (new, waiting) in one transaction: all of them
	// or, on any error, none. An ID already taken is problem.ErrConflict.
	CreateBatch(ctx context.Context, b *Batch, jobs []*job.Job) error
	// GetBatch returns a batch or problem.ErrNotFound.
	GetBatch(ctx context.Context, id string) (*Batch, error)
	// ListBatches returns an account's batches newest first, a page at a time.
	ListBatches(ctx context.Context, p ListParams) (Page, error)
	// CountJob records, once per (batch, job), that a job of the batch finished. The first call
	// for a pair calls fn on the batch and saves what fn left, with the batch's outbox messages,
	// in one transaction that holds the batch; it reports true. A later call for the same pair
	// changes nothing, does not call fn and reports false. When fn fails nothing is written. An
	// unknown batch is problem.ErrNotFound.
	CountJob(ctx context.Context, batchID, jobID string, fn func(*Batch) error) (bool, error)
}

// ListParams selects a page of an account's batches.
type ListParams struct {
	AccountID string
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
	Limit  int
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page struct {
	Batches    []*Batch
	NextCursor string
}

// NormalizeLimit applies the job listing's default and cap.
func (p ListParams) NormalizeLimit() int {
	return job.ListParams{Limit: p.Limit}.NormalizeLimit()
}

// EncodeCursor makes the opaque cursor that follows b in a newest-first listing.
func EncodeCursor(b *Batch) string { return job.KeysetCursor(b.CreatedAt, b.ID) }

// DecodeCursor reads a cursor made by EncodeCursor; anything else is a VALIDATION_ERROR.
func DecodeCursor(s string) (time.Time, string, error) { return job.ParseKeysetCursor(s, "bat_") }

// Before reports whether b sorts after the cursor position (t, id) in a newest-first listing.
func (b *Batch) Before(t time.Time, id string) bool { return job.SortsAfter(b.CreatedAt, b.ID, t, id) }
