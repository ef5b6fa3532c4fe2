package service_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

func presetReq(params string) jobtype.Request {
	return jobtype.Request{Type: "ffmpeg", Inputs: json.RawMessage(`{"in.mp4":"https://media.example/a.mp4"}`), Params: json.RawMessage(params)}
}

func wantProblem(t *testing.T, err error, code problem.Code, says string) {
	t.Helper()
	if problem.CodeOf(err) != code || !strings.Contains(err.Error(), says) {
		t.Fatalf("error %v (%s): want %s saying %q", err, problem.CodeOf(err), code, says)
	}
}

// TestSubmitWithPreset: a job naming a preset is stored with the concrete command and the
// record of the preset; bad variables are refused by name and store nothing.
func TestSubmitWithPreset(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanPro, 100_000)
	j, err := h.submit.Submit(h.ctx, a, presetReq(`{"preset":"web-mp4","variables":{"height":480},"timeout":60}`))
	if err != nil {
		t.Fatal(err)
	}
	var params struct {
		Command string     `json:"command"`
		Timeout int        `json:"timeout"`
		Preset  preset.Ref `json:"preset"`
	}
	if err := json.Unmarshal(j.Params, &params); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(params.Command, "scale=-2:480,format=yuv420p") || params.Timeout != 60 {
		t.Errorf("stored params %s", j.Params)
	}
	if params.Preset.Name != "web-mp4" || params.Preset.Version != 1 || string(params.Preset.Variables["height"]) != "480" || string(params.Preset.Variables["crf"]) != "23" {
		t.Errorf("preset record %+v", params.Preset)
	}

	for _, tc := range []struct{ name, params, field string }{
		{"unknown variable", `{"preset":"web-mp4","variables":{"width":480}}`, "params.variables.width"},
		{"out of range", `{"preset":"web-mp4","variables":{"height":100000}}`, "params.variables.height"},
		{"wrong type", `{"preset":"web-mp4","variables":{"height":"480"}}`, "params.variables.height"},
		{"not in the enum", `{"preset":"web-mp4","variables":{"speed":"placebo"}}`, "params.variables.speed"},
		{"unknown preset", `{"preset":"nope"}`, "params.preset"},
		{"a preset record", `{"preset":{"name":"web-mp4","version":1}}`, "params.preset"},
		{"preset and command", `{"preset":"web-mp4","command":"ffmpeg -i in.mp4 out.mp4"}`, "params.command"},
		{"variables not an object", `{"preset":"web-mp4","variables":[1]}`, "params.variables"},
		{"a preset record behind an escape", `{"command":"ffmpeg -i in.mp4 out.mp4","pres\u0065t":{"name":"web-mp4","version":1}}`, "params.preset"},
	} {
		_, err := h.submit.Submit(h.ctx, a, presetReq(tc.params))
		var p *problem.Problem
		if !errors.As(err, &p) || p.Code != problem.CodeValidation || p.Field != tc.field {
			t.Errorf("%s: %v, want a VALIDATION_ERROR on %s", tc.name, err, tc.field)
		}
	}
	// Keys encoding/json would take for a field they are not spelt as: a decoy beside the
	// field (the stored params would show one command and run another) or alone (a preset
	// record no reader of the stored params would see as one).
	for _, tc := range []struct{ name, params, says string }{
		{"steps folded", `{"steps":["ffmpeg -i in.mp4 a.mp4"],"\u017fteps":["ffmpeg -i in.mp4 b.mp4"]}`, `duplicate key "params.ſteps"`},
		{"a preset and folded steps", `{"preset":"loudness-r128","\u017fteps":["ffmpeg -i in.mp4 b.mp4"]}`, "ſteps"},
		{"PRESET", `{"command":"ffmpeg -i in.mp4 out.mp4","PRESET":"../../evil"}`, `write "preset"`},
		{"Command beside a preset", `{"preset":"web-mp4","Command":"ffmpeg -i in.mp4 out.mp4"}`, "Command"},
	} {
		_, err := h.submit.Submit(h.ctx, a, presetReq(tc.params))
		if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want a VALIDATION_ERROR saying %s", tc.name, err, tc.says)
		}
	}
	// The sprite's index takes the integers a job may spell 1e1 or 10.0.
	vtt, err := service.SpriteIndex(map[string]json.RawMessage{"interval": json.RawMessage("1e1"), "width": json.RawMessage("160.0")})
	if err != nil || !strings.Contains(vtt, "WEBVTT") {
		t.Errorf("SpriteIndex of 1e1 and 160.0: %v", err)
	}
	if _, err := service.SpriteIndex(map[string]json.RawMessage{"interval": json.RawMessage("1.5")}); problem.CodeOf(err) != problem.CodeValidation {
		t.Errorf("SpriteIndex of 1.5: %v, want a VALIDATION_ERROR", err)
	}
	// A long value is quoted shortened, as every message quotes what a client sent.
	long := "1.5" + strings.Repeat("0", 5000)
	_, err = service.SpriteIndex(map[string]json.RawMessage{"interval": json.RawMessage(long)})
	if p := (*problem.Problem)(nil); !errors.As(err, &p) || p.Code != problem.CodeValidation || len(p.Message) > 400 {
		t.Errorf("SpriteIndex of a 5,000-digit number: %v, want a short VALIDATION_ERROR", err)
	}
}

