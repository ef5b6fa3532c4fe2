package validator

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The quality proof of split and stitch, with the host's FFmpeg: corpus commands that can run
// here are run whole and split into three parts at the source's keyframes, an audio encode and
// a join, and the stitched output must match the whole one: the same frame count, video and
// audio starting and lasting the same within one frame, and a PSNR against the source within
// 0.5 dB of the whole output's, no frame more than 3 dB below the same frame of the whole.

// splitQualityCommands are the splittable corpus commands run here: each container, a fixed
// GOP, a letterbox, a still overlay, and the graphs that read the time (drawtext's %{pts},
// burned subtitles), whose parts are shifted to the source's time.
var splitQualityCommands = []string{
	"x264 crf aac", "vcodec acodec mov", "gop settings", "lossless qp0", "scale pad letterbox",
	"drawtext pts expansion", "subtitles staged", "overlay staged logo",
}

// splitQualityExtra are commands beyond the corpus, for the encoder a split accepts that no
// splittable corpus command uses: MPEG-4 part 2 with B-frames.
var splitQualityExtra = []corpusCase{
	{Name: "mpeg4 b-frames mov", Command: "ffmpeg -i https://cdn.example.com/media/input.mp4 -c:v mpeg4 -q:v 4 -bf 2 -c:a aac out.mov"},
}

const (
	splitSourceFPS = 30
	// splitSourceGOP puts keyframes every 4/3 s, times that are not whole microseconds: the
	// cuts must still land on them exactly.
	splitSourceGOP = 40
)

// splitSource makes the source once: 4 s of testsrc2 at 320x240 and a sine, keyframes every
// 40 frames; a still logo and a subtitle file for the commands that read them.
var splitSource = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "split-source-")
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i",
		"testsrc2=s=320x240:r="+strconv.Itoa(splitSourceFPS)+":d=4", "-f", "lavfi", "-i", "sine=f=440:d=4",
		"-c:v", "libx264", "-preset", "ultrafast", "-crf", "12", "-g", strconv.Itoa(splitSourceGOP),
		"-keyint_min", strconv.Itoa(splitSourceGOP), "-sc_threshold", "0", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-shortest", "-metadata", "title=split source", filepath.Join(dir, "source.mp4")).CombinedOutput(); err != nil {
		return "", &exec.Error{Name: "ffmpeg source: " + string(out), Err: err}
	}
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=c=red:s=64x32:d=1",
		"-frames:v", "1", filepath.Join(dir, "logo.png")).CombinedOutput(); err != nil {
		return "", &exec.Error{Name: "ffmpeg logo: " + string(out), Err: err}
	}
	srt := "1\n00:00:00,500 --> 00:00:02,200\nfirst line\n\n2\n00:00:02,600 --> 00:00:04,500\nsecond line\n"
	return dir, os.WriteFile(filepath.Join(dir, "subs.srt"), []byte(srt), 0o644)
})

