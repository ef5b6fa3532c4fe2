package ffmpegjob_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
)

// TestPrepareSteps: params.steps is checked whole before anything runs, each refusal naming the
// step or the field.
func TestPrepareSteps(t *testing.T) {
	t.Parallel()
	steps := func(s ...string) string {
		b, _ := json.Marshal(s)
		return `{"steps":` + string(b) + `}`
	}
	const encode = "ffmpeg -f lavfi -i testsrc=d=2 -c:v libx264 a.mp4"
	tests := []prepareCase{
		{name: "transcode, thumbnail, package", params: steps(encode, "ffmpeg -i a.mp4 -frames:v 1 thumb.jpg", "ffmpeg -i a.mp4 -c copy -f hls index.m3u8"),
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternStream}},
		{name: "one step", params: steps(encode), want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "a later step reads an input and an earlier output", inputs: `{"logo.png":"https://example.com/l.png"}`,
			params: steps(encode, "ffmpeg -i a.mp4 -i logo.png -filter_complex overlay out.mp4"),
			want:   jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "an image sequence made by an earlier step", params: steps("ffmpeg -f lavfi -i testsrc=d=1 -r 5 f_%03d.png", "ffmpeg -framerate 5 -i f_%03d.png out.mp4"),
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "keep an earlier output", params: `{"steps":["` + encode + `","ffmpeg -i a.mp4 -frames:v 1 thumb.jpg"],"keep":["a.mp4"]}`,
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "a GPU step makes the job GPU", params: steps(encode, "ffmpeg -i a.mp4 -c:v h264_nvenc b.mp4"),
			want: jobtype.Spec{Class: job.ClassGPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "assets of every step", params: steps("ffmpeg -i "+prefix+"ast_b/content a.mp4", "ffmpeg -i a.mp4 -i "+prefix+"ast_a/content -filter_complex hstack b.mp4"),
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle, Assets: []string{"ast_a", "ast_b"}}},

		{name: "a second loudnorm pass takes the first's measurement", params: steps(
			"ffmpeg -f lavfi -i sine=d=3 -af loudnorm=print_format=json -f null -",
			"ffmpeg -f lavfi -i sine=d=3 -af loudnorm=I=-16:measured_I={{measured.input_i}}:measured_TP={{ measured.input_tp }}:measured_LRA={{measured.input_lra}}:measured_thresh={{measured.input_thresh}}:offset={{measured.target_offset}}:linear=true out.wav"),
			want: jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second, Pattern: job.PatternSingle}},
		{name: "a measured value with no step that measures", params: steps("ffmpeg -f lavfi -i sine=d=3 -af loudnorm=measured_I={{measured.input_i}} out.wav"),
			wantErr: "uses {{measured.input_i}}, which needs an earlier step that measures", wantField: "params.steps[0]"},
		{name: "a measured value measured later", params: steps(
			"ffmpeg -f lavfi -i sine=d=3 -af loudnorm=measured_I={{measured.input_i}} out.wav",
			"ffmpeg -f lavfi -i sine=d=3 -af loudnorm=print_format=json -f null -"),
			wantErr: "step 1 of 2: uses {{measured.input_i}}", wantField: "params.steps[0]"},
		{name: "an unknown measured value", params: steps(
			"ffmpeg -f lavfi -i sine=d=3 -af loudnorm=print_format=json -f null -",
			"ffmpeg -f lavfi -i sine=d=3 -af loudnorm=measured_I={{measured.password}} out.wav"),
			wantErr: "{{measured.password}} names no measured value", wantField: "params.steps[1]"},
		{name: "a measured value as a flag", params: steps(
			"ffmpeg -f lavfi -i sine=d=3 -af loudnorm=print_format=json -f null -",
			"ffmpeg -f lavfi -i sine=d=3 -{{measured.input_i}} out.wav"),
			wantErr: "step 2 of 2: ", wantField: "params.steps[1]"},
		{name: "command and steps", params: `{"command":"` + encode + `","steps":["` + encode + `"]}`, wantErr: "params has both command and steps"},
		{name: "no steps", params: `{"steps":[]}`, wantErr: "params.steps has 0 commands; give 1 to 10", wantField: "params.steps"},
		{name: "eleven steps", params: steps(strings.Split(strings.Repeat(encode+"|", 11), "|")[:11]...), wantErr: "params.steps has 11 commands", wantField: "params.steps"},
		{name: "a blank step", params: steps(encode, " "), wantErr: "params.steps[1] is empty", wantField: "params.steps[1]"},
		{name: "steps not strings", params: `{"steps":[1]}`, wantErr: "params.steps"},
		{name: "a step reads what nothing provides", params: steps(encode, "ffmpeg -i b.mp4 out.mp4"),
			wantErr: `step 2 of 2: the command reads input "b.mp4", which inputs does not provide: add each name to inputs, or write it in an earlier step`, wantField: "params.steps[1]"},
		{name: "a step reads what a later step writes", params: steps("ffmpeg -i a.mp4 out.mp4", encode),
			wantErr: `step 1 of 2: the command reads input "a.mp4"`, wantField: "params.steps[0]"},
		{name: "a step writes what an earlier step wrote", params: steps(encode, "ffmpeg -f lavfi -i testsrc=d=1 a.mp4"),
			wantErr: `step 2 of 2: "a.mp4" is written by step 1 already`, wantField: "params.steps[1]"},
		{name: "a step overwrites an input", inputs: `{"in.mp4":"https://example.com/a.mp4"}`, params: steps(encode, "ffmpeg -i a.mp4 in.mp4"),
			wantErr: `step 2 of 2: output "in.mp4" would overwrite input`, wantField: "params.steps[1]"},
		{name: "a disallowed flag in a later step", params: steps(encode, "ffmpeg -i a.mp4 -filter_script x b.mp4"),
			wantErr: "step 2 of 2: ", wantField: "params.steps[1]"},
		{name: "a host file in a later step", params: steps(encode, "ffmpeg -i /etc/passwd b.mp4"), wantErr: "/etc/passwd", wantField: "params.steps[1]"},
		{name: "keep without steps", params: `{"command":"` + encode + `","keep":["a.mp4"]}`, wantErr: "params.keep names outputs of earlier steps, and needs params.steps", wantField: "params.keep"},
		{name: "keep alone", params: `{"keep":["a.mp4"]}`, wantErr: "params.keep names outputs of earlier steps, and needs params.steps", wantField: "params.keep"},
		{name: "keep a name no step writes", params: `{"steps":["` + encode + `","ffmpeg -i a.mp4 b.mp4"],"keep":["c.mp4"]}`,
			wantErr: `params.keep names "c.mp4", which no step before the last writes`, wantField: "params.keep"},
		{name: "keep the last step's output", params: `{"steps":["` + encode + `","ffmpeg -i a.mp4 b.mp4"],"keep":["b.mp4"]}`,
			wantErr: `params.keep names "b.mp4"`, wantField: "params.keep"},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// TestStepsFetchEachURLOnce: the URL inputs of different steps, which the validator names alike,
