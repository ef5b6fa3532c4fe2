package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// presetRequest is the body of POST /presets and PUT /presets/{name}.
type presetRequest struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	Command     string                     `json:"command"`
	Steps       []string                   `json:"steps"`
	Keep        []string                   `json:"keep"`
	Variables   map[string]preset.Variable `json:"variables"`
	// Version is the version a PUT replaces, when If-Match does not say it.
	Version *int `json:"version"`
}

func (a *api) presets() (*service.Presets, error) {
	if a.uc.Presets == nil {
		return nil, problem.Reject(problem.CodeNotFound, "this server keeps no presets")
	}
	return a.uc.Presets, nil
}

func (a *api) decodePreset(w http.ResponseWriter, req bunrouter.Request) (presetRequest, *preset.Preset, error) {
	var pr presetRequest
	body, err := a.readJSON(w, req)
	if err != nil {
		return pr, nil, err
	}
	if err := jobtype.DecodeStrict(body, &pr); err != nil {
		return pr, nil, err
	}
	return pr, &preset.Preset{Name: pr.Name, Description: pr.Description, Command: pr.Command, Steps: pr.Steps,
		Keep: pr.Keep, Variables: pr.Variables}, nil
}

// writePreset answers the preset with its version as the ETag.
func writePreset(w http.ResponseWriter, status int, p *preset.Preset) error {
	w.Header().Set("ETag", strconv.Quote(strconv.Itoa(p.Version)))
	if p.Variables == nil {
		p.Variables = map[string]preset.Variable{}
	}
	return writeData(w, status, p)
}

func (a *api) createPreset(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.presets()
	if err != nil {
		return err
	}
	pr, p, err := a.decodePreset(w, req)
	if err != nil {
		return err
	}
	if pr.Version != nil {
		return &problem.Problem{Code: problem.CodeValidation, Field: "version", Message: "version is not given at creation: a preset starts at version 1"}
	}
	saved, err := uc.Create(req.Context(), caller(req), p)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/presets/"+url.PathEscape(saved.Name))
	return writePreset(w, http.StatusCreated, saved)
}

func (a *api) listPresets(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.presets()
	if err != nil {
		return err
	}
	list, err := uc.List(req.Context(), caller(req))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, list)
}

func (a *api) getPreset(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.presets()
	if err != nil {
		return err
	}
	p, err := uc.Get(req.Context(), caller(req), req.Param("name"))
	if err != nil {
		return err
	}
	return writePreset(w, http.StatusOK, p)
}

// updatePreset replaces a preset at the version If-Match or the body's version names.
func (a *api) updatePreset(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.presets()
	if err != nil {
		return err
	}
	pr, p, err := a.decodePreset(w, req)
	if err != nil {
		return err
	}
	versions, err := presetVersions(req.Header.Get("If-Match"), pr.Version)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		version := versions.only
		if version == 0 { // * or a list: the version there now, if it is one of them
			current, err := uc.Get(req.Context(), caller(req), req.Param("name"))
			if err != nil {
				return err
			}
			version = versions.pick(current.Version)
		}
		saved, err := uc.Update(req.Context(), caller(req), req.Param("name"), version, p)
		// * matches whatever version exists: one that changed since the read is read again.
		if versions.any && problem.CodeOf(err) == problem.CodeConflict && try < 4 {
			continue
		}
		if err != nil {
			return err
		}
		return writePreset(w, http.StatusOK, saved)
	}
}

// ifMatchVersions are the versions an update may replace: one, several (an If-Match list), or
// any (If-Match: *).
type ifMatchVersions struct {
	only int   // the one version named; 0 when any or a list
	list []int // the versions of a list
	any  bool
}

// pick is the version to update when the preset is at current: current when it matches,
// otherwise the first named, whose update is then refused as stale.
func (v ifMatchVersions) pick(current int) int {
	if v.any || slices.Contains(v.list, current) {
		return current
	}
	return v.list[0]
}

