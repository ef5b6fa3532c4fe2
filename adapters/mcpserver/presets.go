package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

const listPresetsDescription = `List the presets this account may name in submit_job, as GET /presets does: the built-ins (web-mp4, hls-ladder, thumbnail-sprite, loudness-r128, gif-preview; read-only) then the account's own, each with its command or steps, its typed variables (type, default, min/max, values) and inputs, the input names a job gives (in.mp4 for every built-in).`

const getPresetDescription = `Read one preset by name, as GET /presets/{name} does: its template, typed variables, inputs and version.`

const savePresetDescription = `Save one of this account's presets, as POST /presets (without version) or PUT /presets/{name} (with version, the version you read; a stale one is CONFLICT and changes nothing) do. A preset is an FFmpeg command (or steps) with {{name}} placeholders, each declared in variables with its type: integer or number (min and max required), enum (values), string. A placeholder stands alone as a flag's value or a filter option's value (-crf {{crf}}, scale=-2:{{height}}), never as a flag, a file name or filter syntax; a refusal names the field. The template is validated with sample values of every variable. Built-ins are read-only.`

// ListPresetsInput is the request of list_presets: GET /presets takes nothing.
type ListPresetsInput struct{}

// GetPresetInput is the request of get_preset.
type GetPresetInput struct {
	Name string `json:"name" jsonschema:"the preset's name, e.g. web-mp4"`
}

// PresetVariable is a preset's typed variable, as POST /presets takes it.
type PresetVariable struct {
	Type        string   `json:"type" jsonschema:"integer, number, enum or string"`
	Description string   `json:"description,omitempty"`
	Default     any      `json:"default,omitempty" jsonschema:"a value of the type, used when a job gives none; without it a job must give the variable"`
	Min         *float64 `json:"min,omitempty" jsonschema:"an integer's or number's least value (required for them)"`
	Max         *float64 `json:"max,omitempty" jsonschema:"an integer's or number's greatest value (required for them)"`
	Values      []string `json:"values,omitempty" jsonschema:"an enum's choices"`
	MaxLength   int      `json:"maxLength,omitempty" jsonschema:"a string's longest length, up to 256"`
}

// SavePresetInput is the request of save_preset: the body of POST /presets, or of
// PUT /presets/{name} when version is given.
type SavePresetInput struct {
	Name        string                    `json:"name" jsonschema:"1 to 64 of a-z, 0-9, '.', '_', '-'"`
	Description string                    `json:"description,omitempty"`
	Command     string                    `json:"command,omitempty" jsonschema:"an FFmpeg command with {{name}} placeholders; give this or steps"`
	Steps       []string                  `json:"steps,omitempty" jsonschema:"1 to 10 FFmpeg commands run in order, in place of command"`
	Keep        []string                  `json:"keep,omitempty" jsonschema:"outputs of earlier steps kept, with steps"`
	Variables   map[string]PresetVariable `json:"variables,omitempty" jsonschema:"the placeholders' declarations by name"`
	Version     int                       `json:"version,omitempty" jsonschema:"absent: create the preset (version 1); given: replace the preset at this version, the one you read"`
}

// Preset is a preset as GET /presets/{name} answers it.
type Preset struct {
	Name        string                    `json:"name"`
	Description string                    `json:"description,omitempty"`
	Command     string                    `json:"command,omitempty"`
	Steps       []string                  `json:"steps,omitempty"`
	Keep        []string                  `json:"keep,omitempty"`
	Variables   map[string]PresetVariable `json:"variables"`
	Inputs      []string                  `json:"inputs" jsonschema:"the input names a job using the preset gives in inputs"`
	Version     int                       `json:"version"`
	Builtin     bool                      `json:"builtin"`
	CreatedAt   string                    `json:"createdAt"`
	UpdatedAt   string                    `json:"updatedAt"`
}

// PresetList is the answer of list_presets.
type PresetList struct {
	Data []Preset `json:"data"`
}

// recast converts between the tool's types and the domain's through their JSON, which is the
// same: the tools take and answer what REST does.
func recast[T any](from any) (T, error) {
	var to T
	b, err := json.Marshal(from)
	if err == nil {
		err = json.Unmarshal(b, &to)
	}
	return to, err
}

