package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// splitView is what GET /jobs/{id} tells of a job that asked to be split.
type splitView struct {
	Split *struct {
		Parts  int    `json:"parts"`
		Reason string `json:"reason"`
	} `json:"split"`
	Cost *cost `json:"cost"`
}

// makeSplitSource writes an H.264 + AAC MP4 of seconds at 25 fps with a keyframe every second,
// a source a split can cut anywhere a second begins.
func makeSplitSource(t testing.TB, seconds int, size string) []byte {
	t.Helper()
	return generate(t, "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=duration=%d:size=%s:rate=25", seconds, size),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=440:duration=%d", seconds),
		"-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest")
}

// streamFacts are what the quality checks read of a file: its video frames and the start and
// duration of each stream, in seconds.
type streamFacts struct {
	Frames                     int
	VStart, VDur, AStart, ADur float64
	Audio                      bool
}

func probeFacts(t testing.TB, path string) streamFacts {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_packets", "-show_entries",
		"stream=codec_type,nb_read_packets,start_time,duration", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p struct {
		Streams []struct {
			Type    string `json:"codec_type"`
			Packets string `json:"nb_read_packets"`
			Start   string `json:"start_time"`
			Dur     string `json:"duration"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	var f streamFacts
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	for _, s := range p.Streams {
		switch s.Type {
		case "video":
			f.Frames, _ = strconv.Atoi(s.Packets)
			f.VStart, f.VDur = num(s.Start), num(s.Dur)
		case "audio":
			f.Audio, f.AStart, f.ADur = true, num(s.Start), num(s.Dur)
		}
	}
	return f
}

// psnrOf is the average PSNR of a file's video against the source's.
func psnrOf(tb testing.TB, path, source string) float64 {
	return compared(tb, "psnr", "average:", path, source)
}

// ssimOf is the overall SSIM of a file's video against the source's.
func ssimOf(tb testing.TB, path, source string) float64 {
	return compared(tb, "ssim", "All:", path, source)
}

// compared runs FFmpeg's filter (psnr or ssim) over a file's video against the source's and
// reads the figure its summary prints after label.
func compared(tb testing.TB, filter, label, path, source string) float64 {
	tb.Helper()
	out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-i", path, "-i", source, "-lavfi", "[0:v][1:v]"+filter, "-f", "null", "-").CombinedOutput()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", filter, err, out)
	}
	i := strings.LastIndex(string(out), label)
	if i < 0 {
		tb.Fatalf("%s printed no %s\n%s", filter, label, out)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(out)[i+len(label):])[0], 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// download saves a job's output file under dir.
func (c *client) download(j jobView, dir string) string {
	c.t.Helper()
	if j.Output == nil || j.Output.File == nil {
		c.t.Fatalf("job %s has no output file", j.ID)
	}
	path := filepath.Join(dir, j.Output.File.Path)
	if err := os.WriteFile(path, c.mustGet(j.Output.File.URL), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// checkStitched holds a split job's output to the single-pass encode of the same command: the
// same frame count, durations within a frame, audio in sync, a PSNR within 0.5 dB, and no
// frame more than 3 dB below the same frame of the single pass (a seam).
func checkStitched(t testing.TB, split, whole, source string) {
	t.Helper()
	const frame = 1.0 / 25
	s, w := probeFacts(t, split), probeFacts(t, whole)
	if s.Frames != w.Frames {
		t.Errorf("stitched output has %d frames, the single-pass one %d", s.Frames, w.Frames)
	}
	if math.Abs(s.VDur-w.VDur) > frame || math.Abs(s.VStart-w.VStart) > frame {
		t.Errorf("stitched video starts at %.3f for %.3f s, single-pass at %.3f for %.3f s", s.VStart, s.VDur, w.VStart, w.VDur)
	}
	if !s.Audio || math.Abs(s.AStart-w.AStart) > frame || math.Abs(s.ADur-w.ADur) > frame {
		t.Errorf("stitched audio (%v) starts at %.3f for %.3f s, single-pass at %.3f for %.3f s", s.Audio, s.AStart, s.ADur, w.AStart, w.ADur)
	}
	ps, pw := psnrOf(t, split, source), psnrOf(t, whole, source)
	if ps < pw-0.5 {
		t.Errorf("stitched PSNR %.2f dB, single-pass %.2f dB: more than 0.5 dB below", ps, pw)
	}
	drop := worstFrameDrop(t, split, whole, source)
	if drop > 3 {
		t.Errorf("a stitched frame is %.2f dB below the same frame of the single pass: more than 3 dB", drop)
	}
	t.Logf("stitched: %d frames, PSNR %.2f dB; single pass: %d frames, PSNR %.2f dB; worst frame %.2f dB below the single pass's", s.Frames, ps, w.Frames, pw, drop)
}

const splitCommand = "ffmpeg -i in.mp4 -vf scale=iw:ih,format=yuv420p -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 96k out.mp4"

// TestSplitAndStitch: through the binary, on both stores, a Pro job asking params.split auto
// is cut into parts that the in-process runner's two slots encode at once, joined with its
// audio, and completes as one job with one charge, its output the single-pass encode's within
// a frame, 0.5 dB and 3 dB a frame (the 6 s cut is off x264's 250-frame keyframe grid, which the
// second part follows); a command that cannot be split runs whole and says why; Free may not ask.
func TestSplitAndStitch(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Backend: b, Unthrottled: true, Env: map[string]string{"MEDIAJOBS_SPLIT_MIN_SECONDS": "4", "MEDIAJOBS_SLOTS": "2"}})
		key := createAccount(t, srv, "pro").APIKey
		c := newClient(t, srv, key)
		src := makeSplitSource(t, 12, "320x180")
		dir := t.TempDir()
		source := filepath.Join(dir, "in.mp4")
		if err := os.WriteFile(source, src, 0o644); err != nil {
			t.Fatal(err)
		}
		up := c.uploadRaw("src.mp4", src)
		inputs := map[string]any{"in.mp4": map[string]any{"url": up.URL}}

		t.Run("split", func(t *testing.T) {
			c := newClient(t, srv, key)
			id := c.submit(ffmpegJob(splitCommand, inputs, map[string]any{"split": "auto"}))
			j := c.waitTerminal(id)
			if j.Status != "complete" {
				t.Fatalf("split job %s: %s %s", id, j.Status, errorText(j))
			}
			var v splitView
			c.do(http.MethodGet, "/jobs/"+id, nil, nil).decode(t, http.StatusOK, &v)
			if v.Split == nil || v.Split.Parts != 2 || v.Split.Reason != "" {
				t.Fatalf("split = %+v, want 2 parts", v.Split)
			}
			chargedOnce(t, c, id)
			whole := filepath.Join(dir, "whole.mp4")
			if err := ffmpegBare(context.Background(), dir, append(strings.Fields(splitCommand)[1:len(strings.Fields(splitCommand))-1], "whole.mp4")...); err != nil {
				t.Fatal(err)
			}
			splitDir := t.TempDir()
			checkStitched(t, c.download(j, splitDir), whole, source)
			var page []jobView
			c.do(http.MethodGet, "/jobs?limit=100", nil, nil).decode(t, http.StatusOK, &page)
			if len(page) != 1 || page[0].ID != id {
				t.Errorf("GET /jobs lists %d jobs, want the split job alone (its parts are hidden)", len(page))
			}
		})

		t.Run("input in the command", func(t *testing.T) {
			// The input's URL stands in the command itself: each part reads it under the name
			// the plan gave it.
			c := newClient(t, srv, key)
			command := strings.Replace(splitCommand, "-i in.mp4", "-i "+up.URL, 1)
			id := c.submit(ffmpegJob(command, nil, map[string]any{"split": "auto"}))
			if j := c.waitTerminal(id); j.Status != "complete" {
				t.Fatalf("split job %s: %s %s", id, j.Status, errorText(j))
			}
			var v splitView
			c.do(http.MethodGet, "/jobs/"+id, nil, nil).decode(t, http.StatusOK, &v)
			if v.Split == nil || v.Split.Parts != 2 || v.Split.Reason != "" {
				t.Fatalf("split = %+v, want 2 parts", v.Split)
			}
		})

		t.Run("not splittable", func(t *testing.T) {
			newClient(t, srv, key).runsWhole(ffmpegJob("ffmpeg -i in.mp4 -vf fps=10 -c:v libx264 -preset ultrafast out.mp4", inputs, map[string]any{"split": "auto"}), "fps")
			// A bitrate is met per part: the parts would not match the single pass.
			newClient(t, srv, key).runsWhole(ffmpegJob("ffmpeg -i in.mp4 -c:v libx264 -preset ultrafast -b:v 300k out.mp4", inputs, map[string]any{"split": "auto"}), "a bitrate is met over each part")
		})

		t.Run("too short", func(t *testing.T) {
			c := newClient(t, srv, key)
			short := c.uploadRaw("short.mp4", makeSplitSource(t, 2, "160x90"))
			c.runsWhole(ffmpegJob(splitCommand, map[string]any{"in.mp4": map[string]any{"url": short.URL}}, map[string]any{"split": "auto"}), "under 4 s")
		})

		t.Run("refused", func(t *testing.T) {
			c := newClient(t, srv, key)
			free := newClient(t, srv, createAccount(t, srv, "free").APIKey)
			if e := free.do(http.MethodPost, "/jobs", ffmpegJob(splitCommand, inputs, map[string]any{"split": "auto"}), nil).errorOf(t, http.StatusForbidden); e.Code != "PLAN_LIMIT" {
				t.Errorf("Free asking for a split: %+v, want PLAN_LIMIT", e)
			}
			if e := c.do(http.MethodPost, "/jobs", ffmpegJob(splitCommand, inputs, map[string]any{"split": "fast"}), nil).errorOf(t, http.StatusBadRequest); !strings.Contains(e.Message, "params.split") {
				t.Errorf("params.split fast: %+v, want a VALIDATION_ERROR naming params.split", e)
			}
		})
	})
}

// TestSplitPartWorkerKilled: on a fleet of three one-slot workers, a split job's two parts (its
// 12-second input makes parts of 5 seconds at least) run on the workers at once; the worker of
// a part (not the job's own) is killed with SIGKILL.
// Its part goes back to the queue when its lease lapses and another worker encodes it again:
// the job completes with every frame, charged once.
func TestSplitPartWorkerKilled(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, tr transport, b backend) {
		srv, control := fleetOn(t, tr, b, map[string]string{"MEDIAJOBS_SPLIT_MIN_SECONDS": "4"})
		killPartWorker(t, srv, control)
	})
}

// killPartWorker runs a split job on three one-slot workers of control and kills the worker of
// one of its parts mid-encode.
func killPartWorker(t *testing.T, srv *server, control string) {
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	var workers []*worker
	for range 3 {
		workers = append(workers, startWorker(t, control, 1))
	}
	waitUntil(t, "three workers running", 30*time.Second, func() bool {
		for _, w := range workers {
			if !strings.Contains(w.log.String(), "mediajobs worker running") {
				return false
			}
		}
		return true
	})
	src := makeSplitSource(t, 12, "640x360")
	up := c.uploadRaw("src.mp4", src)
	// A slow preset, so that each part runs long enough to be killed mid-encode.
	command := strings.Replace(splitCommand, "veryfast", "slow", 1)
	id := c.submit(ffmpegJob(command, map[string]any{"in.mp4": map[string]any{"url": up.URL}}, map[string]any{"split": "auto"}))

	var victim *worker
	waitUntil(t, "a part running on a worker other than the job's", 60*time.Second, func() bool {
		for _, w := range workers {
			if w.holds(id) {
				continue
			}
			for _, pid := range processesWith("split_part_") {
				if descends(pid, w.cmd.Process.Pid) {
					victim = w
					return true
				}
			}
		}
		return false
	})
	victim.kill()
	t.Logf("killed worker %s while it encoded a part of job %s", victim.Name, id)
	j := c.waitWithin(id, "the job to end", 3*time.Minute, func(j jobView) bool { return terminal[j.Status] })
	if j.Status != "complete" {
		t.Fatalf("job %s: %s %s", id, j.Status, errorText(j))
	}
	var v splitView
	c.do(http.MethodGet, "/jobs/"+id, nil, nil).decode(t, http.StatusOK, &v)
	if v.Split == nil || v.Split.Parts != 2 {
		t.Fatalf("split = %+v, want 2 parts", v.Split)
	}
	chargedOnce(t, c, id)
	out := c.download(j, t.TempDir())
	if f := probeFacts(t, out); f.Frames != 12*25 || !f.Audio {
		t.Errorf("output has %d frames (audio %v), want %d with audio", f.Frames, f.Audio, 12*25)
	}
}

// chargedOnce waits for the job's charge in the ledger, appended just after the job completes,
// and checks that it is the only one.
func chargedOnce(t *testing.T, c *client, id string) {
	t.Helper()
	n := 0
	waitUntil(t, "the job's charge in the ledger", 10*time.Second, func() bool { n = charges(t, c)[id]; return n > 0 })
	if n != 1 {
		t.Errorf("job %s has %d charges, want 1", id, n)
	}
}

// runsWhole submits a job asking to be split that runs whole, and checks that it completes and
// that its split names reason.
func (c *client) runsWhole(body map[string]any, reason string) {
	c.t.Helper()
	id := c.submit(body)
	if j := c.waitTerminal(id); j.Status != "complete" {
		c.t.Fatalf("job %s: %s %s", id, j.Status, errorText(j))
	}
	var v splitView
	c.do(http.MethodGet, "/jobs/"+id, nil, nil).decode(c.t, http.StatusOK, &v)
	if v.Split == nil || v.Split.Parts != 0 || !strings.Contains(v.Split.Reason, reason) {
		c.t.Fatalf("split = %+v, want no parts and a reason naming %q", v.Split, reason)
	}
}

// holds says whether the worker has a work directory of the job: it runs it.
func (w *worker) holds(jobID string) bool {
	m, _ := filepath.Glob(filepath.Join(w.Work, jobID+"-*"))
	return len(m) > 0
}

// descends says whether process pid has ancestor among its parents.
func descends(pid, ancestor int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
		if pid == ancestor {
			return true
		}
	}
	return false
}
