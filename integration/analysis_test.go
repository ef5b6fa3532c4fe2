package integration

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
)

// analysisData is the part of an analysis job's output.data these tests read.
type analysisData struct {
	Loudnorm []map[string]any `json:"loudnorm"`
	EBUR128  []struct {
		Integrated *float64 `json:"integrated"`
	} `json:"ebur128"`
	Silences []interval `json:"silences"`
	Blacks   []interval `json:"blacks"`
	Log      string     `json:"log"`
}

type interval struct {
	Start    float64  `json:"start"`
	End      *float64 `json:"end"`
	Duration *float64 `json:"duration"`
}

// near tells whether got is want within tol.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// TestAnalysisJobs runs measuring commands (-f null -) through the binary, on both stores: each
// completes with no file and answers what its filters found in output.data, checked against
// what the generated media holds; a two-pass encode runs as two steps; the refused variants
// are 400s naming the value.
func TestAnalysisJobs(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

		measure := func(t *testing.T, command string) analysisData {
			t.Helper()
			j := newClient(t, srv, c.Key).complete(ffmpegJob(command, nil, nil))
			if j.Output == nil || j.Output.File != nil || len(j.Output.Files) != 0 || len(j.Output.Data) == 0 {
				t.Fatalf("job %s output %+v; want data and no file", j.ID, j.Output)
			}
			if j.Cost == nil || j.Cost.Amount < 1 {
				t.Errorf("cost %+v, want the compute billed as any job", j.Cost)
			}
			var d analysisData
			if err := json.Unmarshal(j.Output.Data, &d); err != nil {
				t.Fatalf("data %s: %v", j.Output.Data, err)
			}
			if d.Log == "" {
				t.Errorf("data has no log")
			}
			return d
		}

		t.Run("loudnorm measures", func(t *testing.T) {
			t.Parallel()
			d := measure(t, "ffmpeg -f lavfi -i sine=frequency=440:duration=3 -af loudnorm=I=-16:TP=-1.5:LRA=11:print_format=json -f null -")
			if len(d.Loudnorm) != 1 {
				t.Fatalf("loudnorm %v, want one block", d.Loudnorm)
			}
			// FFmpeg's sine source is a -18 dBFS tone (amplitude 1/8): about -21 LUFS.
			in, ok := d.Loudnorm[0]["inputI"].(float64)
			if !ok || !near(in, -21, 2) {
				t.Errorf("inputI %v, want about -21 LUFS for a 1/8 amplitude sine", d.Loudnorm[0]["inputI"])
			}
			for _, k := range []string{"inputTp", "inputLra", "inputThresh", "targetOffset"} {
				if _, ok := d.Loudnorm[0][k].(float64); !ok {
					t.Errorf("%s is %v, want a number", k, d.Loudnorm[0][k])
				}
			}
		})

		t.Run("silences", func(t *testing.T) {
			t.Parallel()
			// 2 s of tone, then 2 s of silence.
			d := measure(t, "ffmpeg -f lavfi -i sine=frequency=440:duration=2,apad=pad_dur=2 -af silencedetect=noise=-50dB:duration=0.5 -f null -")
			if len(d.Silences) != 1 || !near(d.Silences[0].Start, 2, 0.1) {
				t.Fatalf("silences %+v, want one starting at 2 s", d.Silences)
			}
			if s := d.Silences[0]; s.End != nil && !near(*s.End, 4, 0.1) {
				t.Errorf("silence ends at %v, want 4 s (or open at the end of the input)", *s.End)
			}
		})

		t.Run("blacks", func(t *testing.T) {
			t.Parallel()
			// 1 s of black, then 1 s of test pattern.
			d := measure(t, "ffmpeg -f lavfi -i color=c=black:size=64x64:rate=25:duration=1 -f lavfi -i testsrc=size=64x64:rate=25:duration=1 "+
				"-filter_complex [0:v][1:v]concat=n=2:v=1:a=0,blackdetect=d=0.5 -f null -")
			if len(d.Blacks) != 1 || !near(d.Blacks[0].Start, 0, 0.05) || d.Blacks[0].End == nil || !near(*d.Blacks[0].End, 1, 0.1) {
				t.Fatalf("blacks %+v, want one from 0 to 1 s", d.Blacks)
			}
		})

		t.Run("ebur128", func(t *testing.T) {
			t.Parallel()
			d := measure(t, "ffmpeg -f lavfi -i sine=frequency=1000:duration=3 -af ebur128 -f null -")
			if len(d.EBUR128) != 1 || d.EBUR128[0].Integrated == nil || !near(*d.EBUR128[0].Integrated, -21, 2) {
				t.Fatalf("ebur128 %+v, want an integrated loudness of about -21 LUFS", d.EBUR128)
			}
		})

		t.Run("two-pass encode as two steps", func(t *testing.T) {
			t.Parallel()
			const src = "-f lavfi -i testsrc=duration=2:size=160x90:rate=25 -c:v libx264 -preset ultrafast -b:v 200k -passlogfile p"
			j := newClient(t, srv, c.Key).complete(stepsJob([]string{
				"ffmpeg " + src + " -pass 1 -f null -",
				"ffmpeg " + src + " -pass 2 -pix_fmt yuv420p out.mp4",
			}, nil))
			if j.Output == nil || j.Output.File == nil || j.Output.File.Path != "out.mp4" || len(j.Output.Files) != 1 {
				t.Fatalf("outputs %+v, want out.mp4 alone (the pass log is not an output)", j.Output)
			}
			if m := j.Output.File.Meta; m == nil || m.Width != 160 {
				t.Errorf("out.mp4 meta %+v, want 160 wide", m)
			}
		})

		t.Run("refusals", func(t *testing.T) {
			t.Parallel()
			c := newClient(t, srv, c.Key)
			for command, want := range map[string]string{
				"ffmpeg -f lavfi -i sine=d=1 -af ebur128 -f null out.wav":              "null",
				"ffmpeg -f lavfi -i sine=d=1 -af ebur128 -":                            "-",
				"ffmpeg -f lavfi -i sine=d=1 -af ebur128 -f null - out.wav":            "out.wav",
				"ffmpeg -f lavfi -i testsrc=d=1 -pass 1 -passlogfile ../p -f null -":   "../p",
				"ffmpeg -f lavfi -i testsrc=d=1 -pass 1 -passlogfile /tmp/p -f null -": "/tmp/p",
			} {
				e := c.do(http.MethodPost, "/jobs", ffmpegJob(command, nil, nil), nil).errorOf(t, http.StatusBadRequest)
				if e.Code != "VALIDATION_ERROR" || !strings.Contains(e.Message, want) {
					t.Errorf("%s: %+v, want VALIDATION_ERROR naming %q", command, e, want)
				}
			}
		})
	})
}
