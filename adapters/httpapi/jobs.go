package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/adapters/logctx"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/validator"
)

// created is the answer of POST /jobs and POST /jobs/{id}/retry.
type created struct {
	ID      string     `json:"id"`
	Status  job.Status `json:"status"`
	RetryOf string     `json:"retryOf,omitempty"`
}

// submitJob answers 201 Created: the job exists (in waiting) when the response is sent.
func (a *api) submitJob(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := a.readJSON(w, req)
	if err != nil {
		return err
	}
	jr, err := jobtype.DecodeRequest(body)
	if err != nil {
		return err
	}
	j, err := a.uc.Submit.Submit(req.Context(), caller(req), jr)
	if err != nil {
		return err
	}
	a.log.InfoContext(logctx.WithJob(req.Context(), j.ID), "job submitted", "type", j.Type, "class", j.Class,
		"account", j.AccountID)
	w.Header().Set("Location", "/jobs/"+url.PathEscape(j.ID))
	return writeData(w, http.StatusCreated, created{ID: j.ID, Status: j.Status})
}

// getJob answers the job; with ?wait=N, once the job has ended or after N seconds (a long
// poll), whichever comes first.
func (a *api) getJob(w http.ResponseWriter, req bunrouter.Request) error {
	wait, err := waitParam(req.URL.Query())
	if err != nil {
		return err
	}
	v, err := a.uc.Jobs.Wait(req.Context(), caller(req), req.Param("id"), wait)
	if err != nil {
		if req.Context().Err() != nil {
			// The client went away while it waited: no one reads an answer. 499 (nginx's "client
			// closed request") tells the request metrics and log so, where 200 would not.
			w.WriteHeader(statusClientClosed)
			return nil
		}
		return err
	}
	withDelivery, err := a.uc.Destinations.WithDelivery(req.Context(), caller(req), v)
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, withDelivery)
}

// statusClientClosed is the status recorded for a request whose client left before its answer.
const statusClientClosed = 499

// waitParam reads GET /jobs/{id}'s wait (service.WaitFor), 0 when absent.
func waitParam(q url.Values) (time.Duration, error) {
	if err := onlyParam(q, "wait"); err != nil { // known, and given once
		return 0, err
	}
	vals, ok := q["wait"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(vals[0])
	if err != nil {
		return 0, problem.Reject(problem.CodeValidation, "wait %q must be a whole number of seconds from 0 to %d", vals[0], int(service.MaxWait/time.Second))
	}
	return service.WaitFor(n)
}

// listPage is the answer of GET /jobs: { data: [...], pagination: { nextCursor } }.
type listPage struct {
	Data       []service.View `json:"data"`
	Pagination pagination     `json:"pagination"`
}

type pagination struct {
	// NextCursor is null on the last page.
	NextCursor *string `json:"nextCursor"`
}

func (a *api) listJobs(w http.ResponseWriter, req bunrouter.Request) error {
	p, err := a.listParams(req.URL.Query())
	if err != nil {
		return err
	}
	views, next, err := a.uc.Jobs.List(req.Context(), caller(req), p)
	if err != nil {
		return err
	}
	page := listPage{Data: views}
	if page.Data == nil {
		page.Data = []service.View{}
	}
	if next != "" {
		page.Pagination.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (a *api) listParams(q url.Values) (job.ListParams, error) {
	var p job.ListParams
	cursor, limit, err := pageQuery(q, "status", "type")
	if err != nil {
		return p, err
	}
	p.Limit = limit
	if s := q.Get("status"); s != "" {
		st, err := job.ParseStatus(s)
		if err != nil {
			names := make([]string, len(job.Statuses))
			for i, st := range job.Statuses {
				names[i] = string(st)
			}
			return p, problem.Reject(problem.CodeValidation, "status %q is not one of %s", s, strings.Join(names, ", "))
		}
		p.Status = st
	}
	if t := q.Get("type"); t != "" {
		if _, ok := a.uc.Types.Lookup(t); !ok {
			return p, problem.Reject(problem.CodeValidation, "type %q is not a job type; one of: %s", t, strings.Join(a.uc.Types.Names(), ", "))
		}
		p.Type = t
	}
	if cursor != "" {
		if _, _, err := job.DecodeCursor(cursor); err != nil {
			return p, err
		}
		p.Cursor = cursor
	}
	return p, nil
}

func (a *api) cancelJob(w http.ResponseWriter, req bunrouter.Request) error {
	v, err := a.uc.Cancel.Cancel(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, v)
}

func (a *api) retryJob(w http.ResponseWriter, req bunrouter.Request) error {
	j, err := a.uc.Submit.Retry(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/jobs/"+url.PathEscape(j.ID))
	return writeData(w, http.StatusCreated, created{ID: j.ID, Status: j.Status, RetryOf: j.RetryOf})
}

// validateRequest is the body of POST /ffmpeg/validate.
type validateRequest struct {
	Command *string `json:"command"`
	// Inputs are a job's inputs, of the same shape; names the command reads that they do not
	// provide come back as requiredInputs.
	Inputs json.RawMessage `json:"inputs"`
}

func (a *api) validate(w http.ResponseWriter, req bunrouter.Request) error {
	body, err := a.readJSON(w, req)
	if err != nil {
		return err
	}
	var vr validateRequest
	if err := jobtype.DecodeStrict(body, &vr); err != nil {
		return err
	}
	if vr.Command == nil {
		return problem.Reject(problem.CodeValidation, "command is required")
	}
	opts := a.validatorOptions()
	if opts.Inputs, err = validator.ParseJobInputs(vr.Inputs); err != nil {
		return problem.Reject(problem.CodeValidation, "%s", err.Error())
	}
	res := a.opts.Validate(*vr.Command, opts)
	if !res.Valid && res.Err != nil && a.opts.OnValidatorRejection != nil {
		a.opts.OnValidatorRejection(res.Err.Layer)
	}
	return writeData(w, http.StatusOK, res)
}

// ffmpegFlags answers GET /ffmpeg/flags: the validator's flag allowlist, each flag with the
// reason it is safe. It is the allowlist of this binary, so it changes only with a release.
func (a *api) ffmpegFlags(w http.ResponseWriter, req bunrouter.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	return writeData(w, http.StatusOK, validator.Flags())
}

// readJSON reads a JSON request body under the cap. A declared Content-Type must be JSON; a
// missing one is taken as JSON, and so is curl's default for -d
// (application/x-www-form-urlencoded), whose body is then parsed as JSON: auth is a bearer
// header, never a cookie, so a browser form gains nothing from it, and a first curl without
// -H 'Content-Type: application/json' just works.
func (a *api) readJSON(w http.ResponseWriter, req bunrouter.Request) ([]byte, error) {
	if ct := req.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, problem.Reject(problem.CodeValidation, "Content-Type %q is not a media type; send application/json", ct)
		}
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") && mt != "application/x-www-form-urlencoded" {
			return nil, protocolError(http.StatusUnsupportedMediaType, "Content-Type %q is not accepted; send application/json", ct)
		}
	}
	if req.ContentLength > a.opts.MaxJSONBody {
		return nil, problem.Reject(problem.CodePayloadTooLarge, "request body exceeds the %d byte limit", a.opts.MaxJSONBody)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, a.opts.MaxJSONBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, err
	}
	if err != nil {
		a.log.InfoContext(req.Context(), "httpapi: request body could not be read", "err", err)
		return nil, problem.Reject(problem.CodeValidation, "the request body ended early or could not be read")
	}
	if err := jobtype.CheckUnicode(body); err != nil {
		return nil, err
	}
	return body, nil
}
