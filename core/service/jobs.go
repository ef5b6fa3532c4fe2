package service

import (
	"context"
	"errors"

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
}

// Jobs reads jobs: one, a page of them, and the files of their outputs.
type Jobs struct {
	jobs   job.Store
	blobs  blob.Store
	viewer Viewer
}

// NewJobs returns the Jobs use case.
func NewJobs(p JobsPorts) (*Jobs, error) {
	err := errors.Join(need("Jobs", port{"a job store", p.Jobs}, port{"a blob store", p.Blobs}), p.Viewer.check())
	if err != nil {
		return nil, err
	}
	return &Jobs{jobs: p.Jobs, blobs: p.Blobs, viewer: p.Viewer}, nil
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
			b, err := s.blobs.Open(ctx, blob.OutputKey(j.AccountID, jobID, f.Path))
			if err != nil {
				return job.File{}, nil, err
			}
			return f, b, nil
		}
	}
	return job.File{}, nil, notFound
}
