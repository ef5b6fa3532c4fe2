package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// BatchesPorts are what batches need.
type BatchesPorts struct {
	Gate    GatePorts
	Batches batch.Store
	Clock   clock.Clock
	Waker   Waker
}

// Batches is POST /batches and its reads, and the counting of a batch's finished jobs.
type Batches struct {
	gate    gate
	batches batch.Store
	clock   clock.Clock
	waker   Waker
}

// NewBatches returns the Batches use case.
func NewBatches(p BatchesPorts) (*Batches, error) {
	g, err := newGate(p.Gate)
	err = errors.Join(err, need("Batches", port{"a batch store", p.Batches}, port{"a clock", p.Clock}, port{"a waker", p.Waker}))
	if err != nil {
		return nil, err
	}
	return &Batches{gate: g, batches: p.Batches, clock: p.Clock, waker: p.Waker}, nil
}

// BatchView is a batch as clients read it.
type BatchView struct {
	ID        string       `json:"id"`
	Status    batch.Status `json:"status"`
	Total     int          `json:"total"`
	Succeeded int          `json:"succeeded"`
	Failed    int          `json:"failed"`
	Cancelled int          `json:"cancelled"`
	// Jobs are the batch's job IDs in submit order.
	Jobs        []string `json:"jobs"`
	CreatedAt   int64    `json:"createdAt"`
	CompletedAt *int64   `json:"completedAt"`
}

// NewBatchView renders a batch for clients.
func NewBatchView(b *batch.Batch) BatchView {
	v := BatchView{ID: b.ID, Status: b.Status, Total: b.Total(), Succeeded: b.Succeeded, Failed: b.Failed,
		Cancelled: b.Cancelled, Jobs: append([]string{}, b.JobIDs...), CreatedAt: b.CreatedAt.UnixMilli()}
	if b.CompletedAt != nil {
		ms := b.CompletedAt.UnixMilli()
		v.CompletedAt = &ms
	}
	return v
}

// BatchTiming is a batch's lifecycle in Unix milliseconds.
type BatchTiming struct {
	CreatedAt   int64 `json:"createdAt"`
	CompletedAt int64 `json:"completedAt"`
}

// BatchEvent is the body of batch.completed.
type BatchEvent struct {
	Event     string      `json:"event"`
	BatchID   string      `json:"batchId"`
	Total     int         `json:"total"`
	Succeeded int         `json:"succeeded"`
	Failed    int         `json:"failed"`
	Cancelled int         `json:"cancelled"`
	Timing    BatchTiming `json:"timing"`
}

// BatchJobDone is the payload of TopicBatchJobDone.
type BatchJobDone struct {
	BatchID string     `json:"batchId"`
	JobID   string     `json:"jobId"`
	Status  job.Status `json:"status"`
}

// Submit runs the submit gate over every request of a batch, then saves the batch and its jobs
// in one transaction. The gate's steps run in the order of a single job's, each over the whole
// batch: the plan of every job, the balance against the sum of the jobs' minimum charges, then
// each job's own validation. A rejection names the job's index ("jobs[3].params.command: ...")
// and saves nothing.
func (s *Batches) Submit(ctx context.Context, a account.Account, reqs []jobtype.Request) (*batch.Batch, []*job.Job, error) {
	b, jobs, err := s.submit(ctx, a, reqs)
	observeRejected(s.gate.Observer, err)
	for _, j := range jobs {
		s.gate.Observer.JobSubmitted(j)
	}
	return b, jobs, err
}

func (s *Batches) submit(ctx context.Context, a account.Account, reqs []jobtype.Request) (*batch.Batch, []*job.Job, error) {
	if len(reqs) == 0 || len(reqs) > batch.MaxJobs {
		return nil, nil, problem.Reject(problem.CodeValidation, "jobs must hold 1 to %d jobs; it holds %d", batch.MaxJobs, len(reqs))
	}
	prios := make([]job.Priority, len(reqs))
	for i, req := range reqs {
		var err error
		if prios[i], err = CheckPriority(a, fmt.Sprintf("jobs[%d].priority", i), req.Priority); err != nil {
			return nil, nil, err
		}
		if req.Destination != nil {
			// A batch's jobs are saved together in one change that has no room for their
			// deliveries; refused rather than run without them.
			return nil, nil, problem.Reject(problem.CodeValidation, "jobs[%d].destination: a batch's jobs cannot name a destination; submit the job alone", i)
		}
	}
	reqs = slices.Clone(reqs)
	for i := range reqs {
		var err error
		if reqs[i], err = s.gate.Presets.Resolve(ctx, a, reqs[i]); err != nil {
			return nil, nil, atIndex(i, err)
		}
	}
	specs := make([]jobtype.Spec, len(reqs))
	invalid := make([]error, len(reqs))
	for i, req := range reqs {
		specs[i], invalid[i] = s.gate.prepare(req)
	}
	var need int64
	for i := range reqs {
		class := job.ClassCPU
		if invalid[i] == nil {
			if err := s.gate.checkPlan(a, &specs[i]); err != nil {
				return nil, nil, atIndex(i, err)
			}
			class = specs[i].Class
		}
		need += s.gate.Pricing.MinimumCharge(class)
	}
	if err := s.gate.checkBalance(ctx, a, need, fmt.Sprintf("the batch's %d jobs", len(reqs))); err != nil {
		return nil, nil, err
	}
	for i := range reqs {
		if invalid[i] != nil {
			return nil, nil, atIndex(i, invalid[i])
		}
		if err := s.gate.checkAssets(ctx, a, specs[i]); err != nil {
			return nil, nil, atIndex(i, err)
		}
	}
	now := s.clock.Now()
	id := job.NewID("bat")
	jobs := make([]*job.Job, len(reqs))
	ids := make([]string, len(reqs))
	for i, req := range reqs {
		j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: a.ID, Type: req.Type, Inputs: req.Inputs,
			Params: req.Params, Class: specs[i].Class, Timeout: specs[i].Timeout, Pattern: specs[i].Pattern, BatchID: id, Priority: prios[i], Split: specs[i].Split, Now: now})
		if err != nil {
			return nil, nil, err
		}
		jobs[i], ids[i] = j, j.ID
	}
	b, err := batch.New(id, a.ID, ids, now)
	if err != nil {
		return nil, nil, err
	}
	if err := s.batches.CreateBatch(ctx, b, jobs); err != nil {
		return nil, nil, err
	}
	woken := map[job.Class]bool{}
	for _, j := range jobs {
		if !woken[j.Class] {
			woken[j.Class] = true
			s.waker.Wake(ctx, j.Class)
		}
	}
	return b, jobs, nil
}

