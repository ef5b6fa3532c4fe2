package jobtest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Memory is an in-memory job.Store for tests. One mutex makes every Update a transaction.
type Memory struct {
	mu     sync.Mutex
	jobs   map[string]*job.Job
	outbox []outboxEntry
	// plans are the accounts' plans, for ClaimParams.Concurrency.
	plans map[string]string
}

type outboxEntry struct {
	msg       job.Message
	available time.Time
}

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{jobs: map[string]*job.Job{}, plans: map[string]string{}} }

// CreateAccount records an account's plan, which the SQL stores read from their accounts table.
func (m *Memory) CreateAccount(_ context.Context, a account.Account) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plans[a.ID] = string(a.Plan)
	return nil
}

var (
	_ job.Store  = (*Memory)(nil)
	_ job.Outbox = (*Memory)(nil)
)

func (m *Memory) Create(_ context.Context, j *job.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.jobs[j.ID]; ok {
		return problem.ErrConflict
	}
	m.jobs[j.ID] = j.Clone()
	return nil
}

// CreateAll saves new jobs together: all of them, or none when an ID is taken. Batch stores
// built on Memory use it.
func (m *Memory) CreateAll(jobs []*job.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, j := range jobs {
		if _, ok := m.jobs[j.ID]; ok || seen[j.ID] {
			return problem.ErrConflict
		}
		seen[j.ID] = true
	}
	for _, j := range jobs {
		m.jobs[j.ID] = j.Clone()
	}
	return nil
}

// Enqueue writes messages to the outbox as Update writes a job's; a key already there is
// dropped. Batch stores built on Memory use it.
func (m *Memory) Enqueue(msgs []job.Message, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range msgs {
		m.enqueue(msg, now)
	}
}

func (m *Memory) Get(_ context.Context, id string) (*job.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return nil, problem.ErrNotFound
	}
	return j.Clone(), nil
}

func (m *Memory) Update(_ context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return nil, problem.ErrNotFound
	}
	c := j.Clone()
	if err := fn(c); err != nil {
		return nil, err
	}
	for _, msg := range c.Outbox {
		m.enqueue(msg, c.UpdatedAt)
	}
	c.Outbox = nil
	m.jobs[id] = c.Clone()
	return c, nil
}

func (m *Memory) enqueue(msg job.Message, now time.Time) {
	for _, e := range m.outbox {
		if e.msg.Key == msg.Key {
			return
		}
	}
	msg.CreatedAt, msg.Attempts = now, 0
	m.outbox = append(m.outbox, outboxEntry{msg: msg, available: now})
}

func (m *Memory) ClaimMessages(_ context.Context, p job.ClaimMessagesParams) ([]job.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []job.Message
	for i := range m.outbox {
		if len(out) >= p.Limit {
			break
		}
		e := &m.outbox[i]
		if e.available.After(p.Now) {
			continue
		}
		e.available = p.Now.Add(p.Lease)
		e.msg.Attempts++
		msg := e.msg
		msg.Payload = append([]byte(nil), e.msg.Payload...)
		out = append(out, msg)
	}
	return out, nil
}

func (m *Memory) UpdateMany(_ context.Context, ids []string, fn func(*job.Job) error) ([]*job.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var changed []*job.Job
	for _, id := range ids {
		j, ok := m.jobs[id]
		if !ok {
			continue
		}
		c := j.Clone()
		err := fn(c)
		if errors.Is(err, job.ErrSkip) {
			continue
		}
		if err != nil {
			return nil, err
		}
		changed = append(changed, c)
	}
	out := make([]*job.Job, len(changed))
	for i, c := range changed {
		for _, msg := range c.Outbox {
			m.enqueue(msg, c.UpdatedAt)
		}
		c.Outbox = nil
		m.jobs[c.ID] = c.Clone()
		out[i] = c
	}
	return out, nil
}

func (m *Memory) RetryMessage(_ context.Context, key string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.outbox {
		if m.outbox[i].msg.Key == key {
			m.outbox[i].available = at
		}
	}
	return nil
}

func (m *Memory) AckMessages(_ context.Context, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outbox = slices.DeleteFunc(m.outbox, func(e outboxEntry) bool { return slices.Contains(keys, e.msg.Key) })
	return nil
}