func (h *Handler) addPresetTools() {
	add(h, &mcp.Tool{Name: "list_presets", Title: "List presets", Description: listPresetsDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.listPresets)
	add(h, &mcp.Tool{Name: "get_preset", Title: "Get a preset", Description: getPresetDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.getPreset)
	add(h, &mcp.Tool{Name: "save_preset", Title: "Save a preset", Description: savePresetDescription,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, h.savePreset)
}

// presets is the use case, or the refusal of a server that keeps no presets (as REST answers).
func (h *Handler) presets() (*service.Presets, error) {
	if h.uc.Presets == nil {
		return nil, problem.Reject(problem.CodeNotFound, "this server keeps no presets")
	}
	return h.uc.Presets, nil
}

func (h *Handler) listPresets(ctx context.Context, a account.Account, _ ListPresetsInput) (PresetList, string, error) {
	uc, err := h.presets()
	if err != nil {
		return PresetList{}, "", err
	}
	list, err := uc.List(ctx, a)
	if err != nil {
		return PresetList{}, "", err
	}
	out, err := recast[[]Preset](list)
	if err != nil {
		return PresetList{}, "", err
	}
	names := make([]string, len(out))
	for i, p := range out {
		names[i] = p.Name
	}
	return PresetList{Data: out}, fmt.Sprintf("%d presets: %s. Name one in submit_job's preset, with its variables.", len(out), strings.Join(names, ", ")), nil
}

func (h *Handler) getPreset(ctx context.Context, a account.Account, in GetPresetInput) (Preset, string, error) {
	if in.Name == "" {
		return Preset{}, "", &problem.Problem{Code: problem.CodeValidation, Field: "name", Message: "name is required"}
	}
	uc, err := h.presets()
	if err != nil {
		return Preset{}, "", err
	}
	p, err := uc.Get(ctx, a, in.Name)
	if err != nil {
		return Preset{}, "", err
	}
	return answerPreset(p)
}

func (h *Handler) savePreset(ctx context.Context, a account.Account, in SavePresetInput) (Preset, string, error) {
	uc, err := h.presets()
	if err != nil {
		return Preset{}, "", err
	}
	vars, err := recast[map[string]preset.Variable](in.Variables)
	if err != nil {
		return Preset{}, "", &problem.Problem{Code: problem.CodeValidation, Field: "variables", Message: "variables: " + err.Error()}
	}
	p := &preset.Preset{Name: in.Name, Description: in.Description, Command: in.Command, Steps: in.Steps, Keep: in.Keep, Variables: vars}
	if in.Version == 0 {
		p, err = uc.Create(ctx, a, p)
	} else {
		p, err = uc.Update(ctx, a, in.Name, in.Version, p)
	}
	if err != nil {
		return Preset{}, "", err
	}
	return answerPreset(p)
}

func answerPreset(p *preset.Preset) (Preset, string, error) {
	out, err := recast[Preset](p)
	if err != nil {
		return Preset{}, "", err
	}
	return out, fmt.Sprintf("Preset %s is at version %d; a job names it with preset %q, inputs %s and its variables.",
		out.Name, out.Version, out.Name, strings.Join(out.Inputs, ", ")), nil
}

// withPreset moves submit_job's preset and variables into params, where POST /jobs takes them.
func (in SubmitJobInput) withPreset() (SubmitJobInput, error) {
	if in.Preset == "" {
		if in.Variables != nil {
			return in, &problem.Problem{Code: problem.CodeValidation, Field: "variables", Message: "variables are a preset's: give preset too"}
		}
		return in, nil
	}
	params := map[string]any{}
	for k, v := range in.Params {
		if k == "preset" || k == "variables" {
			return in, &problem.Problem{Code: problem.CodeValidation, Field: "params." + k,
				Message: problem.Messagef("params.%s and %s are both given: give the preset once", k, k)}
		}
		params[k] = v
	}
	params["preset"] = in.Preset
	if in.Variables != nil {
		params["variables"] = in.Variables
	}
	in.Params, in.Preset, in.Variables = params, "", nil
	return in, nil
}
