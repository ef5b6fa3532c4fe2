package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/contracts/client"
)

func testPreset() *client.Preset {
	return &client.Preset{Name: "two", Inputs: []string{"in.mp4", "logo.png"}, Variables: map[string]client.PresetVariable{
		"height": {Type: client.PresetVariableTypeInteger},
		"gain":   {Type: client.PresetVariableTypeNumber},
		"speed":  {Type: client.PresetVariableTypeEnum},
		"title":  {Type: client.PresetVariableTypeString},
	}}
}

// TestPresetInputs: run --preset maps its arguments onto the preset's inputs in order, after
// those --input names, and refuses a count that does not fit.
func TestPresetInputs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		given inputFlags
		args  []string
		want  string // name=value,... or the error's text
	}{
		{"in order", nil, []string{"clip.mp4", "logo.png"}, "in.mp4=clip.mp4,logo.png=logo.png"},
		{"one by name", inputFlags{{"logo.png", "brand.png"}}, []string{"clip.mp4"}, "logo.png=brand.png,in.mp4=clip.mp4"},
		{"too few", nil, []string{"clip.mp4"}, "give 2 file(s) or URL(s) for in.mp4, logo.png in that order"},
		{"too many", inputFlags{{"logo.png", "b.png"}}, []string{"a.mp4", "c.mp4"}, "give 1 file(s) or URL(s) for in.mp4"},
		{"unknown name", inputFlags{{"subs.srt", "s.srt"}}, nil, "preset two reads no input subs.srt"},
	} {
		got, err := presetInputs(testPreset(), tt.given, tt.args)
		var parts []string
		for _, in := range got {
			parts = append(parts, in.name+"="+in.value)
		}
		text := strings.Join(parts, ",")
		if err != nil {
			text = err.Error()
		}
		if !strings.Contains(text, tt.want) || (err == nil) != (len(parts) > 0) {
			t.Errorf("%s: %q, want %q", tt.name, text, tt.want)
		}
	}
}

// TestPresetVariables: -v values are typed as the preset declares them, and a value that is
// not of its type, or a name the preset lacks, is refused naming it.
func TestPresetVariables(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		vars varFlags
		want string // the JSON of the values, or the error's text
	}{
		{"typed", varFlags{{"height", "480"}, {"gain", "-1.5"}, {"speed", "fast"}, {"title", "a b"}}, `{"gain":-1.5,"height":480,"speed":"fast","title":"a b"}`},
		{"flag as integer", varFlags{{"height", "-i"}}, "-v height=-i: height is an integer"},
		{"word as number", varFlags{{"gain", "loud"}}, "-v gain=loud: gain is a number"},
		{"unknown", varFlags{{"width", "1"}}, "-v width: preset two has no variable width (it has: gain, height, speed, title)"},
	} {
		got, err := presetVariables(testPreset(), tt.vars)
		b, _ := json.Marshal(got)
		text := string(b)
		if err != nil {
			text = err.Error()
		}
		if text != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, text, tt.want)
		}
	}
}

// TestPresetUsage: mistakes of presets and run --preset are refused before anything is sent.
func TestPresetUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		run  func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) int
		args []string
		want string
	}{
		{"variable without preset", runRunBuf, []string{"--key", "mj_x", "-v", "height=480", "ffmpeg -i a b"}, "variables are a preset's; give --preset"},
		{"variable without value", runRunBuf, []string{"--key", "mj_x", "--preset", "web-mp4", "-v", "height", "a.mp4"}, `"height": want NAME=VALUE`},
		{"variable twice", runRunBuf, []string{"--key", "mj_x", "--preset", "web-mp4", "-v", "crf=1", "-v", "crf=2", "a.mp4"}, "variable crf is given twice"},
		{"no subcommand", runPresetsBuf, nil, "usage: mediajobs presets"},
		{"unknown subcommand", runPresetsBuf, []string{"rename"}, `unknown subcommand "rename"`},
		{"get without name", runPresetsBuf, []string{"get", "--key", "mj_x"}, "want 1 argument(s)"},
		{"negative version", runPresetsBuf, []string{"save", "--key", "mj_x", "--version", "-1", "p.json"}, "--version -1"},
		{"save not JSON", runPresetsBuf, []string{"save", "--key", "mj_x", "presets_test.go"}, "is not JSON"},
	} {
		var stdout, stderr bytes.Buffer
		if code := tt.run(context.Background(), tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tt.name, code, stderr.String(), tt.want)
		}
	}
}

func runRunBuf(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) int {
	return runRun(ctx, args, stdout, stderr)
}

func runPresetsBuf(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) int {
	return runPresets(ctx, args, stdout, stderr)
}
