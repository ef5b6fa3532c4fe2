package service

import (
	"context"
	"errors"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// JobsPorts are what reading jobs needs.
type JobsPorts struct {
	Jobs   job.Store
	Blobs  blob.Store
	Viewer Viewer
	// Waits tells Wait of the jobs' changes; nil makes one of its own, told by Changed alone.
	Waits *Waits
	// Recheck is how often a Wait reads its job with no word of a change: the words are hints,
	// which a broker may drop. Default five seconds.
	Recheck time.Duration
}

// Jobs reads jobs: one, a page of them, and the files of their outputs; and waits for a job
// to end (Wait).
type Jobs struct {
	jobs    job.Store
	blobs   blob.Store
	viewer  Viewer
	waits   *Waits
	recheck time.Duration
}

// NewJobs returns the Jobs use case.
func NewJobs(p JobsPorts) (*Jobs, error) {
	err := errors.Join(need("Jobs", port{"a job store", p.Jobs}, port{"a blob store", p.Blobs}), p.Viewer.check())
	if err != nil {
		return nil, err
	}
	if p.Waits == nil {
		p.Waits = NewWaits()
	}
	if p.Recheck <= 0 {
		p.Recheck = 5 * time.Second
	}
	return &Jobs{jobs: p.Jobs, blobs: p.Blobs, viewer: p.Viewer, waits: p.Waits, recheck: p.Recheck}, nil
}

// Changed tells the waits on job id that it may have changed (Waits.Changed).
func (s *Jobs) Changed(id string) { s.waits.Changed(id) }

// Stop ends every wait, and the waits to come (Waits.Stop).
func (s *Jobs) Stop() { s.waits.Stop() }

// Waiting is how many waits are on now (Waits.Waiting).
func (s *Jobs) Waiting() int { return s.waits.Waiting() }

// Wait returns the account's job once it has ended (complete, failed or cancelled), or as it
// stands after up to d (at most MaxWait), whichever comes first: a client follows a job with
// one request where it would poll. A job that has ended is returned at once; so is any job
// when d is 0, and when the account already holds MaxWaitsPerAccount waits on this replica (a
// client then polls). The wait ends early, with the job as it stands, when the service stops;
// and with ctx's error when ctx ends.
func (s *Jobs) Wait(ctx context.Context, a account.Account, id string, d time.Duration) (View, error) {
	if d <= 0 || !s.waits.enter(a.ID) {
		return s.Get(ctx, a, id)
	}
	defer s.waits.exit(a.ID)
	deadline := time.NewTimer(min(d, MaxWait))
	defer deadline.Stop()
	recheck := time.NewTicker(s.recheck)
	defer recheck.Stop()
	last := false
	for {
		// One read, watching the job from before it: a change after the read wakes the wait.
		j, again, err := func() (*job.Job, bool, error) {
			w, leave := s.waits.watch(id)
			defer leave()
			j, err := ownJob(ctx, s.jobs, a, id)
			if err != nil || last || j.Status.Terminal() {
				return j, false, err
			}
			select {
			case <-w.ch:
				if e := w.ended; e != nil && e.AccountID == a.ID && e.Status.Terminal() {
					return e, false, nil // ended on this replica: as its change committed it
				}
			case <-recheck.C:
			case <-deadline.C:
				last = true // read it once more, as it stands now
			case <-s.waits.stopping:
				last = true
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
			return nil, true, nil
		}()
		switch {
		case err != nil:
			return View{}, err
		case !again:
			return s.viewer.View(j), nil
		}
	}
}

// Get returns the account's job as clients see it, with fresh file URLs.
func (s *Jobs) Get(ctx context.Context, a account.Account, id string) (View, error) {
	j, err := ownJob(ctx, s.jobs, a, id)
	if err != nil {
		return View{}, err
	}
	return s.viewer.View(j), nil
}

// List returns a page of the account's jobs, newest first.
func (s *Jobs) List(ctx context.Context, a account.Account, p job.ListParams) ([]View, string, error) {
	p.AccountID = a.ID
	page, err := s.jobs.List(ctx, p)
	if err != nil {
		return nil, "", err
	}
	views := make([]View, len(page.Jobs))
	for i, j := range page.Jobs {
		views[i] = s.viewer.View(j)
	}
	return views, page.NextCursor, nil
}

// OpenOutput returns one file of a complete job's output, for a download whose token the
// caller has verified; file "" is the headline file. A file not in the output is NOT_FOUND.
func (s *Jobs) OpenOutput(ctx context.Context, jobID, file string) (job.File, blob.Blob, error) {
	notFound := problem.Reject(problem.CodeNotFound, "file %q of job %q not found", file, jobID)
	j, err := s.jobs.Get(ctx, jobID)
	if errors.Is(err, problem.ErrNotFound) {
		return job.File{}, nil, notFound
	}
	if err != nil {
		return job.File{}, nil, err
	}
	if j.Status != job.StatusComplete || j.Output == nil {
		return job.File{}, nil, notFound
	}
	for _, f := range j.Output.Files {
		if f.Path == file || (file == "" && j.Output.File != nil && f.Path == j.Output.File.Path) {
			b, err := openOutput(ctx, s.blobs, j, f.Path)
			if err != nil {
				return job.File{}, nil, err
			}
			return f, b, nil
		}
	}
	return job.File{}, nil, notFound
}
