package service

import (
	"context"
	"errors"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// CheckPriority is the priority step of the submit gate, and of a change of priority: field
// names the request's field in messages ("priority", "jobs[3].priority"). An unknown value is a
// VALIDATION_ERROR; high needs the Pro plan (PLAN_LIMIT, 403, as GPU work on Free is).
func CheckPriority(a account.Account, field, value string) (job.Priority, error) {
	p, err := job.ParsePriority(value)
	if err != nil {
		return "", problem.Reject(problem.CodeValidation, "%s must be one of low, normal, high; got %q", field, value)
	}
	if p == job.PriorityHigh && a.Plan != account.PlanPro {
		return "", problem.Reject(problem.CodePlanLimit, "%s high needs the Pro plan; this account is on %s", field, a.Plan)
	}
	return p, nil
}

// SetPriority is POST /jobs/{id}/priority: a waiting job of the account gets the priority and
// takes its place in the queue by it. Another account's job is NOT_FOUND; a job no longer
// waiting is a CONFLICT and keeps its priority.
func (s *Jobs) SetPriority(ctx context.Context, a account.Account, id, value string) (View, error) {
	p, err := CheckPriority(a, "priority", value)
	if err != nil {
		return View{}, err
	}
	if _, err := ownJob(ctx, s.jobs, a, id); err != nil {
		return View{}, err
	}
	j, err := s.jobs.Update(ctx, id, func(j *job.Job) error { return j.Reprioritise(p, s.viewer.Clock.Now()) })
	if errors.Is(err, job.ErrNotWaiting) {
		cur, gerr := s.jobs.Get(ctx, id)
		if gerr != nil {
			return View{}, gerr
		}
		return View{}, problem.Reject(problem.CodeConflict, "job %s is %s; only a waiting job's priority can change", id, cur.Status)
	}
	if err != nil {
		return View{}, err
	}
	return s.viewer.View(j), nil
}

// QueueEntry is one of an account's waiting jobs in GET /queue: the job, and its position among
// every account's waiting jobs of its class in the order they are claimed (1 goes next).
type QueueEntry struct {
	Position int       `json:"position"`
	Class    job.Class `json:"class"`
	Job      View      `json:"job"`
}

// Queue is GET /queue: up to limit of the account's waiting jobs, cpu first, each class in
// claim order, with their positions. Other accounts' jobs count in a position and are never
// shown.
func (s *Jobs) Queue(ctx context.Context, a account.Account, limit int) ([]QueueEntry, error) {
	q, err := s.jobs.Queue(ctx, job.QueueParams{AccountID: a.ID, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]QueueEntry, len(q))
	for i, e := range q {
		out[i] = QueueEntry{Position: e.Position, Class: e.Job.Class, Job: s.viewer.View(e.Job)}
	}
	return out, nil
}
