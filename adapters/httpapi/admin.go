package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// The /internal/admin routes are the operator's view of the fleet: the worker credentials, with
// when each was last seen, its class, version and running jobs; issuing one (its token shown
// once) and revoking one. They need Options.AdminToken as the bearer credential, and are off
// (404) without it. An account's API key opens none of them.

// asAdmin requires Authorization: Bearer <admin token>. A wrong one is refused and logged with
// the caller's address.
func (a *api) asAdmin(h bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if a.opts.AdminToken == "" || a.uc.Workers == nil {
			return notFoundRoute(req.Method, req.URL.Path)
		}
		scheme, secret, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") ||
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(secret)), []byte(a.opts.AdminToken)) != 1 {
			a.log.Warn("httpapi: admin call refused: missing or wrong admin token", "remote", req.RemoteAddr, "path", req.URL.Path)
			return a.failures.failed(req.Request, problem.Reject(problem.CodeUnauthorized,
				"the admin token is required: Authorization: Bearer <MEDIAJOBS_ADMIN_TOKEN>"))
		}
		return h(w, req)
	}
}

func (a *api) adminListWorkers(w http.ResponseWriter, req bunrouter.Request) error {
	list, err := a.uc.Workers.List(req.Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []service.WorkerView{}
	}
	return writeData(w, http.StatusOK, list)
}

// CreateWorkerRequest is the body of POST /internal/admin/workers.
type CreateWorkerRequest struct {
	Name string `json:"name"`
	// Class is the one compute class the credential's workers may claim: cpu, gpu, or empty
	// for any.
	Class job.Class `json:"class,omitempty"`
}

// createdWorker answers POST /internal/admin/workers: the credential, and its token, shown
// this once.
type createdWorker struct {
	service.WorkerView
	Token string `json:"token"`
}

func (a *api) adminCreateWorker(w http.ResponseWriter, req bunrouter.Request) error {
	var cr CreateWorkerRequest
	if err := a.readStrict(w, req, &cr); err != nil {
		return err
	}
	secret, c, err := a.uc.Workers.Create(req.Context(), cr.Name, cr.Class)
	if err != nil {
		return err
	}
	return writeData(w, http.StatusCreated, createdWorker{WorkerView: service.WorkerView{Credential: c}, Token: secret})
}

func (a *api) adminRevokeWorker(w http.ResponseWriter, req bunrouter.Request) error {
	v, err := a.uc.Workers.Revoke(req.Context(), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, v)
}
