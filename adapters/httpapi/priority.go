package httpapi

import (
	"net/http"
	"strconv"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// priorityRequest is the body of POST /jobs/{id}/priority.
type priorityRequest struct {
	Priority *string `json:"priority"`
}

// setPriority answers the job as it is now, its priority changed.
func (a *api) setPriority(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := a.readJSON(w, req)
	if err != nil {
		return err
	}
	var pr priorityRequest
	if err := jobtype.DecodeStrict(body, &pr); err != nil {
		return err
	}
	if pr.Priority == nil {
		return problem.Reject(problem.CodeValidation, "priority is required: one of low, normal, high")
	}
	v, err := a.uc.Jobs.SetPriority(req.Context(), caller(req), req.Param("id"), *pr.Priority)
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, v)
}

// queue answers the caller's waiting jobs in claim order with their positions.
func (a *api) queue(w http.ResponseWriter, req bunrouter.Request) error {
	q := req.URL.Query()
	if err := onlyParam(q, "limit"); err != nil {
		return err
	}
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > job.MaxQueueLimit {
			return problem.Reject(problem.CodeValidation, "limit %q must be an integer from 1 to %d", l, job.MaxQueueLimit)
		}
		limit = n
	}
	entries, err := a.uc.Jobs.Queue(req.Context(), caller(req), limit)
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []service.QueueEntry{}
	}
	return writeData(w, http.StatusOK, entries)
}