// presetVersions reads the versions an update replaces: If-Match ("3" or 3, a list of them, or
// * for any) or the body's. If-Match compares strongly (RFC 9110 §13.1.1): a weak ETag (W/"3")
// never matches, so a header of weak ETags alone is 412.
func presetVersions(ifMatch string, body *int) (ifMatchVersions, error) {
	ifMatch = strings.TrimSpace(ifMatch)
	if body != nil && *body < 1 {
		return ifMatchVersions{}, &problem.Problem{Code: problem.CodeValidation, Field: "version",
			Message: problem.Messagef("version %d is not a preset's version (from 1)", *body)}
	}
	switch {
	case ifMatch == "" && body == nil:
		return ifMatchVersions{}, &problem.Problem{Code: problem.CodeValidation, Field: "version",
			Message: "version is required: send the version you read as If-Match or as version in the body, so that an update never overwrites one you have not seen"}
	case ifMatch == "", ifMatch == "*" && body != nil:
		return ifMatchVersions{only: *body}, nil
	case ifMatch == "*":
		return ifMatchVersions{any: true}, nil
	}
	var strong []int
	weak := false
	for _, tag := range strings.Split(ifMatch, ",") {
		tag = strings.TrimSpace(tag)
		switch {
		case tag == "":
			continue // an empty element of a list is none (RFC 9110 §5.6.1.2)
		case strings.HasPrefix(tag, "W/"):
			weak = true // never matches
			continue
		}
		v, err := strconv.Atoi(strings.Trim(tag, `"`))
		if err != nil || v < 1 {
			return ifMatchVersions{}, &problem.Problem{Code: problem.CodeValidation, Field: "If-Match", Message: problem.Messagef("If-Match %q is not a preset's version (a number from its ETag)", tag)}
		}
		strong = append(strong, v)
	}
	switch {
	case len(strong) == 0 && !weak:
		return ifMatchVersions{}, &problem.Problem{Code: problem.CodeValidation, Field: "If-Match", Message: problem.Messagef("If-Match %q names no version", ifMatch)}
	case len(strong) == 0:
		return ifMatchVersions{}, protocolError(http.StatusPreconditionFailed, "If-Match %q holds only weak ETags, which never match (If-Match compares strongly); send the ETag as read, without W/", ifMatch)
	case body != nil && !slices.Contains(strong, *body):
		return ifMatchVersions{}, &problem.Problem{Code: problem.CodeValidation, Field: "version", Message: "If-Match and version name different versions; give one"}
	case body != nil:
		return ifMatchVersions{only: *body}, nil
	case len(strong) == 1:
		return ifMatchVersions{only: strong[0]}, nil
	}
	return ifMatchVersions{list: strong}, nil
}

func (a *api) deletePreset(w http.ResponseWriter, req bunrouter.Request) error {
	uc, err := a.presets()
	if err != nil {
		return err
	}
	if err := uc.Delete(req.Context(), caller(req), req.Param("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// spriteIndex answers the WebVTT index of a thumbnail-sprite job's sprite.jpg from the values it
// was made with (the job's params.preset.variables; absent ones take the preset's defaults).
func (a *api) spriteIndex(w http.ResponseWriter, req bunrouter.Request) error {
	given := map[string]json.RawMessage{}
	for k, vs := range req.URL.Query() {
		if len(vs) != 1 {
			return &problem.Problem{Code: problem.CodeValidation, Field: k, Message: "query parameter " + problem.Shorten(k) + " is given more than once"}
		}
		given[k] = json.RawMessage(vs[0])
	}
	vtt, err := service.SpriteIndex(given)
	var p *problem.Problem
	if errors.As(err, &p) {
		// The values come from the query here, not from a job's params.variables.
		return &problem.Problem{Code: p.Code, Field: strings.TrimPrefix(p.Field, "params.variables."),
			Message: strings.ReplaceAll(p.Message, "params.variables.", "query parameter ")}
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/vtt; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(vtt))
	return nil
}
