package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
)

// PresetsPorts are what presets need.
type PresetsPorts struct {
	Presets preset.Store
	Clock   clock.Clock
	// Env is the validator's environment, the submit gate's: a preset is validated as a job is.
	Env jobtype.Env
}

// Presets is /presets: an account's presets beside the built-ins, and their resolution when a
// job names one.
type Presets struct {
	store preset.Store
	clock clock.Clock
	env   jobtype.Env
}

// NewPresets returns the Presets use case.
func NewPresets(p PresetsPorts) (*Presets, error) {
	if err := need("Presets", port{"a preset store", p.Presets}, port{"a clock", p.Clock}); err != nil {
		return nil, err
	}
	return &Presets{store: p.Presets, clock: p.Clock, env: p.Env}, nil
}

// List returns the built-ins, then the account's own presets, each by name.
func (s *Presets) List(ctx context.Context, a account.Account) ([]*preset.Preset, error) {
	own, err := s.store.ListPresets(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	return append(preset.Builtins(), own...), nil
}

// Get returns the account's preset name, or the built-in of that name.
func (s *Presets) Get(ctx context.Context, a account.Account, name string) (*preset.Preset, error) {
	if b := preset.Builtin(name); b != nil {
		return b, nil
	}
	p, err := s.store.GetPreset(ctx, a.ID, name)
	if errors.Is(err, problem.ErrNotFound) {
		return nil, problem.Reject(problem.CodeNotFound, "preset %q not found", name)
	}
	return p, err
}

// readOnly refuses writing a built-in's name.
func readOnly(name string) error {
	if preset.Builtin(name) != nil {
		return problem.Reject(problem.CodeForbidden, "preset %s is built in and read-only: save a copy under a name of your own", name)
	}
	return nil
}

// Create checks a preset (the placement rules, then the validator with sample values) and saves
// it at version 1. A name the account has, or a built-in's, is CONFLICT.
func (s *Presets) Create(ctx context.Context, a account.Account, p *preset.Preset) (*preset.Preset, error) {
	if preset.Builtin(p.Name) != nil {
		return nil, problem.Reject(problem.CodeConflict, "preset %s is a built-in's name: choose another", p.Name)
	}
	if _, err := preset.Check(p, s.env); err != nil {
		return nil, err
	}
	p.AccountID, p.Builtin = a.ID, false
	p.CreatedAt = s.clock.Now().UTC()
	p.UpdatedAt = p.CreatedAt
	if err := s.store.CreatePreset(ctx, p); err != nil {
		if errors.Is(err, problem.ErrConflict) {
			return nil, problem.Reject(problem.CodeConflict, "preset %s exists: update it with PUT /presets/%s and its version", p.Name, p.Name)
		}
		return nil, err
	}
	return p, nil
}

// Update replaces the account's preset name if it is at version, and bumps its version. A
// stale version is CONFLICT and changes nothing.
func (s *Presets) Update(ctx context.Context, a account.Account, name string, version int, p *preset.Preset) (*preset.Preset, error) {
	if err := readOnly(name); err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = name
	}
	if p.Name != name {
		return nil, &problem.Problem{Code: problem.CodeValidation, Field: "name", Message: problem.Messagef("name %q differs from the preset's %q: a preset is not renamed", p.Name, name)}
	}
	if _, err := preset.Check(p, s.env); err != nil {
		return nil, err
	}
	p.AccountID, p.Builtin, p.UpdatedAt = a.ID, false, s.clock.Now().UTC()
	err := s.store.UpdatePreset(ctx, p, version)
	switch {
	case errors.Is(err, problem.ErrNotFound):
		return nil, problem.Reject(problem.CodeNotFound, "preset %q not found", name)
	case errors.Is(err, problem.ErrConflict):
		cur, _ := s.store.GetPreset(ctx, a.ID, name)
		now := 0
		if cur != nil {
			now = cur.Version
		}
		return nil, problem.Reject(problem.CodeConflict, "preset %s is at version %d, not %d: read it again and apply your change to it", name, now, version)
	}
	return p, err
}

// Delete removes the account's preset name. Jobs made from it keep their concrete commands.
func (s *Presets) Delete(ctx context.Context, a account.Account, name string) error {
	if err := readOnly(name); err != nil {
		return err
	}
	err := s.store.DeletePreset(ctx, a.ID, name)
	if errors.Is(err, problem.ErrNotFound) {
		return problem.Reject(problem.CodeNotFound, "preset %q not found", name)
	}
	return err
}

