package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/mcpserver"
	"github.com/mediajobs/mediajobs/core/problem"
)

// TestPresetToolsAnswerAsREST: list_presets, get_preset and save_preset answer what GET /presets,
// GET /presets/{name} and POST or PUT /presets do, and submit_job's preset and variables make the
// job POST /jobs makes with params.preset, refusals included.
func TestPresetToolsAnswerAsREST(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs := mustConnect(t, b.url, b.key, "")
	ctx := context.Background()

	small := map[string]any{"name": "small", "command": "ffmpeg -i in.mp4 -vf scale=-2:{{height}} -crf {{crf}} out.mp4",
		"variables": map[string]any{
			"height": map[string]any{"type": "integer", "default": 144, "min": 72, "max": 720},
			"crf":    map[string]any{"type": "integer", "min": 18, "max": 40, "description": "quality"},
		}}
	var saved map[string]any
	mustSucceed(t, cs, "save_preset", small, &saved)
	rest, err := b.h.Presets.Get(ctx, b.acct, "small")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asJSON(t, rest), saved); diff != "" {
		t.Errorf("save_preset is not POST /presets' data (-rest +mcp):\n%s", diff)
	}
	var got map[string]any
	mustSucceed(t, cs, "get_preset", map[string]any{"name": "web-mp4"}, &got)
	builtin, err := b.h.Presets.Get(ctx, b.acct, "web-mp4")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asJSON(t, builtin), got); diff != "" {
		t.Errorf("get_preset is not GET /presets/{name}'s data (-rest +mcp):\n%s", diff)
	}
	var list struct {
		Data []map[string]any `json:"data"`
	}
	mustSucceed(t, cs, "list_presets", map[string]any{}, &list)
	all, err := b.h.Presets.List(ctx, b.acct)
	if err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	for _, p := range all {
		want = append(want, asJSON(t, p))
	}
	if diff := cmp.Diff(want, list.Data); diff != "" {
		t.Errorf("list_presets is not GET /presets' data (-rest +mcp):\n%s", diff)
	}

	small["command"] = "ffmpeg -i in.mp4 -vf scale=-2:{{height}} -tune fastdecode -crf {{crf}} out.mp4"
	small["version"] = 1
	mustSucceed(t, cs, "save_preset", small, &saved)
	if saved["version"] != 2.0 {
		t.Errorf("save_preset with version 1 answered version %v, want 2", saved["version"])
	}

	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		code       problem.Code
		contains   string
	}{
		{"stale version", "save_preset", small, problem.CodeConflict, "version 2, not 1"},
		{"built-in", "save_preset", map[string]any{"name": "web-mp4", "command": "ffmpeg -i in.mp4 out.mp4", "version": 1}, problem.CodeForbidden, "read-only"},
		{"placeholder as a flag", "save_preset", map[string]any{"name": "bad", "command": "ffmpeg -i in.mp4 -{{c}} 1 out.mp4",
			"variables": map[string]any{"c": map[string]any{"type": "integer", "min": 1, "max": 2}}}, problem.CodeValidation, "{{c}}"},
		{"no preset", "get_preset", map[string]any{"name": "nope"}, problem.CodeNotFound, "nope"},
		{"value as a flag", "submit_job", map[string]any{"type": "ffmpeg", "preset": "web-mp4", "inputs": map[string]any{"in.mp4": "https://example.com/a.mp4"},
			"variables": map[string]any{"speed": "-i /etc/passwd"}}, problem.CodeValidation, "params.variables.speed"},
		{"value out of range", "submit_job", map[string]any{"type": "ffmpeg", "preset": "small", "inputs": map[string]any{"in.mp4": "https://example.com/a.mp4"},
			"variables": map[string]any{"crf": 99}}, problem.CodeValidation, "params.variables.crf"},
		{"preset twice", "submit_job", map[string]any{"type": "ffmpeg", "preset": "small", "params": map[string]any{"preset": "small"}}, problem.CodeValidation, "params.preset"},
		{"variables alone", "submit_job", map[string]any{"type": "ffmpeg", "variables": map[string]any{"crf": 20}}, problem.CodeValidation, "variables"},
	} {
		te := toolError(t, cs, tt.tool, tt.args)
		if te.Code != tt.code || !strings.Contains(te.Message, tt.contains) {
			t.Errorf("%s: %s %q, want %s containing %q", tt.name, te.Code, te.Message, tt.code, tt.contains)
		}
	}

	var sub mcpserver.SubmittedJob
	mustSucceed(t, cs, "submit_job", map[string]any{"type": "ffmpeg", "preset": "small", "inputs": map[string]any{"in.mp4": "https://example.com/a.mp4"},
		"variables": map[string]any{"crf": 30}}, &sub)
	j, err := b.h.Jobs.Get(ctx, b.acct, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	params := string(j.Params)
	if j.Type != "ffmpeg" || !strings.Contains(params, `"preset":{"name":"small","version":2,"variables":{"crf":30,"height":144}}`) ||
		!strings.Contains(params, "scale=-2:144") || !strings.Contains(params, "-crf 30") {
		t.Errorf("job from submit_job's preset: %s %s", j.Type, params)
	}
}
