package batchtest

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/job/jobtest"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is an in-memory batch.Store over a jobtest.Memory, which keeps the batches' jobs and
// the outbox. Its job.Store and job.Outbox methods are the jobtest.Memory's.
type Memory struct {
	*jobtest.Memory

	mu      sync.Mutex
	batches map[string]*batch.Batch
	counted map[[2]string]bool
}

var (
	_ batch.Store = (*Memory)(nil)
	_ job.Store   = (*Memory)(nil)
	_ job.Outbox  = (*Memory)(nil)
)

// NewMemory returns a store with no batches over jobs; nil makes a new jobtest.Memory.
func NewMemory(jobs *jobtest.Memory) *Memory {
	if jobs == nil {
		jobs = jobtest.NewMemory()
	}
	return &Memory{Memory: jobs, batches: map[string]*batch.Batch{}, counted: map[[2]string]bool{}}
}

func (m *Memory) CreateBatch(_ context.Context, b *batch.Batch, jobs []*job.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.batches[b.ID]; ok {
		return problem.ErrConflict
	}
	if err := m.Memory.CreateAll(jobs); err != nil {
		return err
	}
	c := b.Clone()
	c.Outbox = nil
	m.batches[b.ID] = c
	return nil
}

func (m *Memory) GetBatch(_ context.Context, id string) (*batch.Batch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.batches[id]
	if !ok {
		return nil, problem.ErrNotFound
	}
	return b.Clone(), nil
}

func (m *Memory) ListBatches(_ context.Context, p batch.ListParams) (batch.Page, error) {
	var (
		afterT  time.Time
		afterID string
	)
	if p.Cursor != "" {
		t, id, err := batch.DecodeCursor(p.Cursor)
		if err != nil {
			return batch.Page{}, err
		}
		afterT, afterID = t, id
	}
	var all []*batch.Batch
	m.mu.Lock()
	for _, b := range m.batches {
		if b.AccountID == p.AccountID && (p.Cursor == "" || b.Before(afterT, afterID)) {
			all = append(all, b.Clone())
		}
	}
	m.mu.Unlock()
	sort.Slice(all, func(a, b int) bool { return all[b].Before(all[a].CreatedAt, all[a].ID) })
	limit := p.NormalizeLimit()
	page := batch.Page{Batches: all}
	if len(all) > limit {
		page.Batches = all[:limit]
		page.NextCursor = batch.EncodeCursor(all[limit-1])
	}
	return page, nil
}

func (m *Memory) CountJob(_ context.Context, batchID, jobID string, fn func(*batch.Batch) error) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.batches[batchID]
	if !ok {
		return false, problem.ErrNotFound
	}
	key := [2]string{batchID, jobID}
	if m.counted[key] {
		return false, nil
	}
	c := b.Clone()
	if err := fn(c); err != nil {
		return false, err
	}
	m.Memory.Enqueue(c.Outbox, c.UpdatedAt)
	c.Outbox = nil
	m.counted[key] = true
	m.batches[batchID] = c
	return true, nil
}
