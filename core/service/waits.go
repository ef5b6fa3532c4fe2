package service

import (
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// MaxWait is the longest Jobs.Wait: a client waits again for longer.
const MaxWait = 60 * time.Second

// WaitFor is the wait of GET /jobs/{id}?wait= and get_job's wait, given in whole seconds: 0
// to MaxWait, else a VALIDATION_ERROR naming it.
func WaitFor(seconds int) (time.Duration, error) {
	if maxWait := int(MaxWait / time.Second); seconds < 0 || seconds > maxWait {
		return 0, problem.Reject(problem.CodeValidation, "wait %d must be a whole number of seconds from 0 to %d", seconds, maxWait)
	}
	return time.Duration(seconds) * time.Second, nil
}

// MaxWaitsPerAccount is how many Jobs.Wait an account holds at once on one replica; a wait
// past it answers at once, as a read does. Each wait holds a connection and reads its job
// again at every change and recheck, where a plain read costs one: the cap keeps what one
// account's request budget buys near what polling would.
const MaxWaitsPerAccount = 50

// Waits is where the waits on jobs (Jobs.Wait) hear that a job may have changed. As an Observer
// it hears of each job this replica makes terminal the moment its change commits; Changed
// brings the hints of the rest (the job events of this replica's relay and of other replicas,
// through the bus).
type Waits struct {
	NoObserver

	// changed holds the reads of each job being waited for; accounts counts the waits of each
	// account.
	mu       sync.Mutex
	changed  map[string]*watchers
	accounts map[string]int
	// stopping is closed when the service stops: waits return at once.
	stopping chan struct{}
	stopOnce sync.Once
}

// NewWaits returns a Waits with no one waiting.
func NewWaits() *Waits {
	return &Waits{changed: map[string]*watchers{}, accounts: map[string]int{}, stopping: make(chan struct{})}
}

// JobFinished ends the waits on j: it has ended, and they answer with j as its change
// committed it, without reading it again.
func (s *Waits) JobFinished(j *job.Job) { s.change(j.ID, j) }

// Changed tells the waits on job id that it may have changed: a hint, from this replica's job
// events or another's through the bus.
func (s *Waits) Changed(id string) { s.change(id, nil) }

func (s *Waits) change(id string, ended *job.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.changed[id]; ok {
		w.ended = ended
		close(w.ch)
		delete(s.changed, id)
	}
}

// Stop ends every wait, and the waits to come, with the job as it stands: the service is
// shutting down, and a long poll must not hold it up.
func (s *Waits) Stop() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

// enter counts a wait of account, false (and nothing counted) when the account holds
// MaxWaitsPerAccount already.
func (s *Waits) enter(account string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accounts[account] >= MaxWaitsPerAccount {
		return false
	}
	s.accounts[account]++
	return true
}

// exit uncounts a wait enter counted.
func (s *Waits) exit(account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accounts[account]--; s.accounts[account] <= 0 {
		delete(s.accounts, account)
	}
}

// Waiting is how many waits are on now (the mediajobs_job_waits gauge).
func (s *Waits) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, waits := range s.accounts {
		n += waits
	}
	return n
}

// watchers are the waits on one job: ch is closed by its next change, and ended is then the
// job as the change that ended it committed it (JobFinished), or nil for a hint (Changed).
type watchers struct {
	ch    chan struct{}
	n     int
	ended *job.Job
}

// watch returns the watchers that the next change of job id wakes, and the function that
// leaves them: the last wait to leave removes the job's entry, so a wait on a job that never
// changes again (an ended one, one of another account) leaves nothing behind. w.ended may be
// read once w.ch is closed.
func (s *Waits) watch(id string) (*watchers, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.changed[id]
	if !ok {
		w = &watchers{ch: make(chan struct{})}
		s.changed[id] = w
	}
	w.n++
	return w, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.n--; w.n == 0 && s.changed[id] == w {
			delete(s.changed, id)
		}
	}
}