// presetParams are the fields of an ffmpeg job's params that name a preset.
type presetParams struct {
	Preset    json.RawMessage            `json:"preset"`
	Variables map[string]json.RawMessage `json:"variables"`
}

// Resolve rewrites an ffmpeg request that names a preset (params.preset, params.variables) into
// the concrete request the job stores and a runner runs: params.command or params.steps (and
// keep) substituted with the checked values, and params.preset the record {name, version,
// variables} of what it was made from. A request without params.preset is returned as it is.
// The concrete command then passes the submit gate's validation like any other. A nil Presets
// refuses a request that names a preset.
func (s *Presets) Resolve(ctx context.Context, a account.Account, req jobtype.Request) (jobtype.Request, error) {
	// A request without the word is without the key, unless an escape spells it
	// ("pres\u0065t"); any other spelling ("PRESET") is refused when params are decoded.
	if req.Type != ffmpegjob.Name || (!bytes.Contains(req.Params, []byte("preset")) && !bytes.Contains(req.Params, []byte(`\`))) {
		return req, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &fields); err != nil {
		return req, nil // the type's own parsing says what is wrong with params
	}
	raw, ok := fields["preset"]
	if !ok {
		return req, nil
	}
	var name string
	if s == nil {
		return req, &problem.Problem{Code: problem.CodeValidation, Field: "params.preset", Message: "params.preset: this service keeps no presets"}
	}
	if err := json.Unmarshal(raw, &name); err != nil {
		return req, &problem.Problem{Code: problem.CodeValidation, Field: "params.preset", Message: "params.preset must be a preset's name (a string)"}
	}
	for _, f := range []string{"command", "steps", "keep"} {
		if _, ok := fields[f]; ok {
			return req, &problem.Problem{Code: problem.CodeValidation, Field: "params." + f,
				Message: problem.Messagef("params.%s and params.preset are both given: the preset is the command; give one", f)}
		}
	}
	var pp presetParams
	if v, ok := fields["variables"]; ok {
		if err := json.Unmarshal(v, &pp.Variables); err != nil || pp.Variables == nil {
			return req, &problem.Problem{Code: problem.CodeValidation, Field: "params.variables", Message: "params.variables must be an object of the preset's variables"}
		}
	}
	p, err := s.Get(ctx, a, name)
	if problem.CodeOf(err) == problem.CodeNotFound {
		return req, &problem.Problem{Code: problem.CodeValidation, Field: "params.preset",
			Message: problem.Messagef("params.preset %q is neither a preset of this account nor a built-in (GET /presets lists them)", name)}
	}
	if err != nil {
		return req, err
	}
	c, err := preset.Parse(p)
	if err != nil {
		return req, fmt.Errorf("stored preset %s: %w", name, err)
	}
	commands, values, err := c.Substitute(pp.Variables)
	if err != nil {
		return req, err
	}
	delete(fields, "variables")
	if p.Command != "" {
		fields["command"], _ = json.Marshal(commands[0])
	} else {
		fields["steps"], _ = json.Marshal(commands)
		if p.Keep != nil {
			fields["keep"], _ = json.Marshal(p.Keep)
		}
	}
	fields["preset"], _ = json.Marshal(preset.Ref{Name: p.Name, Version: p.Version, Variables: values})
	req.Params, err = json.Marshal(fields)
	return req, err
}

// SpriteIndex is the WebVTT index of the sprite.jpg the thumbnail-sprite built-in makes with
// the given values (absent ones take their defaults): FFmpeg cannot write it, and it depends on
// the values alone.
func SpriteIndex(given map[string]json.RawMessage) (string, error) {
	c, err := preset.Parse(preset.Builtin("thumbnail-sprite"))
	if err != nil {
		return "", err
	}
	_, used, err := c.Substitute(given)
	if err != nil {
		return "", err
	}
	n := map[string]int{}
	for name, raw := range used {
		// The values are integers, but may be spelt 1e1 or 10.0 (preset.Variable takes them).
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || v != math.Trunc(v) {
			return "", &problem.Problem{Code: problem.CodeValidation, Field: "params.variables." + name,
				Message: problem.Messagef("params.variables.%s %q is not an integer", name, string(raw))}
		}
		n[name] = int(v)
	}
	return preset.SpriteIndex("sprite.jpg", n["interval"], n["width"], n["height"], n["columns"], n["rows"]), nil
}