func TestSplitQuality(t *testing.T) {
	t.Parallel()
	src, err := splitSource()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]corpusCase{}
	for _, c := range loadCorpus(t) {
		cases[c.Name] = c
	}
	// The encoders a split accepts that no splittable corpus command uses.
	for _, c := range splitQualityExtra {
		cases[c.Name] = c
	}
	keys := splitKeyframes(t, filepath.Join(src, "source.mp4"))
	cuts := splitCutsNear(keys, 4, 3)
	names := append([]string{}, splitQualityCommands...)
	for _, c := range splitQualityExtra {
		names = append(names, c.Name)
	}
	for _, name := range names {
		c, ok := cases[name]
		if !ok {
			t.Fatalf("no corpus command %q", name)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := Validate(c.Command, c.Options)
			if !Splittable(r.Plan).OK {
				t.Fatalf("%q is not splittable: %s", c.Command, Splittable(r.Plan).Reason)
			}
			cuts := cuts
			// Where the whole encode's keyframes are a fixed grid, the parts start on it, as
			// the control plane plans them.
			if points := CutPoints(r.Plan, keys, 4, splitSourceFPS); !slices.Equal(points, keys) {
				var reason string
				if cuts, reason = PlanCuts(points, 4, 3, 0, SplitLead(r.Plan, splitSourceFPS)); reason != "" {
					t.Fatal(reason)
				}
			}
			run, err := SplitCommands(r.Plan, cuts, true, splitSourceFPS)
			if err != nil {
				t.Fatal(err)
			}
			whole, split := t.TempDir(), t.TempDir()
			for _, dir := range []string{whole, split} {
				splitStage(t, src, dir, r.Plan)
			}
			ffmpeg(t, whole, r.Plan.Args)
			for _, p := range run.Parts {
				ffmpeg(t, split, p)
			}
			for _, tr := range run.Trims {
				ffmpeg(t, split, tr)
			}
			ffmpeg(t, split, run.Audio)
			if err := os.WriteFile(filepath.Join(split, run.ListName), []byte(run.List), 0o644); err != nil {
				t.Fatal(err)
			}
			ffmpeg(t, split, run.Join)

			out := r.Plan.Outputs[0]
			w, s := filepath.Join(whole, out), filepath.Join(split, out)
			frame := 1.0 / splitSourceFPS
			for _, kind := range []string{"v", "a"} {
				ws, ss := splitStreamTimes(t, w, kind), splitStreamTimes(t, s, kind)
				if kind == "v" && ws.packets != ss.packets {
					t.Errorf("video frames: whole %d, stitched %d", ws.packets, ss.packets)
				}
				if math.Abs(ws.start-ss.start) > frame || math.Abs(ws.end-ss.end) > frame {
					t.Errorf("%s stream: whole %.4f..%.4f s, stitched %.4f..%.4f s, more than a frame apart", kind, ws.start, ws.end, ss.start, ss.end)
				}
			}
			ref := filepath.Join(src, "source.mp4")
			wp, wssim := splitPSNR(t, w, ref)
			sp, sssim := splitPSNR(t, s, ref)
			if len(wp) != len(sp) {
				t.Fatalf("PSNR over %d frames whole, %d stitched", len(wp), len(sp))
			}
			wavg, savg := mean(wp), mean(sp)
			if math.Abs(wavg-savg) > 0.5 {
				t.Errorf("PSNR against the source: whole %.3f dB, stitched %.3f dB, more than 0.5 dB apart", wavg, savg)
			}
			if wt, st := splitTitle(t, w), splitTitle(t, s); wt != st {
				t.Errorf("the output's title: whole %q, stitched %q", wt, st)
			}
			wt, stt := splitPictTypes(t, w), splitPictTypes(t, s)
			// The parts put their keyframes where the whole encode does (keyframeGrid): a frame
			// that is an I-frame in the whole is one in the stitched output.
			for i := range min(len(wt), len(stt)) {
				if wt[i] == "I" && stt[i] != "I" {
					t.Errorf("frame %d is an I-frame in the whole output, a %s-frame stitched", i, stt[i])
				}
			}
			// Frame by frame: a frame's quality follows its place in the GOP (an I-frame or the
			// base layer of a hierarchical mini-GOP is several dB above its neighbours), and a
			// part restarts the GOP at its first frame, so the same frame can be an I-frame in
			// one output and a B-frame in the other. A seam is a stitched frame below what the
			// whole output shows there: below the worst of the whole's frames within half a
			// mini-GOP (8 frames) either side. The plain frame-to-frame figure is logged.
			worst, at, seam, seamAt := 0.0, 0, 0.0, 0
			for i := range wp {
				if d := wp[i] - sp[i]; d > worst {
					worst, at = d, i
				}
				low := wp[i]
				for j := max(0, i-8); j <= min(len(wp)-1, i+8); j++ {
					low = math.Min(low, wp[j])
				}
				if d := low - sp[i]; d > seam {
					seam, seamAt = d, i
				}
			}
			if seam > 3 {
				t.Errorf("stitched frame %d is %.2f dB below the whole output's worst frame around it", seamAt, seam)
			}
			// And frame by frame.
			if worst > 3 {
				t.Errorf("stitched frame %d is %.2f dB below the same frame of the whole output (%s in the whole, %s stitched)", at, worst, wt[at], stt[at])
			}
			t.Logf("%s: %d parts at %v: PSNR whole %.3f dB, stitched %.3f dB; the most a stitched frame is below the same frame of the whole: %.2f dB (frame %d, %s in the whole, %s stitched), below the whole's worst around it: %.2f dB (frame %d); SSIM whole %.5f, stitched %.5f",
				name, len(run.Parts), cuts, wavg, savg, worst, at, wt[at], stt[at], seam, seamAt, wssim, sssim)
		})
	}
}

