package runner

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"
	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/validator"
)

func TestKeyframes(t *testing.T) {
	t.Parallel()
	sb, dir := newSandbox(t), sandboxtest.WorkDir(t)
	// Keyframes every 40 frames at 30 fps: every 4/3 s, times that are not whole microseconds.
	gen := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command("ffmpeg", append(append([]string{"-v", "error", "-y"}, args...), filepath.Join(dir, name))...).CombinedOutput(); err != nil {
			t.Fatalf("making %s: %v\n%s", name, err, out)
		}
	}
	x264 := []string{"-c:v", "libx264", "-preset", "ultrafast", "-g", "40", "-keyint_min", "40", "-sc_threshold", "0"}
	src := []string{"-f", "lavfi", "-i", "testsrc2=s=160x120:r=30:d=6"}
	gen("gop40.mp4", append(append(src, "-f", "lavfi", "-i", "sine=d=6", "-c:a", "aac", "-shortest"), x264...)...)
	// Without audio: Matroska would start the video at the AAC encoder's priming delay.
	gen("gop40.mkv", append(append([]string{}, src...), x264...)...)
	// MPEG-TS starts at 1.4 s; -ss counts from there, so the keyframes are counted from it too.
	gen("gop40.ts", append(append([]string{}, src...), x264...)...)
	gen("sound.m4a", "-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac")
	want := []float64{0, 4.0 / 3, 8.0 / 3, 4, 16.0 / 3}
	for _, name := range []string{"gop40.mp4", "gop40.mkv", "gop40.ts"} {
		got, err := Keyframes(context.Background(), sb, dir, name)
		if err != nil {
			t.Fatal(err)
		}
		// ffprobe prints times to the microsecond; Matroska stores milliseconds.
		if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 0.0011)); diff != "" {
			t.Errorf("Keyframes(%s) (-want +got):\n%s", name, diff)
		}
	}
	// MPEG-TS with AAC audio: the video starts 23 ms after the audio, and the split
	// is refused, naming that.
	gen("late.ts", append(append(append([]string{}, src...), "-f", "lavfi", "-i", "sine=d=6", "-c:a", "aac", "-shortest"), x264...)...)
	late, err := Keyframes(context.Background(), sb, dir, "late.ts")
	if err != nil {
		t.Fatal(err)
	}
	if cuts, reason := validator.PlanCuts(late, 6, 2, 0, 0); cuts != nil || !strings.Contains(reason, "after the input's start") {
		t.Errorf("validator.PlanCuts(%v) = %v, %q, want no cuts: the video starts late", late, cuts, reason)
	}
	if keys, err := Keyframes(context.Background(), sb, dir, "sound.m4a"); err == nil {
		t.Errorf("Keyframes of a file without video = %v, want an error", keys)
	}
	if keys, err := Keyframes(context.Background(), sb, dir, "missing.mp4"); err == nil {
		t.Errorf("Keyframes of a missing file = %v, want an error", keys)
	}
}

