package job

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Class is the compute class a job runs on; dispatch topics are per class.
type Class string

const (
	ClassCPU Class = "cpu"
	ClassGPU Class = "gpu"
)

// Cost is what a job was billed.
type Cost struct {
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Formatted string `json:"formatted"`
}

// Timing is a job's lifecycle in Unix milliseconds, as webhook payloads carry it.
type Timing struct {
	CreatedAt   int64  `json:"createdAt"`
	StartedAt   *int64 `json:"startedAt"`
	CompletedAt *int64 `json:"completedAt"`
}

// Job is one unit of media work. Inputs and Params are the request's raw JSON, validated by the
// job type at submit and interpreted again by the runner.
type Job struct {
	ID        string
	AccountID string
	Type      string
	Inputs    json.RawMessage
	Params    json.RawMessage
	Class     Class
	// Timeout is the deadline of the run: min(params.timeout, plan cap).
	Timeout time.Duration
	RetryOf string
	// BatchID names the batch the job was submitted in; empty for a job submitted alone.
	BatchID string
	// Pattern is the output pattern the job's command asks for, told at submit; empty when the
	// files the job writes decide it (see NewOutput).
	Pattern Pattern
	// Priority orders the job among the waiting jobs of its class (see Order); a waiting job's
	// can change (Reprioritise).
	Priority Priority
	// ParentID names the split job this job is a part of (see Split); empty for a job a client
	// submitted.
	ParentID string
	// Split is the split-and-stitch state of a job that asked to be split; nil for others.
	Split *Split

	Status   Status
	Progress float64
	// ProcessedMs is how much of its output a running job has written, in media time: what a
	// client is shown when no length of the output is known, so no Progress.
	ProcessedMs int64
	Output      *Output
	Error       *Error
	Cost        *Cost
	// ComputeMs is the measured execution time, file transfers excluded.
	ComputeMs int64
	// Attempt counts dispatches; a lease older than LeaseUntil belongs to a lost runner.
	Attempt    int
	LeaseUntil *time.Time
	// Requeues counts the times the job went back to waiting after a dispatch (MaxRequeues).
	Requeues int
	// Retries counts the failed attempts of a split job's part that were given another try
	// (RetryPart), apart from Requeues.
	Retries int
	// Worker is the ID of the worker credential that holds the current attempt (set at
	// dispatch); only that worker's calls are honoured on the attempt's lease.
	Worker string
	// Runner is the runner that holds the current attempt, as its claim named it (several
	// runners may share one worker credential). Set at dispatch.
	Runner string
	// Avoid is the runner of the attempt a requeue ended: until AvoidUntil, claims of other
	// runners take the job and the runner's own skip it, so that a retry runs elsewhere when
	// another runner claims in time. Nothing stops the same runner after that.
	Avoid      string
	AvoidUntil *time.Time
	// Uploads are the output files stored under the current attempt, by name with the size
	// the control plane counted: the result a worker reports must name exactly these.
	Uploads []Upload

	// Outbox holds the messages emitted by this change; Store.Update writes them in the same
	// transaction and clears it. It is never read back.
	Outbox []Message

	CreatedAt    time.Time
	UpdatedAt    time.Time
	DispatchedAt *time.Time
	StartedAt    *time.Time
	// ExecStartedAt is when the runner said the job's compute (the FFmpeg step) began; nil while
	// it fetches inputs, and for jobs that never got that far. Billing reads it.
	ExecStartedAt *time.Time
	FinishedAt    *time.Time
}

// NewParams are what New needs.
type NewParams struct {
	ID        string
	AccountID string
	Type      string
	Inputs    json.RawMessage
	Params    json.RawMessage
	Class     Class
	Timeout   time.Duration
	RetryOf   string
	BatchID   string
	Pattern   Pattern
	// Priority is PriorityNormal when empty.
	Priority Priority
	// ParentID makes the job a part of that split job; Split asks for the job to be split.
	ParentID string
	Split    *Split
	Now      time.Time
}

// New creates a job in waiting: the only way into the lifecycle, (new) → waiting.
func New(p NewParams) (*Job, error) {
	if !strings.HasPrefix(p.ID, "job_") || p.AccountID == "" || p.Type == "" {
		return nil, fmt.Errorf("new job: id %q, account %q and type %q are required", p.ID, p.AccountID, p.Type)
	}
	if p.Class != ClassCPU && p.Class != ClassGPU {
		return nil, fmt.Errorf("new job: unknown compute class %q", p.Class)
	}
	if !p.Pattern.valid() {
		return nil, fmt.Errorf("new job: unknown output pattern %q", p.Pattern)
	}
	prio, err := ParsePriority(string(p.Priority))
	if err != nil {
		return nil, fmt.Errorf("new job: %w", err)
	}
	now := stamp(p.Now)
	return &Job{
		ID: p.ID, AccountID: p.AccountID, Type: p.Type, Inputs: p.Inputs, Params: p.Params,
		Class: p.Class, Timeout: p.Timeout, RetryOf: p.RetryOf, BatchID: p.BatchID, Pattern: p.Pattern,
		Priority: prio, ParentID: p.ParentID, Split: p.Split, Status: StatusWaiting, CreatedAt: now, UpdatedAt: now,
	}, nil
}