// splitStage links the source and the staged files the plan reads into dir under their local
// names.
func splitStage(t *testing.T, src, dir string, plan *Plan) {
	t.Helper()
	link := func(from, to string) {
		if err := os.Symlink(filepath.Join(src, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range plan.Downloads {
		switch filepath.Ext(d.Name) {
		case ".png":
			link("logo.png", d.Name)
		default:
			link("source.mp4", d.Name)
		}
	}
	if strings.Contains(strings.Join(plan.Args, " "), "subs.srt") {
		link("subs.srt", "subs.srt")
	}
}

func ffmpeg(t *testing.T, dir string, args []string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", append([]string{"-nostdin", "-v", "error", "-y"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// splitKeyframes are the times of the video keyframes of a file.
func splitKeyframes(t *testing.T, file string) []float64 {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"packet=pts_time,flags", "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatal(err)
	}
	var keys []float64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pts, flags, _ := strings.Cut(line, ",")
		if strings.Contains(flags, "K") {
			v, err := strconv.ParseFloat(pts, 64)
			if err != nil {
				t.Fatalf("ffprobe packet %q: %v", line, err)
			}
			keys = append(keys, v)
		}
	}
	return keys
}

// splitCutsNear picks, for n parts of a duration, the keyframe nearest each even share. The
// runner's planner does this for real; here it only needs to cut somewhere inside a GOP grid.
func splitCutsNear(keys []float64, duration float64, n int) []float64 {
	var cuts []float64
	for i := 1; i < n; i++ {
		want, best := duration*float64(i)/float64(n), -1.0
		for _, k := range keys {
			if k > 0 && (best < 0 || math.Abs(k-want) < math.Abs(best-want)) {
				best = k
			}
		}
		cuts = append(cuts, best)
	}
	return cuts
}

type streamTimes struct {
	packets    int
	start, end float64
}

// splitStreamTimes reads a stream's packets: how many, the first presentation time and the
// end of the last.
func splitStreamTimes(t *testing.T, file, kind string) streamTimes {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", kind+":0", "-show_entries",
		"packet=pts_time,duration_time", "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatal(err)
	}
	st := streamTimes{start: math.Inf(1), end: math.Inf(-1)}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// A packet with side data ends in a comma, and its side data takes a line of its own.
		f := strings.Split(line, ",")
		if len(f) < 2 || f[0] == "" {
			continue
		}
		pts, err1 := strconv.ParseFloat(f[0], 64)
		dur, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: ffprobe packet %q", file, line)
		}
		st.packets++
		st.start = math.Min(st.start, pts)
		st.end = math.Max(st.end, pts+dur)
	}
	if st.packets == 0 {
		t.Fatalf("%s has no %s stream", file, kind)
	}
	return st
}

// splitPSNR is each frame's PSNR of file's video against the reference's (file scaled to the
// reference's size, both from their first frame) and the mean SSIM.
func splitPSNR(t *testing.T, file, ref string) ([]float64, float64) {
	t.Helper()
	dir := t.TempDir()
	// Frame i of one against frame i of the other, whatever their timestamps.
	graph := "[0:v]scale=320:240:flags=bicubic,format=yuv420p,setpts=N/(30*TB),split[a1][a2];" +
		"[1:v]format=yuv420p,setpts=N/(30*TB),split[b1][b2];" +
		"[a1][b1]psnr=stats_file=psnr.log[o1];[a2][b2]ssim=stats_file=ssim.log[o2]"
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", file, "-i", ref, "-filter_complex", graph,
		"-map", "[o1]", "-f", "null", "-", "-map", "[o2]", "-f", "null", "-")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psnr of %s: %v\n%s", file, err, out)
	}
	psnr := splitStats(t, filepath.Join(dir, "psnr.log"), "psnr_avg:")
	ssim := splitStats(t, filepath.Join(dir, "ssim.log"), "All:")
	return psnr, mean(ssim)
}

// splitStats reads one value from each line of a psnr or ssim stats file.
func splitStats(t *testing.T, file, key string) []float64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var vals []float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		for _, f := range strings.Fields(sc.Text()) {
			v, ok := strings.CutPrefix(f, key)
			if !ok {
				continue
			}
			x, err := strconv.ParseFloat(v, 64)
			if v == "inf" || math.IsInf(x, 1) || x > 60 {
				// Above 60 dB an 8-bit frame is as good as the source; libvmaf caps its PSNR
				// there too, and identical frames ("inf") count as that.
				x, err = 60, nil
			}
			if err != nil {
				t.Fatalf("%s: %q", file, f)
			}
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		t.Fatalf("%s has no %s values", file, key)
	}
	return vals
}