// TestStillImage: a split's overlay is one still frame only when its content is: an animated
// PNG, or a video under an image's name, is not, whatever the name says.
func TestStillImage(t *testing.T) {
	t.Parallel()
	sb, dir := newSandbox(t), sandboxtest.WorkDir(t)
	for name, args := range map[string][]string{
		"logo.png":     {"-f", "lavfi", "-i", "color=c=red:s=64x32", "-frames:v", "1"},
		"logo.jpg":     {"-f", "lavfi", "-i", "color=c=red:s=64x32", "-frames:v", "1"},
		"animated.png": {"-f", "lavfi", "-i", "testsrc=s=64x32:r=10:d=0.5", "-f", "apng"},
		"video.png":    {"-f", "lavfi", "-i", "testsrc=s=64x32:r=10:d=0.5", "-c:v", "libx264", "-f", "mp4"},
		"empty.png":    nil,
	} {
		path := filepath.Join(dir, name)
		if args == nil {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if out, err := exec.Command("ffmpeg", slices.Concat([]string{"-v", "error", "-y"}, args, []string{path})...).CombinedOutput(); err != nil {
			t.Fatalf("making %s: %v\n%s", name, err, out)
		}
	}
	for name, want := range map[string]bool{"logo.png": true, "logo.jpg": true, "animated.png": false, "video.png": false, "empty.png": false, "absent.png": false} {
		if got := StillImage(context.Background(), sb, dir, name); got != want {
			t.Errorf("StillImage(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestProbeSplit(t *testing.T) {
	t.Parallel()
	sb, dir := newSandbox(t), sandboxtest.WorkDir(t)
	if err := os.WriteFile(filepath.Join(dir, "subs.srt"), []byte("1\n00:00:00,500 --> 00:00:01,500\nhi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	video := []string{"-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=4"}
	sine := []string{"-f", "lavfi", "-i", "sine=d=4"}
	x264 := []string{"-c:v", "libx264", "-preset", "ultrafast", "-g", "50"}
	for name, args := range map[string][]string{
		"av.mp4":    slices.Concat(video, sine, x264, []string{"-c:a", "aac", "-shortest"}),
		"mute.mp4":  slices.Concat(video, x264),
		"subs.mkv":  slices.Concat(video, []string{"-i", filepath.Join(dir, "subs.srt")}, x264, []string{"-c:s", "srt"}),
		"sound.m4a": slices.Concat(sine, []string{"-c:a", "aac"}),
		// 25 fps on average, with frame 50 missing: 2 s apart from the frame before.
		"gap.mkv": slices.Concat([]string{"-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=4.04"}, []string{"-vf", "select=not(eq(n\\,50))", "-fps_mode", "passthrough"}, x264),
	} {
		if out, err := exec.Command("ffmpeg", slices.Concat([]string{"-v", "error", "-y"}, args, []string{filepath.Join(dir, name)})...).CombinedOutput(); err != nil {
			t.Fatalf("making %s: %v\n%s", name, err, out)
		}
	}
	tests := []struct {
		name   string
		want   SplitSource
		reason string
	}{
		{"av.mp4", SplitSource{Keyframes: []float64{0, 2}, Duration: 4, Audio: true, FrameRate: 25, Width: 160, Height: 120, SampleRate: 44100, Channels: 1}, ""},
		{"mute.mp4", SplitSource{Keyframes: []float64{0, 2}, Duration: 4, FrameRate: 25, Width: 160, Height: 120}, ""},
		{"subs.mkv", SplitSource{Keyframes: []float64{0, 2}, Duration: 4, FrameRate: 25, Width: 160, Height: 120}, "a subtitle stream"},
		{"sound.m4a", SplitSource{}, "no video stream"},
		// Its mean rate agrees with its stated one within 1%, but a frame is missing.
		{"gap.mkv", SplitSource{Keyframes: []float64{0, 2.04}, Duration: 4.04, FrameRate: 0, Width: 160, Height: 120}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ProbeSplit(context.Background(), sb, dir, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.Reason, tt.reason) || (tt.reason == "") != (got.Reason == "") {
				t.Fatalf("ProbeSplit(%s) reason %q, want one containing %q", tt.name, got.Reason, tt.reason)
			}
			got.Reason = ""
			// AAC's frames make the container's duration a few hundredths over the 4 s asked.
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 0.05)); diff != "" {
				t.Fatalf("ProbeSplit(%s) (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

// newSandbox is the bubblewrap sandbox the runner uses.
func newSandbox(t *testing.T) sandbox.Runner {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func TestParseKeyframes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, csv string
		want      []float64
		bad       bool
	}{
		{"key and non-key packets", "packet,0.000000,K__\npacket,0.033333,___\npacket,1.333333,K__\nformat,0.000000\n", []float64{0, 1.333333}, false},
		{"side data", "packet,0.000000,K_,side_data,\npacket,2.000000,K_\n", []float64{0, 2}, false},
		{"decode order, repeated", "packet,2.000000,K_\npacket,0.000000,K_\npacket,2.000000,K_\n", []float64{0, 2}, false},
		{"counted from the start time", "packet,1.400000,K_\npacket,2.400000,K_\nformat,1.400000\n", []float64{0, 1}, false},
		{"no time", "packet,N/A,K_\npacket,1.000000,K_\nformat,N/A\n", []float64{1}, false},
		{"junk time", "packet,abc,K_\n", nil, true},
		{"junk start", "packet,1.000000,K_\nformat,x\n", nil, true},
		{"nothing", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseKeyframes(tt.csv)
			if (err != nil) != tt.bad {
				t.Fatalf("parseKeyframes error = %v, want error %v", err, tt.bad)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("parseKeyframes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConstantRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r, avg string
		want   float64
	}{
		{"25/1", "25/1", 25},
		{"30000/1001", "2997/100", 30000.0 / 1001},
		{"30/1", "2985/100", 30}, // within 1%: a last frame's duration rounds the average
		{"30/1", "1500/51", 0},   // 2% apart: frames dropped or held, a variable rate
		{"1000/1", "30/1", 0},    // timestamps in milliseconds, 30 frames a second
		{"25/1", "0/0", 0},       // no average (one frame, or a stream without a duration)
		{"0/0", "25/1", 0},
		{"N/A", "N/A", 0},
	}
	for _, tt := range tests {
		if got := constantRate(tt.r, tt.avg); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("constantRate(%q, %q) = %v, want %v", tt.r, tt.avg, got, tt.want)
		}
	}
}

// TestSplitInSandbox runs a split the way the runner will: the input probed in the sandbox,
// the cuts planned, and every part, the audio and the join run as FFmpeg commands in the
// sandbox, each in a work directory of its own holding only what it reads; the stitched output
// has the whole encode's frame count.
func TestSplitInSandbox(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	// MPEG-TS starts at 1.4 s, which the cuts are counted from; without audio, whose AAC delay
	// would start the video late (TestKeyframes).
	for _, ext := range []string{"mp4", "ts"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			in, audio := "input_0."+ext, ext == "mp4"
			src := sandboxtest.WorkDir(t)
			gen := []string{"-v", "error", "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=8"}
			if audio {
				gen = append(gen, "-f", "lavfi", "-i", "sine=d=8", "-c:a", "aac", "-shortest")
			}
			gen = append(gen, "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", filepath.Join(src, in))
			if out, err := exec.Command("ffmpeg", gen...).CombinedOutput(); err != nil {
				t.Fatalf("making the source: %v\n%s", err, out)
			}
			r := validator.Validate("ffmpeg -i https://cdn.example.com/in."+ext+" -vf scale=96:-2 -c:v libx264 -preset ultrafast -c:a aac out.mp4", validator.Options{})
			if !r.Valid {
				t.Fatal(r.Error)
			}
			ctx := context.Background()
			probe, err := ProbeSplit(ctx, sb, src, in)
			if err != nil || probe.Reason != "" || probe.Audio != audio {
				t.Fatalf("ProbeSplit = %+v, %v; want no reason and audio %v", probe, err, audio)
			}
			cuts, reason := validator.PlanCuts(probe.Keyframes, probe.Duration, 3, 0, validator.SplitLead(r.Plan, probe.FrameRate))
			if len(cuts) != 2 {
				t.Fatalf("validator.PlanCuts(%v, %v, 3) = %v (%s), want 2 cuts", probe.Keyframes, probe.Duration, cuts, reason)
			}
			run, err := validator.SplitCommands(r.Plan, cuts, probe.Audio, probe.FrameRate)
			if err != nil {
				t.Fatal(err)
			}
			// ffmpeg runs args in a fresh work directory holding the named files of from, and returns
			// the directory.
			ffmpeg := func(args []string, from string, names ...string) string {
				t.Helper()
				dir := sandboxtest.WorkDir(t)
				for _, n := range names {
					b, err := os.ReadFile(filepath.Join(from, n))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				res, err := sb.Run(ctx, sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Args: append([]string{"-v", "error", "-y"}, args...)})
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("ffmpeg %v in the sandbox: %v, exit %d\n%s", args, err, res.ExitCode, res.StderrTail)
				}
				return dir
			}
			join := sandboxtest.WorkDir(t)
			if err := os.WriteFile(filepath.Join(join, run.ListName), []byte(run.List), 0o644); err != nil {
				t.Fatal(err)
			}
			stage := func(dir, name string) {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(join, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for i, p := range run.Parts {
				stage(ffmpeg(p, src, in), run.PartNames[i])
			}
			names := append([]string{run.ListName}, run.PartNames...)
			for _, tr := range run.Trims { // the lead-outs go, each in a sandbox of its own
				out := tr[len(tr)-1]
				stage(ffmpeg(tr, join, run.PartNames...), out)
				names = append(names, out)
			}
			if len(run.Trims) != len(run.Parts)-1 {
				t.Errorf("%d trims of %d parts, want one for each part but the last (x264 leads out)", len(run.Trims), len(run.Parts))
			}
			if audio {
				stage(ffmpeg(run.Audio, src, in), run.AudioName)
				names = append(names, run.AudioName)
			}
			stitched := ffmpeg(run.Join, join, names...)
			whole := ffmpeg(r.Plan.Args, src, in)
			frames := func(dir string) int {
				out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
					"stream=nb_read_packets", "-of", "csv=p=0", filepath.Join(dir, "out.mp4")).Output()
				if err != nil {
					t.Fatal(err)
				}
				n, err := strconv.Atoi(strings.TrimSpace(string(out)))
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			if w, s := frames(whole), frames(stitched); w != s || w != 200 {
				t.Fatalf("video frames: whole %d, stitched %d, want 200", w, s)
			}
		})
	}
}

// FuzzSplitStreams: ffprobe's description of the streams comes from the user's file. Whatever it
// holds, reading it never panics and answers no negative size, rate or count.
func FuzzSplitStreams(f *testing.F) {
	f.Add("stream,codec_type=video,width=1280,height=720,r_frame_rate=25/1,avg_frame_rate=25/1\nstream,codec_type=audio,sample_rate=44100,channels=1,r_frame_rate=0/0,avg_frame_rate=0/0\nformat,duration=60.000000\n")
	f.Add("stream,codec_type=video,width=-5,height=x,r_frame_rate=1/0\nstream,codec_type=subtitle\nformat,duration=N/A\n")
	f.Add(",,=\n=stream\nstream,codec_type=audio,channels=99999999999999999999\n")
	f.Fuzz(func(t *testing.T, csv string) {
		src, _ := parseSplitStreams(csv)
		if src.Width < 0 || src.Height < 0 || src.SampleRate < 0 || src.Channels < 0 || src.FrameRate < 0 || math.IsNaN(src.FrameRate) {
			t.Fatalf("parseSplitStreams(%q) = %+v: a negative or NaN fact", csv, src)
		}
	})
}

// TestSteady: frames one every 1/rate seconds, in any order and rounded to the millisecond, are
// steady; a frame missing or doubled is not.
func TestSteady(t *testing.T) {
	t.Parallel()
	every := func(n int, step float64, round bool) []float64 {
		var ts []float64
		for i := range n {
			v := float64(i) * step
			if round {
				v = math.Round(v*1000) / 1000
			}
			ts = append(ts, v)
		}
		return ts
	}
	ntsc := 30000.0 / 1001
	tests := []struct {
		name  string
		times []float64
		rate  float64
		want  bool
	}{
		{"25 fps", every(100, 0.04, false), 25, true},
		{"NTSC in milliseconds", every(300, 1/ntsc, true), ntsc, true},
		{"in presentation order of B-frames", []float64{0, 0.12, 0.04, 0.08, 0.24, 0.16, 0.2}, 25, true},
		{"a frame missing", slices.Delete(every(100, 0.04, false), 50, 51), 25, false},
		{"a frame doubled", slices.Insert(every(100, 0.04, false), 50, 2.0), 25, false},
		{"a frame late by more than half a frame", []float64{0, 0.04, 0.08, 0.141, 0.18}, 25, false},
		{"one frame", []float64{0}, 25, false},
		{"no rate", every(100, 0.04, false), 0, false},
	}
	for _, tt := range tests {
		if got := steady(tt.times, tt.rate); got != tt.want {
			t.Errorf("%s: steady = %v, want %v", tt.name, got, tt.want)
		}
	}
}
