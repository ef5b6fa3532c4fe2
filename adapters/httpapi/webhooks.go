package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// endpointRequest is the body of POST and PATCH /webhook-endpoints; PATCH reads only the fields
// it is given.
type endpointRequest struct {
	Name             *string   `json:"name"`
	URL              *string   `json:"url"`
	SubscribedEvents *[]string `json:"subscribedEvents"`
	Enabled          *bool     `json:"enabled"`
}

func (a *api) decodeEndpoint(w http.ResponseWriter, req bunrouter.Request) (endpointRequest, error) {
	var er endpointRequest
	body, err := a.readJSON(w, req)
	if err != nil {
		return er, err
	}
	if err = jobtype.DecodeStrict(body, &er); err != nil {
		return er, err
	}
	// A field given as null would read as one left out, which PATCH keeps unchanged: say so.
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		for _, name := range []string{"name", "url", "subscribedEvents", "enabled"} {
			if v, ok := fields[name]; ok && string(bytes.TrimSpace(v)) == "null" {
				return er, problem.Reject(problem.CodeValidation, "%s is null; give a value, or leave the field out to keep it", name)
			}
		}
	}
	return er, nil
}

// createEndpoint answers 201 with the endpoint and its secret, shown this once.
func (a *api) createEndpoint(w http.ResponseWriter, req bunrouter.Request) error {
	er, err := a.decodeEndpoint(w, req)
	if err != nil {
		return err
	}
	if er.Enabled != nil {
		return problem.Reject(problem.CodeValidation, "enabled cannot be set at creation; an endpoint starts enabled")
	}
	p := service.WebhookEndpointParams{}
	for name, v := range map[string]*string{"name": er.Name, "url": er.URL} {
		if v == nil {
			return problem.Reject(problem.CodeValidation, "%s is required", name)
		}
	}
	p.Name, p.URL = *er.Name, *er.URL
	if er.SubscribedEvents != nil {
		p.SubscribedEvents = *er.SubscribedEvents
	}
	v, err := a.uc.Webhooks.CreateWebhookEndpoint(req.Context(), caller(req), p)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/webhook-endpoints/"+url.PathEscape(v.ID))
	return writeData(w, http.StatusCreated, v)
}

func (a *api) listEndpoints(w http.ResponseWriter, req bunrouter.Request) error {
	vs, err := a.uc.Webhooks.ListWebhookEndpoints(req.Context(), caller(req))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, vs)
}

func (a *api) getEndpoint(w http.ResponseWriter, req bunrouter.Request) error {
	v, err := a.uc.Webhooks.GetWebhookEndpoint(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, v)
}

func (a *api) updateEndpoint(w http.ResponseWriter, req bunrouter.Request) error {
	er, err := a.decodeEndpoint(w, req)
	if err != nil {
		return err
	}
	v, err := a.uc.Webhooks.UpdateWebhookEndpoint(req.Context(), caller(req), req.Param("id"), service.WebhookEndpointPatch{
		Name: er.Name, URL: er.URL, SubscribedEvents: er.SubscribedEvents, Enabled: er.Enabled})
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, v)
}

func (a *api) deleteEndpoint(w http.ResponseWriter, req bunrouter.Request) error {
	if err := a.uc.Webhooks.DeleteWebhookEndpoint(req.Context(), caller(req), req.Param("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *api) testEndpoint(w http.ResponseWriter, req bunrouter.Request) error {
	v, err := a.uc.Webhooks.SendTestWebhook(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusAccepted, v)
}

func (a *api) rotateSecret(w http.ResponseWriter, req bunrouter.Request) error {
	v, err := a.uc.Webhooks.RotateWebhookSecret(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, v)
}

// deliveryPage is the answer of GET /webhook-endpoints/{id}/deliveries.
type deliveryPage struct {
	Data       []service.DeliveryView `json:"data"`
	Pagination pagination             `json:"pagination"`
}

func (a *api) listDeliveries(w http.ResponseWriter, req bunrouter.Request) error {
	cursor, limit, err := pageQuery(req.URL.Query())
	if err != nil {
		return err
	}
	p := webhook.ListParams{Limit: limit}
	if cursor != "" {
		if _, _, err := webhook.DecodeCursor(cursor); err != nil {
			return err
		}
		p.Cursor = cursor
	}
	ds, next, err := a.uc.Webhooks.ListDeliveries(req.Context(), caller(req), req.Param("id"), p)
	if err != nil {
		return err
	}
	page := deliveryPage{Data: ds}
	if page.Data == nil {
		page.Data = []service.DeliveryView{}
	}
	if next != "" {
		page.Pagination.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (a *api) redeliver(w http.ResponseWriter, req bunrouter.Request) error {
	v, err := a.uc.Webhooks.Redeliver(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusAccepted, v)
}
