package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/adapters/logctx"

	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// batchRequest is the body of POST /batches.
type batchRequest struct {
	Jobs *[]json.RawMessage `json:"jobs"`
	// Priority is every job's that names none of its own.
	Priority string `json:"priority"`
}

// batchCreated is the answer of POST /batches.
type batchCreated struct {
	ID     string       `json:"id"`
	Status batch.Status `json:"status"`
	Total  int          `json:"total"`
	Jobs   []created    `json:"jobs"`
}

// submitBatch answers 201 Created: the batch and every job of it exist when the response is
// sent, or, on a rejection, none of them do.
func (a *api) submitBatch(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := a.readJSON(w, req)
	if err != nil {
		return err
	}
	var br batchRequest
	if err := jobtype.DecodeStrict(body, &br); err != nil {
		return err
	}
	if br.Jobs == nil {
		return problem.Reject(problem.CodeValidation, "jobs is required: an array of 1 to %d job requests", batch.MaxJobs)
	}
	if n := len(*br.Jobs); n == 0 || n > batch.MaxJobs {
		return problem.Reject(problem.CodeValidation, "jobs must hold 1 to %d jobs; it holds %d", batch.MaxJobs, n)
	}
	if _, err := service.CheckPriority(caller(req), "priority", br.Priority); err != nil {
		return err
	}
	reqs := make([]jobtype.Request, len(*br.Jobs))
	for i, raw := range *br.Jobs {
		if reqs[i], err = jobtype.DecodeRequestAt(fmt.Sprintf("jobs[%d].", i), raw); err != nil {
			return err
		}
		if reqs[i].Priority == "" {
			reqs[i].Priority = br.Priority
		}
	}
	b, jobs, err := a.uc.Batches.Submit(req.Context(), caller(req), reqs)
	if err != nil {
		return err
	}
	out := batchCreated{ID: b.ID, Status: b.Status, Total: b.Total(), Jobs: make([]created, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = created{ID: j.ID, Status: j.Status}
		a.log.InfoContext(logctx.WithJob(req.Context(), j.ID), "job submitted", "type", j.Type, "class", j.Class,
			"account", j.AccountID, "batch", b.ID)
	}
	w.Header().Set("Location", "/batches/"+url.PathEscape(b.ID))
	return writeData(w, http.StatusCreated, out)
}

func (a *api) getBatch(w http.ResponseWriter, req bunrouter.Request) error {
	v, err := a.uc.Batches.Get(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, v)
}

// batchPage is the answer of GET /batches: { data: [...], pagination: { nextCursor } }.
type batchPage struct {
	Data       []service.BatchView `json:"data"`
	Pagination pagination          `json:"pagination"`
}

func (a *api) listBatches(w http.ResponseWriter, req bunrouter.Request) error {
	cursor, limit, err := pageQuery(req.URL.Query())
	if err != nil {
		return err
	}
	p := batch.ListParams{Limit: limit}
	if cursor != "" {
		if _, _, err := batch.DecodeCursor(cursor); err != nil {
			return err
		}
		p.Cursor = cursor
	}
	views, next, err := a.uc.Batches.List(req.Context(), caller(req), p)
	if err != nil {
		return err
	}
	page := batchPage{Data: views}
	if page.Data == nil {
		page.Data = []service.BatchView{}
	}
	if next != "" {
		page.Pagination.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}
