package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// The /internal/runner routes carry the work queue (workqueue.Queue) to runners in other
// processes: `mediajobs worker --control http://…`. Every call needs a worker credential as its
// bearer credential; the calls about one job also carry the job's lease, whose token the
// control plane issued with the job. A refused lease is 409 with code CONFLICT.

// Lease headers of the asset and output routes, whose job is in the path.
const (
	HeaderLeaseAttempt = "X-Lease-Attempt"
	HeaderLeaseToken   = "X-Lease-Token"
)

// MaxClaimWait bounds a claim's long poll.
const MaxClaimWait = 30 * time.Second

// workerHandler is a route of remote runners, given the work queue as the authenticated
// worker may use it.
type workerHandler func(q workqueue.Queue, w http.ResponseWriter, req bunrouter.Request) error

// asWorker requires Authorization: Bearer <worker credential> (a credential from `mediajobs
// workers create`, or the shared MEDIAJOBS_WORKER_TOKEN) and hands h the work queue bound to
// that worker's identity. A missing, wrong or revoked credential is refused and logged with the
// caller's address.
func (a *api) asWorker(h workerHandler) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if a.uc.Workers == nil {
			return notFoundRoute(req.Method, req.URL.Path)
		}
		scheme, secret, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			secret = ""
		}
		id, err := a.uc.Workers.Authenticate(req.Context(), secret)
		if err != nil {
			if problem.CodeOf(err) == problem.CodeUnauthorized {
				a.log.Warn("httpapi: runner call refused", "remote", req.RemoteAddr, "path", req.URL.Path, "reason", err.Error())
				// A wrong credential spends the address's budget of failures, as a wrong API key does.
				return a.failures.failed(req.Request, problem.Reject(problem.CodeUnauthorized,
					"a valid worker credential is required: Authorization: Bearer <token of `mediajobs workers create`, or MEDIAJOBS_WORKER_TOKEN>"))
			}
			return err
		}
		return h(a.uc.Runs.As(id), w, req)
	}
}

// leaseError maps a refused lease to 409.
func leaseError(err error) error {
	if errors.Is(err, workqueue.ErrLeaseRefused) {
		return problem.Reject(problem.CodeConflict, "lease refused: the job is no longer held by this lease")
	}
	return err
}

// ClaimRequest is the body of POST /internal/runner/claim.
type ClaimRequest struct {
	Class  job.Class `json:"class"`
	Max    int       `json:"max"`
	Worker string    `json:"worker"`
	// Version is the worker's build, shown by `mediajobs workers list`.
	Version string `json:"version,omitempty"`
	// WaitMs is how long to wait for work, at most MaxClaimWait.
	WaitMs int64 `json:"waitMs"`
	// Slots is how many jobs the worker runs at once.
	Slots int `json:"slots,omitempty"`
}

func (a *api) runnerClaim(q workqueue.Queue, w http.ResponseWriter, req bunrouter.Request) error {
	var cr ClaimRequest
	if err := a.readStrict(w, req, &cr); err != nil {
		return err
	}
	if cr.Max < 1 || cr.Max > 64 {
		return problem.Reject(problem.CodeValidation, "max %d is not between 1 and 64", cr.Max)
	}
	wait := min(time.Duration(max(cr.WaitMs, 0))*time.Millisecond, MaxClaimWait)
	work, err := q.Claim(req.Context(), workqueue.ClaimParams{Class: cr.Class, Max: cr.Max, Worker: cr.Worker, Version: cr.Version, Wait: wait, Slots: min(max(cr.Slots, 0), 64)})
	if err != nil {
		return err
	}
	if work == nil {
		work = []workqueue.Assignment{}
	}
	return writeData(w, http.StatusOK, work)
}

func (a *api) runnerHeartbeat(q workqueue.Queue, w http.ResponseWriter, req bunrouter.Request) error {
	var b workqueue.Beat
	if err := a.readStrict(w, req, &b); err != nil {
		return err
	}
	ack, err := q.Heartbeat(req.Context(), b)
	if err != nil {
		return leaseError(err)
	}
	return writeData(w, http.StatusOK, ack)
}

// ReportRequest is the body of POST /internal/runner/report.
type ReportRequest struct {
	Lease  workqueue.Lease  `json:"lease"`
	Result workqueue.Result `json:"result"`
}

func (a *api) runnerReport(q workqueue.Queue, w http.ResponseWriter, req bunrouter.Request) error {
	var rr ReportRequest
	if err := a.readStrict(w, req, &rr); err != nil {
		return err
	}
	if err := q.Report(req.Context(), rr.Lease, rr.Result); err != nil {
		return leaseError(err)
	}
	return writeData(w, http.StatusOK, struct{}{})
}

// leaseOf reads the lease of an asset or output call from its path and headers.
func leaseOf(req bunrouter.Request) (workqueue.Lease, error) {
	attempt, err := strconv.Atoi(req.Header.Get(HeaderLeaseAttempt))
	token := req.Header.Get(HeaderLeaseToken)
	if err != nil || token == "" {
		return workqueue.Lease{}, problem.Reject(problem.CodeValidation, "the %s and %s headers are required", HeaderLeaseAttempt, HeaderLeaseToken)
	}
	return workqueue.Lease{JobID: req.Param("job_id"), Attempt: attempt, Token: token}, nil
}

func (a *api) runnerAsset(q workqueue.Queue, w http.ResponseWriter, req bunrouter.Request) error {
	l, err := leaseOf(req)
	if err != nil {
		return err
	}
	r, err := q.OpenAsset(req.Context(), l, req.Param("asset_id"))
	if err != nil {
		return leaseError(err)
	}
	defer r.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.Copy(w, r)
	return nil
}

// outputStored is the answer of PUT /internal/runner/jobs/{job_id}/outputs/{name}.
type outputStored struct {
	Size int64 `json:"size"`
}

func (a *api) runnerOutput(q workqueue.Queue, w http.ResponseWriter, req bunrouter.Request) error {
	l, err := leaseOf(req)
	if err != nil {
		return err
	}
	n, err := q.PutOutput(req.Context(), l, req.Param("name"), req.Body, 0)
	if err != nil {
		return leaseError(err)
	}
	return writeData(w, http.StatusCreated, outputStored{Size: n})
}

// readStrict reads a JSON body into v, refusing unknown fields.
func (a *api) readStrict(w http.ResponseWriter, req bunrouter.Request, v any) error {
	body, err := a.readJSON(w, req)
	if err != nil {
		return err
	}
	return jobtype.DecodeStrict(body, v)
}