// atIndex names the batch job a rejection is about: "jobs[3]." before a message that starts
// with the field it names, "jobs[3].<field>: " before one about a field it does not name,
// "jobs[3]: " otherwise. Errors that are not rejections pass as they are.
func atIndex(i int, err error) error {
	var p *problem.Problem
	if !errors.As(err, &p) {
		return err
	}
	prefix := fmt.Sprintf("jobs[%d]", i)
	msg := p.Message
	switch {
	case p.Field != "":
		msg = prefix + "." + p.Field + ": " + msg
	case strings.HasPrefix(msg, `field "`):
		msg = `field "` + prefix + "." + strings.TrimPrefix(msg, `field "`)
	case startsWithField(msg):
		msg = prefix + "." + msg
	default:
		msg = prefix + ": " + msg
	}
	return &problem.Problem{Code: p.Code, Message: msg, Cause: p.Cause}
}

// startsWithField tells a message that begins with the request field it is about.
func startsWithField(msg string) bool {
	for _, f := range []string{"type", "inputs", "params"} {
		if rest, ok := strings.CutPrefix(msg, f); ok && (rest == "" || rest[0] == ' ' || rest[0] == '.') {
			return true
		}
	}
	return false
}

// ownBatch returns the account's batch; another account's is NOT_FOUND, as a missing one is.
func (s *Batches) own(ctx context.Context, a account.Account, id string) (*batch.Batch, error) {
	notFound := problem.Reject(problem.CodeNotFound, "batch %q not found", id)
	b, err := s.batches.GetBatch(ctx, id)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && b.AccountID != a.ID) {
		return nil, notFound
	}
	return b, err
}

// Get returns the account's batch.
func (s *Batches) Get(ctx context.Context, a account.Account, id string) (BatchView, error) {
	b, err := s.own(ctx, a, id)
	if err != nil {
		return BatchView{}, err
	}
	return NewBatchView(b), nil
}

// List returns a page of the account's batches, newest first.
func (s *Batches) List(ctx context.Context, a account.Account, p batch.ListParams) ([]BatchView, string, error) {
	p.AccountID = a.ID
	page, err := s.batches.ListBatches(ctx, p)
	if err != nil {
		return nil, "", err
	}
	views := make([]BatchView, len(page.Batches))
	for i, b := range page.Batches {
		views[i] = NewBatchView(b)
	}
	return views, page.NextCursor, nil
}

// countInBatch records, in the change that made a batch's job terminal, that its batch must
// count it: the relay hands the message to HandleJobDone after the commit.
func countInBatch(j *job.Job) error {
	if j.BatchID == "" || !j.Status.Terminal() {
		return nil
	}
	b, err := json.Marshal(BatchJobDone{BatchID: j.BatchID, JobID: j.ID, Status: j.Status})
	if err != nil {
		return err
	}
	j.Emit(TopicBatchJobDone, "batchdone:"+j.ID, b)
	return nil
}

// BatchCompletedKey is the outbox key of a batch's batch.completed event.
func BatchCompletedKey(batchID string) string { return webhook.EventBatchCompleted + ":" + batchID }

// HandleJobDone is the relay handler of TopicBatchJobDone. It counts the job in its batch
// once however often it runs (the store keeps one record per batch and job), and the count
// that completes the batch writes its batch.completed event to the outbox in the same
// transaction, whence the relay hands it to FanOut like any job event.
func (s *Batches) HandleJobDone(ctx context.Context, m job.Message) error {
	var d BatchJobDone
	if err := json.Unmarshal(m.Payload, &d); err != nil {
		return fmt.Errorf("batch job done %s: %w", m.Key, err)
	}
	_, err := s.batches.CountJob(ctx, d.BatchID, d.JobID, func(b *batch.Batch) error {
		done, err := b.Count(d.Status, s.clock.Now())
		if err != nil || !done {
			return err
		}
		body, err := json.Marshal(BatchEvent{Event: webhook.EventBatchCompleted, BatchID: b.ID, Total: b.Total(),
			Succeeded: b.Succeeded, Failed: b.Failed, Cancelled: b.Cancelled,
			Timing: BatchTiming{CreatedAt: b.CreatedAt.UnixMilli(), CompletedAt: b.CompletedAt.UnixMilli()}})
		if err != nil {
			return err
		}
		b.Emit(TopicEvents, BatchCompletedKey(b.ID), body)
		return nil
	})
	if errors.Is(err, problem.ErrNotFound) {
		// A batch that is gone has nothing left to count.
		return nil
	}
	return err
}