// NewID returns a fresh opaque identifier with the given prefix: "job" gives job_<26 chars>,
// the time in milliseconds (48 bits) and then 80 random bits, in lowercase base32hex. An ID made
// in a later millisecond sorts after it, so a store's index on IDs grows at its end instead of
// at a random page for every insert (which made each commit write as many index pages as it
// had rows); the random part keeps IDs unguessable from one another.
func NewID(prefix string) string { return processIDs.next(prefix, time.Now()) }

// processIDs makes this process's IDs: those made within one millisecond continue from the last,
// so that a process's IDs sort in the order it made them (an account's jobs submitted in the same
// millisecond keep their order in the queue and in lists).
var processIDs idSource

// idSource makes IDs that sort in the order it made them, as long as its clock does not go back.
type idSource struct {
	mu   sync.Mutex
	last [16]byte
}

func (s *idSource) next(prefix string, now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails on supported platforms.
	s.mu.Lock()
	if bytes.Equal(b[:6], s.last[:6]) {
		// The same millisecond: one past the last ID's random part, which is 80 bits wide, so
		// it does not run out within a millisecond.
		b = s.last
		for i := 15; i >= 6; i-- {
			b[i]++
			if b[i] != 0 {
				break
			}
		}
	}
	s.last = b
	s.mu.Unlock()
	return prefix + "_" + idEncoding.EncodeToString(b[:])
}

// idEncoding is base32hex, whose alphabet is in byte order, so encoded IDs sort as their bytes.
var idEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

func (j *Job) move(to Status, now time.Time) error {
	if err := checkTransition(j.Status, to); err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	j.Status = to
	j.UpdatedAt = stamp(now)
	return nil
}

// stamp is the precision every store keeps: UTC microseconds (PostgreSQL's timestamptz).
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Dispatch moves waiting → dispatched, leasing the job to a runner until now+lease.
func (j *Job) Dispatch(now time.Time, lease time.Duration) error {
	if err := j.move(StatusDispatched, now); err != nil {
		return err
	}
	t, until := stamp(now), stamp(now.Add(lease))
	j.DispatchedAt, j.LeaseUntil = &t, &until
	j.Attempt++
	j.Uploads = nil
	return nil
}

// Start moves dispatched → running and extends the lease.
func (j *Job) Start(now time.Time, lease time.Duration) error {
	if err := j.move(StatusRunning, now); err != nil {
		return err
	}
	t, until := stamp(now), stamp(now.Add(lease))
	j.StartedAt, j.LeaseUntil = &t, &until
	return nil
}

// Heartbeat extends a running job's lease and records its progress (0..1).
func (j *Job) Heartbeat(now time.Time, lease time.Duration, progress float64) error {
	if j.Status != StatusRunning && j.Status != StatusDispatched {
		return fmt.Errorf("job %s: %w: heartbeat while %s", j.ID, ErrIllegalTransition, j.Status)
	}
	until := stamp(now.Add(lease))
	j.LeaseUntil = &until
	if progress > j.Progress && progress <= 1 {
		j.Progress = progress
	}
	j.UpdatedAt = stamp(now)
	return nil
}

// Processed records how much media time a running job has written; it only grows. A figure
// outside 0 to 10 days (a runner's mistake) is ignored: it is shown, never billed.
func (j *Job) Processed(ms int64) {
	if ms > j.ProcessedMs && ms <= maxProcessedMs {
		j.ProcessedMs = ms
	}
}

const maxProcessedMs = 10 * 24 * 3600 * 1000

// MaxRequeues is how many times a job goes back to waiting before a lapsed lease fails it.
const MaxRequeues = 1

// Requeue moves dispatched or running → waiting: the runner that held the job lost it before
// its compute began, or handed it back. It gives up the lease; the next dispatch is a new
// attempt, and the job starts afresh.
func (j *Job) Requeue(now time.Time) error {
	if j.Requeues >= MaxRequeues {
		return fmt.Errorf("job %s: %w: requeued %d times already", j.ID, ErrIllegalTransition, j.Requeues)
	}
	if err := j.backToWaiting(now); err != nil {
		return err
	}
	j.Requeues++
	return nil
}

// backToWaiting moves dispatched or running → waiting for a new attempt, which starts afresh
// and leaves the runner of this one to others for RetryElsewhereFor: Requeue and RetryPart,
// each with its own count.
func (j *Job) backToWaiting(now time.Time) error {
	if err := j.move(StatusWaiting, now); err != nil {
		return err
	}
	j.LeaseUntil, j.DispatchedAt, j.StartedAt, j.ExecStartedAt, j.Progress, j.ProcessedMs = nil, nil, nil, nil, 0, 0
	if j.Runner != "" {
		until := stamp(now.Add(RetryElsewhereFor))
		j.Avoid, j.AvoidUntil = j.Runner, &until
	}
	j.Worker, j.Runner, j.Uploads = "", "", nil
	return nil
}

// MaxPartRetries is how many times a split job's part that failed is tried again.
const MaxPartRetries = 1

