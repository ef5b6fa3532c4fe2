package service

import (
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// MaxWait is the longest Jobs.Wait: a client waits again for longer.
const MaxWait = 60 * time.Second

// Waits is where the waits on jobs (Jobs.Wait) hear that a job may have changed. As an Observer
// it hears of each job this replica makes terminal the moment its change commits; Changed
// brings the hints of the rest (the job events of this replica's relay and of other replicas,
// through the bus).
type Waits struct {
	NoObserver

	// changed holds the waits on each job being waited for; waiting counts them all.
	mu      sync.Mutex
	changed map[string]*watchers
	waiting int
	// stopping is closed when the service stops: waits return at once.
	stopping chan struct{}
	stopOnce sync.Once
}

// NewWaits returns a Waits with no one waiting.
func NewWaits() *Waits {
	return &Waits{changed: map[string]*watchers{}, stopping: make(chan struct{})}
}

// JobFinished ends the waits on j: it has ended.
func (s *Waits) JobFinished(j *job.Job) { s.Changed(j.ID) }

// Changed tells the waits on job id that it may have changed: a hint, from this replica's job
// events or another's through the bus.
func (s *Waits) Changed(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.changed[id]; ok {
		close(w.ch)
		delete(s.changed, id)
	}
}

// Stop ends every wait, and the waits to come, with the job as it stands: the service is
// shutting down, and a long poll must not hold it up.
func (s *Waits) Stop() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

// Waiting is how many waits are on now (the mediajobs_job_waits gauge).
func (s *Waits) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// watchers are the waits on one job: ch is closed by its next change.
type watchers struct {
	ch chan struct{}
	n  int
}

// watch returns the channel Changed closes for job id, and the function that leaves it: the
// last wait to leave removes the job's entry, so a wait on a job that never changes again (an
// ended one, one of another account) leaves nothing behind.
func (s *Waits) watch(id string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.changed[id]
	if !ok {
		w = &watchers{ch: make(chan struct{})}
		s.changed[id] = w
	}
	w.n++
	s.waiting++
	return w.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.waiting--
		if w.n--; w.n == 0 && s.changed[id] == w {
			delete(s.changed, id)
		}
	}
}
