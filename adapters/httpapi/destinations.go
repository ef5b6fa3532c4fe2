package httpapi

import (
	"net/http"
	"net/url"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// destinationRequest is the body of POST /destinations.
type destinationRequest struct {
	Name            string `json:"name"`
	Endpoint        string `json:"endpoint"`
	Bucket          string `json:"bucket"`
	Region          string `json:"region"`
	Prefix          string `json:"prefix"`
	PathStyle       bool   `json:"pathStyle"`
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
}

func (a *api) destinations() (*service.Destinations, error) {
	if a.uc.Destinations == nil {
		return nil, problem.Reject(problem.CodeNotFound, "this server delivers to no destination")
	}
	return a.uc.Destinations, nil
}

// createDestination answers 201 once the destination's test write and delete succeeded.
func (a *api) createDestination(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.destinations()
	if err != nil {
		return err
	}
	body, err := a.readJSON(w, req)
	if err != nil {
		return err
	}
	var dr destinationRequest
	if err := jobtype.DecodeStrict(body, &dr); err != nil {
		return err
	}
	d, err := uc.Create(req.Context(), caller(req), destination.Params(dr))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/destinations/"+url.PathEscape(d.ID))
	return writeData(w, http.StatusCreated, service.ViewDestination(d))
}

func (a *api) listDestinations(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.destinations()
	if err != nil {
		return err
	}
	ds, err := uc.List(req.Context(), caller(req))
	if err != nil {
		return err
	}
	out := make([]service.DestinationView, len(ds))
	for i, d := range ds {
		out[i] = service.ViewDestination(d)
	}
	return writeData(w, http.StatusOK, out)
}

func (a *api) getDestination(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.destinations()
	if err != nil {
		return err
	}
	d, err := uc.Get(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, service.ViewDestination(d))
}

func (a *api) deleteDestination(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.destinations()
	if err != nil {
		return err
	}
	if err := uc.Delete(req.Context(), caller(req), req.Param("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deliverJob is POST /jobs/{id}/deliver: 202 with the delivery, pending again.
func (a *api) deliverJob(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.destinations()
	if err != nil {
		return err
	}
	v, err := uc.Redeliver(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusAccepted, v)
}