// RetryPart moves a split job's part whose attempt failed back to waiting for another try,
// MaxPartRetries times at most, whatever requeues (a lost lease, a hand-back) it had: the
// next attempt leaves the runner that failed it to others (backToWaiting).
func (j *Job) RetryPart(now time.Time) error {
	if !j.IsPart() || j.Retries >= MaxPartRetries {
		return fmt.Errorf("job %s: %w: retried %d times already", j.ID, ErrIllegalTransition, j.Retries)
	}
	if err := j.backToWaiting(now); err != nil {
		return err
	}
	j.Retries++
	return nil
}

// Avoids says whether a claim by runner at now leaves the job to other runners.
func (j *Job) Avoids(runner string, now time.Time) bool {
	return j.Avoid != "" && j.Avoid == runner && j.AvoidUntil != nil && now.Before(*j.AvoidUntil)
}

// RetryElsewhereFor is how long a requeued job is kept from the runner whose attempt ended: a
// runner that lost a job, handed it back or failed a part is the likeliest to fail it again.
// Past it the job goes to whichever runner claims, so a lone runner still retries it.
const RetryElsewhereFor = 10 * time.Second

// Executing records that the job's compute began, once; a running job only.
func (j *Job) Executing(now time.Time) error {
	if j.Status != StatusRunning {
		return fmt.Errorf("job %s: %w: executing while %s", j.ID, ErrIllegalTransition, j.Status)
	}
	if j.ExecStartedAt == nil {
		t := stamp(now)
		j.ExecStartedAt = &t
	}
	return nil
}

// Complete moves running → complete with an output that satisfies the invariants.
func (j *Job) Complete(now time.Time, out Output, computeMs int64) error {
	if len(out.Files) == 0 && (len(out.Data) == 0 || string(out.Data) == "null") {
		return fmt.Errorf("job %s: %w", j.ID, ErrEmptyOutput)
	}
	if err := j.move(StatusComplete, now); err != nil {
		return err
	}
	j.Output, j.ComputeMs, j.Progress = &out, computeMs, 1
	j.finish(now)
	return nil
}

// Fail moves waiting, dispatched or running → failed with err.
func (j *Job) Fail(now time.Time, err *Error, computeMs int64) error {
	if err == nil {
		return fmt.Errorf("job %s: fail without an error", j.ID)
	}
	if e := j.move(StatusFailed, now); e != nil {
		return e
	}
	j.Error, j.ComputeMs = err, computeMs
	j.finish(now)
	return nil
}

// Cancel moves waiting, dispatched or running → cancelled.
func (j *Job) Cancel(now time.Time) error {
	if err := j.move(StatusCancelled, now); err != nil {
		return err
	}
	j.finish(now)
	return nil
}

func (j *Job) finish(now time.Time) {
	t := stamp(now)
	j.FinishedAt, j.LeaseUntil = &t, nil
}

// Timing is the job's lifecycle as webhook payloads carry it.
func (j *Job) Timing() Timing {
	ms := func(t *time.Time) *int64 {
		if t == nil {
			return nil
		}
		v := t.UnixMilli()
		return &v
	}
	return Timing{CreatedAt: j.CreatedAt.UnixMilli(), StartedAt: ms(j.StartedAt), CompletedAt: ms(j.FinishedAt)}
}

// Clone returns a deep copy, so stores can hand out jobs callers may change freely.
func (j *Job) Clone() *Job {
	c := *j
	c.Inputs = append(json.RawMessage(nil), j.Inputs...)
	c.Params = append(json.RawMessage(nil), j.Params...)
	cp := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		v := *t
		return &v
	}
	c.LeaseUntil, c.DispatchedAt, c.StartedAt, c.FinishedAt = cp(j.LeaseUntil), cp(j.DispatchedAt), cp(j.StartedAt), cp(j.FinishedAt)
	c.ExecStartedAt = cp(j.ExecStartedAt)
	c.Uploads = append([]Upload(nil), j.Uploads...)
	if j.Split != nil {
		sp := *j.Split
		sp.Parts = append([]SplitPart(nil), j.Split.Parts...)
		c.Split = &sp
	}
	if j.Output != nil {
		o := *j.Output
		o.Data = append(json.RawMessage(nil), j.Output.Data...)
		o.Files = append([]File(nil), j.Output.Files...)
		for i := range o.Files {
			if o.Files[i].Meta != nil {
				m := *o.Files[i].Meta
				o.Files[i].Meta = &m
			}
		}
		if j.Output.File != nil {
			for i := range o.Files {
				if o.Files[i].Path == j.Output.File.Path {
					o.File = &o.Files[i]
				}
			}
		}
		if j.Output.ExpiresAt != nil {
			v := *j.Output.ExpiresAt
			o.ExpiresAt = &v
		}
		c.Output = &o
	}
	if j.Error != nil {
		e := *j.Error
		if j.Error.Detail != nil {
			d := *j.Error.Detail
			e.Detail = &d
		}
		c.Error = &e
	}
	if j.Cost != nil {
		v := *j.Cost
		c.Cost = &v
	}
	c.Outbox = append([]Message(nil), j.Outbox...)
	return &c
}
