package runner_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// integratedLoudness measures a file with FFmpeg's ebur128 filter, on the host.
func integratedLoudness(t *testing.T, path string) float64 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-i", path, "-af", "ebur128", "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Fatalf("ebur128: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?s)Summary:.*?I:\s+(-?[0-9.]+) LUFS`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no integrated loudness in:\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestMeasuredValuesReachTheNextStep: a two-pass loudness normalisation as a chain, the second
// pass taking what the first measured ({{measured.input_i}}, ...), brings a tone at about -21
// LUFS to the -16 LUFS asked, within 1 LU.
func TestMeasuredValuesReachTheNextStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const src = "-f lavfi -i sine=frequency=440:duration=5"
	res := b.runParams(t, "", map[string]any{"steps": []string{
		"ffmpeg " + src + " -af loudnorm=I=-16:TP=-1.5:LRA=11:print_format=json -f null -",
		"ffmpeg " + src + " -af loudnorm=I=-16:TP=-1.5:LRA=11:measured_I={{measured.input_i}}:measured_TP={{measured.input_tp}}:" +
			"measured_LRA={{measured.input_lra}}:measured_thresh={{measured.input_thresh}}:offset={{measured.target_offset}}:linear=true -ar 48000 out.wav",
	}}, time.Minute, workqueue.Limits{})
	if res.Failure != nil {
		t.Fatalf("failed: %+v", failed(res))
	}
	if len(res.Files) != 1 || res.Files[0].Path != "out.wav" {
		t.Fatalf("outputs %+v, want out.wav", res.Files)
	}
	got := integratedLoudness(t, b.outputPath(t, "out.wav"))
	if got < -17 || got > -15 {
		t.Errorf("integrated loudness %.1f LUFS, want -16 within 1 LU", got)
	}
}

// TestMeasuredValueMissing: a second pass whose first step printed no loudnorm measurement
// fails naming the value, before it runs.
func TestMeasuredValueMissing(t *testing.T) {
	t.Parallel()
	res := setup(t).runParams(t, "", map[string]any{"steps": []string{
		"ffmpeg -f lavfi -i sine=duration=1 -af ebur128 -f null -", // measures, but not with loudnorm
		"ffmpeg -f lavfi -i sine=duration=1 -af loudnorm=measured_I={{measured.input_i}} out.wav",
	}}, time.Minute, workqueue.Limits{})
	e := failed(res)
	if e == nil || e.Code != problem.CodeValidation || !strings.Contains(e.Message, "step 2 of 2: {{measured.input_i}} has no value") {
		t.Fatalf("error %+v, want VALIDATION_ERROR naming the missing value", e)
	}
}