// TestPresetsLifecycle: an account's preset is saved, listed beside the built-ins, updated with
// its version, used in a batch, and deleted; built-ins are read-only.
func TestPresetsLifecycle(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a, other := h.open(t, account.PlanPro, 100_000), h.open(t, account.PlanPro, 100_000)
	lo, hi := 16.0, 40.0
	p := &preset.Preset{Name: "mine", Command: "ffmpeg -i in.mp4 -c:v libx264 -crf {{crf}} out.mp4",
		Variables: map[string]preset.Variable{"crf": {Type: preset.Integer, Min: &lo, Max: &hi}}}
	saved, err := h.Presets.Create(h.ctx, a, p)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Version != 1 || strings.Join(saved.Inputs, ",") != "in.mp4" {
		t.Errorf("saved %+v", saved)
	}
	_, err = h.Presets.Create(h.ctx, a, p)
	wantProblem(t, err, problem.CodeConflict, "exists")
	_, err = h.Presets.Create(h.ctx, a, &preset.Preset{Name: "web-mp4", Command: "ffmpeg -i in.mp4 out.mp4"})
	wantProblem(t, err, problem.CodeConflict, "built-in")
	_, err = h.Presets.Create(h.ctx, a, &preset.Preset{Name: "bad", Command: "ffmpeg -i in.mp4 -{{x}} 1 out.mp4",
		Variables: map[string]preset.Variable{"x": {Type: preset.String}}})
	wantProblem(t, err, problem.CodeValidation, "{{x}}")

	list, err := h.Presets.List(h.ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(preset.Builtins()); len(list) != n+1 || list[n].Name != "mine" || !list[0].Builtin || list[n].Builtin {
		t.Errorf("list of %d", len(list))
	}
	if _, err := h.Presets.Get(h.ctx, other, "mine"); problem.CodeOf(err) != problem.CodeNotFound {
		t.Errorf("another account's Get: %v", err)
	}

	p2 := *p
	p2.Command = "ffmpeg -i in.mp4 -c:v libx264 -preset fast -crf {{crf}} out.mp4"
	updated, err := h.Presets.Update(h.ctx, a, "mine", 1, &p2)
	if err != nil || updated.Version != 2 {
		t.Fatalf("update: %v %+v", err, updated)
	}
	_, err = h.Presets.Update(h.ctx, a, "mine", 1, &p2)
	wantProblem(t, err, problem.CodeConflict, "at version 2, not 1")
	_, err = h.Presets.Update(h.ctx, a, "web-mp4", 1, &p2)
	wantProblem(t, err, problem.CodeForbidden, "read-only")
	wantProblem(t, h.Presets.Delete(h.ctx, a, "web-mp4"), problem.CodeForbidden, "read-only")

	_, _, err = h.batches.Submit(h.ctx, a, []jobtype.Request{presetReq(`{"preset":"mine","variables":{"crf":20}}`), presetReq(`{"preset":"mine"}`)})
	var prob *problem.Problem
	if !errors.As(err, &prob) || !strings.Contains(err.Error(), "jobs[1]") || !strings.Contains(err.Error(), "params.variables.crf") {
		t.Errorf("batch with a missing variable: %v", err)
	}
	_, jobs, err := h.batches.Submit(h.ctx, a, []jobtype.Request{presetReq(`{"preset":"mine","variables":{"crf":20}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(jobs[0].Params), `-preset fast -crf 20`) || !strings.Contains(string(jobs[0].Params), `"version":2`) {
		t.Errorf("batch job params %s", jobs[0].Params)
	}

	if err := h.Presets.Delete(h.ctx, a, "mine"); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, h.Presets.Delete(h.ctx, a, "mine"), problem.CodeNotFound, "not found")
}