func (m *Memory) List(_ context.Context, p job.ListParams) (job.Page, error) {
	var (
		afterT  time.Time
		afterID string
	)
	if p.Cursor != "" {
		t, id, err := job.DecodeCursor(p.Cursor)
		if err != nil {
			return job.Page{}, err
		}
		afterT, afterID = t, id
	}
	m.mu.Lock()
	var all []*job.Job
	for _, j := range m.jobs {
		if j.AccountID != p.AccountID || j.IsPart() || (p.Status != "" && j.Status != p.Status) || (p.Type != "" && j.Type != p.Type) {
			continue
		}
		if p.Cursor != "" && !j.Before(afterT, afterID) {
			continue
		}
		all = append(all, j.Clone())
	}
	m.mu.Unlock()
	sort.Slice(all, func(a, b int) bool { return all[b].Before(all[a].CreatedAt, all[a].ID) })
	limit := p.NormalizeLimit()
	page := job.Page{Jobs: all}
	if len(all) > limit {
		page.Jobs = all[:limit]
		page.NextCursor = job.EncodeCursor(all[limit-1])
	}
	return page, nil
}

func (m *Memory) Claim(_ context.Context, p job.ClaimParams) ([]*job.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var waiting []*job.Job
	active := map[string]int{}
	for _, j := range m.jobs {
		if j.Status == job.StatusWaiting && j.Class == p.Class && !j.Avoids(p.Runner, p.Now) {
			waiting = append(waiting, j)
		}
		if (j.Status == job.StatusDispatched || j.Status == job.StatusRunning) && !j.IsPart() {
			active[j.AccountID]++
		}
	}
	job.Order(waiting, m.served(p.Class))
	kept := waiting[:0]
	for _, j := range waiting {
		if len(kept) == p.Limit {
			break
		}
		if limit, ok := p.Concurrency[m.plans[j.AccountID]]; ok && !j.IsPart() {
			if active[j.AccountID] >= limit {
				continue
			}
			active[j.AccountID]++
		}
		kept = append(kept, j)
	}
	waiting = kept
	out := make([]*job.Job, 0, len(waiting))
	for i, j := range waiting {
		if err := p.Dispatch(j, i); err != nil {
			return nil, err
		}
		out = append(out, j.Clone())
	}
	return out, nil
}

// served is when each account's latest job of the class was dispatched, for job.Order.
func (m *Memory) served(class job.Class) map[string]time.Time {
	out := map[string]time.Time{}
	for _, j := range m.jobs {
		if j.Class == class && j.DispatchedAt != nil && j.DispatchedAt.After(out[j.AccountID]) {
			out[j.AccountID] = *j.DispatchedAt
		}
	}
	return out
}

func (m *Memory) Queue(_ context.Context, p job.QueueParams) ([]job.Queued, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := p.NormalizeLimit()
	var out []job.Queued
	for _, class := range []job.Class{job.ClassCPU, job.ClassGPU} {
		var waiting []*job.Job
		for _, j := range m.jobs {
			if j.Status == job.StatusWaiting && j.Class == class {
				waiting = append(waiting, j)
			}
		}
		job.Order(waiting, m.served(class))
		for i, j := range waiting {
			if j.AccountID == p.AccountID && !j.IsPart() && len(out) < limit {
				out = append(out, job.Queued{Job: j.Clone(), Position: i + 1})
			}
		}
	}
	return out, nil
}

func (m *Memory) HeldBy(_ context.Context, worker string, limit int) ([]string, error) {
	return m.held(func(j *job.Job) bool { return j.Worker == worker }, limit), nil
}

func (m *Memory) HeldByRunner(_ context.Context, runner string, limit int) ([]string, error) {
	return m.held(func(j *job.Job) bool { return j.Runner == runner }, limit), nil
}

// held returns the IDs of the dispatched or running jobs that by picks, up to limit.
func (m *Memory) held(by func(*job.Job) bool, limit int) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for _, j := range m.jobs {
		if (j.Status == job.StatusDispatched || j.Status == job.StatusRunning) && by(j) {
			ids = append(ids, j.ID)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:max(limit, 0)]
	}
	return ids
}

func (m *Memory) Expired(_ context.Context, now time.Time, limit int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for _, j := range m.jobs {
		if (j.Status == job.StatusDispatched || j.Status == job.StatusRunning) && j.LeaseUntil != nil && j.LeaseUntil.Before(now) {
			ids = append(ids, j.ID)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids, nil
}
