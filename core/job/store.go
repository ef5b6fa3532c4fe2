package job

import (
	"context"
	"errors"
	"time"
)

// Store is the port of job persistence. The store is the truth: bus messages are hints.
type Store interface {
	// Create saves a new job. An existing ID is ErrConflict.
	Create(ctx context.Context, j *Job) error
	// Get returns a job or ErrNotFound.
	Get(ctx context.Context, id string) (*Job, error)
	// Update loads the job, calls fn on it and saves what fn left, in one transaction that holds
	// the row: concurrent Updates of a job run one after another. When fn returns an error
	// nothing is written and Update returns that error. It returns the saved job.
	Update(ctx context.Context, id string, fn func(*Job) error) (*Job, error)
	// UpdateMany is Update over several jobs in one transaction holding all their rows: the
	// bulk path of the sweep and of failing unfunded work. fn returning ErrSkip leaves that job
	// as it was; any other error writes nothing and is returned. A missing ID is skipped. It
	// returns the jobs it wrote, in the order of ids.
	UpdateMany(ctx context.Context, ids []string, fn func(*Job) error) ([]*Job, error)
	// List returns an account's jobs newest first, a page at a time.
	List(ctx context.Context, p ListParams) (Page, error)
	// Claim moves up to Limit waiting jobs of a class, in the order of Order (priority, then
	// accounts taking turns, then age), to dispatched with a lease, and returns them. A job is
	// claimed by one caller only; a cancel committed first wins.
	Claim(ctx context.Context, p ClaimParams) ([]*Job, error)
	// Queue returns up to Limit of an account's waiting jobs, each with its position among all
	// the waiting jobs of its class in the order of Order (1 is claimed next), by class (cpu
	// first) and position.
	Queue(ctx context.Context, p QueueParams) ([]Queued, error)
	// Expired returns the IDs of dispatched or running jobs whose lease ended before now.
	Expired(ctx context.Context, now time.Time, limit int) ([]string, error)
	// HeldBy returns the IDs of the dispatched or running jobs that the worker credential
	// holds, up to limit: the jobs a revoked worker leaves.
	HeldBy(ctx context.Context, worker string, limit int) ([]string, error)
	// HeldByRunner returns the IDs of the dispatched or running jobs that the runner holds (as
	// its claims name it: Job.Runner), up to limit: what takes its slots now.
	HeldByRunner(ctx context.Context, runner string, limit int) ([]string, error)
}

// ErrSkip, returned by an UpdateMany function, leaves that job unchanged.
var ErrSkip = errors.New("skip")

// ListParams selects a page of an account's jobs.
type ListParams struct {
	AccountID string
	Status    Status // empty: any
	Type      string // empty: any
	// Cursor is the NextCursor of the previous page; empty for the first.
	Cursor string
	Limit  int
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page struct {
	Jobs       []*Job
	NextCursor string
}

// ClaimParams selects the jobs a dispatcher takes.
type ClaimParams struct {
	Class Class
	Limit int
	Lease time.Duration
	Now   time.Time
	// Concurrency caps, per plan name, the jobs of one account that are dispatched or running
	// at once: a waiting job of an account at its cap is skipped and keeps waiting, and younger
	// jobs of other accounts go first. Accounts on a plan missing from the map, or unknown to
	// the store, have no cap; a nil map caps nothing. A split job's parts are neither counted
	// nor capped: their job is, and it waits for them.
	Concurrency map[string]int
	// Worker is the ID of the worker credential claiming; each claimed job records it.
	Worker string
	// Runner names the runner claiming (Job.Runner); a job that Avoids it until after Now is
	// not claimed.
	Runner string
}

// Dispatch dispatches the i-th job (from 0, in claim order) of one claim to p.Worker, leased
// until Now plus Lease. It is dispatched at Now plus i microseconds, the stores' precision: the
// jobs of one claim thus keep the order they were handed out in, as claims of one job each
// would, and Order's "served least recently" tells which account of a claim was served last.
// Were they all dispatched at Now, the accounts of the claim would tie on it, and age, the last
// rule, would give the next turn to the account with the oldest backlog every time: claims of
// two among three accounts would serve it in every claim and the two others in every other.
func (p ClaimParams) Dispatch(j *Job, i int) error {
	if err := j.Dispatch(p.Now, p.Lease); err != nil {
		return err
	}
	at := stamp(p.Now.Add(time.Duration(i) * time.Microsecond))
	j.DispatchedAt = &at
	j.Worker, j.Runner = p.Worker, p.Runner
	j.Avoid, j.AvoidUntil = "", nil
	return nil
}

// QueueParams selects an account's waiting jobs for Store.Queue.
type QueueParams struct {
	AccountID string
	Limit     int
}

// Queued is a waiting job and its position among all the waiting jobs of its class, from 1.
type Queued struct {
	Job      *Job
	Position int
}

// MaxQueueLimit bounds Store.Queue's answer; DefaultQueueLimit is what a Limit of zero means.
const (
	DefaultQueueLimit = 100
	MaxQueueLimit     = 1000
)

// NormalizeLimit applies DefaultQueueLimit and MaxQueueLimit.
func (p QueueParams) NormalizeLimit() int {
	switch {
	case p.Limit <= 0:
		return DefaultQueueLimit
	case p.Limit > MaxQueueLimit:
		return MaxQueueLimit
	default:
		return p.Limit
	}
}

// ListLimit bounds a page; a Limit of zero or less means DefaultListLimit.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// NormalizeLimit applies the default and the cap.
func (p ListParams) NormalizeLimit() int {
	switch {
	case p.Limit <= 0:
		return DefaultListLimit
	case p.Limit > MaxListLimit:
		return MaxListLimit
	default:
		return p.Limit
	}
}