func splitPictTypes(t *testing.T, file string) []string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pict_type", "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.Trim(l, ", "); l != "" {
			types = append(types, l)
		}
	}
	return types
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// splitTitle is file's global title tag, as ffprobe reads it.
func splitTitle(t *testing.T, file string) string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format_tags=title", "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", file, err)
	}
	return strings.TrimSpace(string(out))
}

// TestSplitLeadInNTSC: a part's lead-in and lead-out end at frames of an NTSC rate
// (30000/1001), whose times are not whole microseconds (nor milliseconds, in an mkv source), and
// the join starts the part at its cut (the list's inpoint) and the trim ends it at the next, in
// each container a split writes:
// every frame once, in order, timed as the whole output's, and none a frame of a lead-in or a
// lead-out (the stitched frames match the whole's, frame for frame).
func TestSplitLeadInNTSC(t *testing.T) {
	t.Parallel()
	// The source in mp4 keeps its times in 1/30000 s, in mkv to the millisecond: a frame's
	// time there is rounded, up for about half the frames.
	for _, in := range []string{"mp4", "mkv"} {
		src := t.TempDir()
		source := filepath.Join(src, "source."+in)
		ffmpeg(t, src, []string{"-f", "lavfi", "-i", "testsrc2=s=320x240:r=30000/1001:d=4", "-c:v", "libx264", "-preset", "ultrafast",
			"-crf", "12", "-g", "40", "-keyint_min", "40", "-sc_threshold", "0", "-pix_fmt", "yuv420p", source})
		keys := splitKeyframes(t, source)
		cuts := splitCutsNear(keys, 4, 3)
		for _, ext := range []string{"mp4", "mkv", "mov"} {
			t.Run(in+" to "+ext, func(t *testing.T) {
				t.Parallel()
				r := Validate("ffmpeg -i https://cdn.example.com/in."+in+" -c:v libx264 -crf 23 -preset veryfast out."+ext, Options{})
				run, err := SplitCommands(r.Plan, cuts, false, 30000.0/1001)
				if err != nil {
					t.Fatal(err)
				}
				if r := 30000.0 / 1001; !slicesNear(run.Leads, []float64{7 / r, 14 / r, 7 / r}) || len(run.Trims) != 2 {
					t.Fatalf("leads %v and %d trims, want a quarter of a second (7 frames) either side of each cut, cut off by 2 trims", run.Leads, len(run.Trims))
				}
				whole, split := t.TempDir(), t.TempDir()
				for _, dir := range []string{whole, split} {
					if err := os.Symlink(source, filepath.Join(dir, r.Plan.Downloads[0].Name)); err != nil {
						t.Fatal(err)
					}
				}
				ffmpeg(t, whole, r.Plan.Args)
				for _, p := range run.Parts {
					ffmpeg(t, split, p)
				}
				for _, tr := range run.Trims {
					ffmpeg(t, split, tr)
				}
				if err := os.WriteFile(filepath.Join(split, run.ListName), []byte(run.List), 0o644); err != nil {
					t.Fatal(err)
				}
				ffmpeg(t, split, run.Join)
				w, s := filepath.Join(whole, "out."+ext), filepath.Join(split, "out."+ext)
				ws, ss := splitStreamTimes(t, w, "v"), splitStreamTimes(t, s, "v")
				if ws.packets != ss.packets || math.Abs(ws.start-ss.start) > 1.0/30 || math.Abs(ws.end-ss.end) > 1.0/30 {
					t.Errorf("whole %d frames %.4f..%.4f s, stitched %d frames %.4f..%.4f s", ws.packets, ws.start, ws.end, ss.packets, ss.start, ss.end)
				}
				wp, _ := splitPSNR(t, w, source)
				sp, _ := splitPSNR(t, s, source)
				for i := range min(len(wp), len(sp)) {
					// A frame of a lead in another's place is frames away from the source's:
					// tens of dB below.
					if wp[i]-sp[i] > 6 {
						t.Fatalf("stitched frame %d is %.2f dB below the whole's: not the same picture", i, wp[i]-sp[i])
					}
				}
			})
		}
	}
}

func slicesNear(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}