// are fetched under names of their own, and read by those names; the same URL in two steps is
// fetched once.
func TestStepsFetchEachURLOnce(t *testing.T) {
	t.Parallel()
	r, err := ffmpegjob.Parse(nil, json.RawMessage(`{"steps":[
		"ffmpeg -i https://a.example/x.mp4 a.mp4",
		"ffmpeg -i https://b.example/x.mp4 -i a.mp4 -filter_complex hstack b.mp4",
		"ffmpeg -i https://a.example/x.mp4 -i b.mp4 -filter_complex vstack c.mp4"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Validate(jobtype.Env{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range c.Downloads() {
		got[d.Name] = d.URL
	}
	if len(got) != 2 {
		t.Fatalf("downloads %v, want the two URLs", got)
	}
	for i, p := range c.Plans {
		for k := 1; k < len(p.Args); k++ {
			if p.Args[k-1] != "-i" || strings.HasSuffix(p.Args[k], ".mp4") {
				continue
			}
			want := []string{"https://a.example/x.mp4", "https://b.example/x.mp4", "https://a.example/x.mp4"}[i]
			if got[p.Args[k]] != want {
				t.Errorf("step %d reads %q, which is %q; want %q", i+1, p.Args[k], got[p.Args[k]], want)
			}
		}
	}
}

// TestKept: what an earlier step left is an output only when params.keep names it, a pattern of
// it, or the manifest its step wrote.
func TestKept(t *testing.T) {
	t.Parallel()
	r, err := ffmpegjob.Parse(nil, json.RawMessage(`{"steps":[
		"ffmpeg -f lavfi -i testsrc=d=2 -c:v libx264 a.mp4",
		"ffmpeg -i a.mp4 -r 1 f_%03d.png",
		"ffmpeg -i a.mp4 -c copy -f hls -hls_segment_filename s_%03d.ts index.m3u8",
		"ffmpeg -i a.mp4 -frames:v 1 thumb.jpg"],"keep":["f_%03d.png","index.m3u8"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Validate(jobtype.Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		step int
		want bool
	}{
		{"a.mp4", 0, false},
		{"f_001.png", 1, true},
		{"f_12345.png", 1, true},
		{"f_.png", 1, false},
		{"f_00x.png", 1, false},
		{"index.m3u8", 2, true},
		{"s_000.ts", 2, true},
	} {
		if got := c.Kept(tc.name, tc.step); got != tc.want {
			t.Errorf("Kept(%q, %d) = %v, want %v", tc.name, tc.step, got, tc.want)
		}
	}
}

// TestResolveMeasured: a step's measured placeholders take the numbers an earlier step
// measured, as plain decimals, and the step is validated again with them; a value missing or
// not finite is an error naming it.
func TestResolveMeasured(t *testing.T) {
	t.Parallel()
	r, err := ffmpegjob.Parse(nil, json.RawMessage(`{"steps":[
		"ffmpeg -i https://example.com/a.wav -af loudnorm=print_format=json -f null -",
		"ffmpeg -i https://example.com/a.wav -af loudnorm=I=-16:measured_I={{measured.input_i}}:offset={{measured.target_offset}} out.wav"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Validate(jobtype.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if c.UsesMeasured(0) || !c.UsesMeasured(1) {
		t.Fatalf("UsesMeasured = %v, %v; want the second step only", c.UsesMeasured(0), c.UsesMeasured(1))
	}
	plan, err := r.Resolve(c, 1, map[string]float64{"input_i": -27.456, "target_offset": 0.4}, jobtype.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(plan.Args, "loudnorm=I=-16:measured_I=-27.46:offset=0.40") || !slices.Equal(plan.Downloads, c.Plans[1].Downloads) {
		t.Errorf("resolved args %q, downloads %v; want the measured numbers in the filter and the checked downloads", plan.Args, plan.Downloads)
	}
	for _, tc := range []struct {
		values map[string]float64
		want   string
	}{
		{map[string]float64{"input_i": -27}, "{{measured.target_offset}} has no value"},
		{nil, "{{measured.input_i}} has no value"},
		{map[string]float64{"input_i": math.Inf(-1), "target_offset": 0}, "{{measured.input_i}} was measured as -Inf"},
	} {
		if _, err := r.Resolve(c, 1, tc.values, jobtype.Env{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%v) = %v, want an error containing %q", tc.values, err, tc.want)
		}
	}
}
