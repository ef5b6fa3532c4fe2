package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSplit sets split and stitch beside a single-slot run: a 60-second 720p H.264 + AAC
// encode (params.split auto) through a fleet over HTTP, once on one worker of one slot (the
// job runs whole: the class has one slot) and once on two workers of one slot each, every
// worker held to one core of its own (taskset). It prints both times, the speed-up (goal: 1.7×
// on two cores) and the quality of the stitched output against the single-pass one: frames,
// duration and audio start (within a frame), PSNR and SSIM against the source (within 0.5 dB),
// and the largest drop of one frame's PSNR below the same frame's in the single pass (3 dB).
// On a machine of 9 CPUs or more it also runs eight workers of one slot each (goal: 5× the one
// slot). Each worker is pinned to a physical core of its own where the machine has enough
// (physicalCores): two hardware threads of one core are not two cores. Each run is timed from
// the submit to the end a GET ?wait= hears of, not to a poll's next look. The one-slot and
// two-slot runs take turns, three rounds of each, and the figures are the rounds' medians, the
// speed-up the median of the rounds' own: in one `make bench` a single pair measured 1.64× where
// the same build measured 1.87× alone just after. The quality is the first round's.
//
// SPLIT_DEBUG=DIR keeps each run's control-plane log there (serve-1-r1.log, serve-2-r1.log,
// serve-8.log), whose "job dispatched" and "split part reported" lines time the parts, and its
// workers' logs (worker-2-r1-1.log, ...).
func BenchmarkSplit(b *testing.B) {
	dir := b.TempDir()
	source := filepath.Join(dir, "in.mp4")
	if err := ffmpegBare(context.Background(), dir, "-f", "lavfi", "-i", "testsrc2=duration=60:size=1280x720:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=60", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50",
		"-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", "in.mp4"); err != nil {
		b.Fatal(err)
	}
	src, err := os.ReadFile(source)
	if err != nil {
		b.Fatal(err)
	}
	const command = "ffmpeg -i in.mp4 -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 128k out.mp4"
	run := func(round int, cpus ...string) (time.Duration, string, splitView) {
		srv := fleetServer(b, sqliteBackend, nil)
		var workers []*worker
		for _, cpu := range cpus {
			workers = append(workers, startWorkerOn(b, cpu, srv.Base, 1))
		}
		c := newClient(b, srv, createAccount(b, srv, "pro").APIKey)
		up := c.uploadRaw("in.mp4", src)
		c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -pix_fmt yuv420p warm.mp4", nil, nil))
		start := time.Now()
		id := c.submit(ffmpegJob(command, map[string]any{"in.mp4": map[string]any{"url": up.URL}}, map[string]any{"split": "auto"}))
		j := c.waitTerminalWithin(id, 10*time.Minute)
		took := time.Since(start)
		if j.Status != "complete" {
			b.Fatalf("job %s: %s %s", id, j.Status, errorText(j))
		}
		var v splitView
		c.do("GET", "/jobs/"+id, nil, nil).decode(b, 200, &v)
		out := filepath.Join(b.TempDir(), "out.mp4")
		if err := os.WriteFile(out, c.mustGet(j.Output.File.URL), 0o644); err != nil {
			b.Fatal(err)
		}
		if d := os.Getenv("SPLIT_DEBUG"); d != "" {
			tag := fmt.Sprintf("%d-r%d", len(cpus), round)
			if round == 0 {
				tag = strconv.Itoa(len(cpus))
			}
			_ = os.WriteFile(filepath.Join(d, "serve-"+tag+".log"), []byte(srv.log.String()), 0o644)
			for i, w := range workers {
				_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("worker-%s-%d.log", tag, i+1)), []byte(w.log.String()), 0o644)
			}
		}
		// The next run has the machine to itself: no idle fleet polls beside it.
		for _, w := range workers {
			w.stop(b)
		}
		srv.stop(b)
		return took, out, v
	}
	allowed := allowedCPUs()
	cores := physicalCores(allowed)
	const rounds = 3
	var ones, twos []time.Duration
	var speedups []float64
	var whole, split string
	var v1, v2 splitView
	oneCPU, twoCPUs := pinned(b, cores, allowed, 1), pinned(b, cores, allowed, 2)
	for r := 1; r <= rounds; r++ {
		one, w, a := run(r, oneCPU...)
		two, s, c := run(r, twoCPUs...)
		if a.Split == nil || a.Split.Parts != 0 || c.Split == nil || c.Split.Parts != 2 {
			b.Fatalf("round %d: one slot split into %+v, two slots into %+v: want whole and 2 parts", r, a.Split, c.Split)
		}
		if r == 1 {
			whole, split, v1, v2 = w, s, a, c
		}
		ones, twos, speedups = append(ones, one), append(twos, two), append(speedups, one.Seconds()/two.Seconds())
	}
	one, two, speedup := median(ones), median(twos), median(speedups)
	const frame = 1.0 / 25
	s, w := probeFacts(b, split), probeFacts(b, whole)
	ps, pw := psnrOf(b, split, source), psnrOf(b, whole, source)
	ss, sw := ssimOf(b, split, source), ssimOf(b, whole, source)
	drop := worstFrameDrop(b, split, whole, source)
	b.ReportMetric(one.Seconds(), "1-slot-s")
	b.ReportMetric(two.Seconds(), "2-slots-s")
	b.ReportMetric(speedup, "speedup")
	b.ReportMetric(pw-ps, "psnr-loss-dB")
	b.ReportMetric(drop, "worst-frame-drop-dB")
	b.Logf("60 s 720p encode, medians of %d rounds: 1 slot %.1f s (whole: %s), 2 slots %.1f s (%d parts): %.2fx (goal 1.7x; rounds %s)",
		rounds, one.Seconds(), v1.Split.Reason, two.Seconds(), v2.Split.Parts, speedup, strings.Join(ratios(speedups), " "))
	b.Logf("quality: frames %d stitched / %d single pass; video %.3f / %.3f s; audio starts %.3f / %.3f s (a frame is %.3f s)",
		s.Frames, w.Frames, s.VDur, w.VDur, s.AStart, w.AStart, frame)
	b.Logf("quality: PSNR %.2f / %.2f dB (goal: within 0.5 dB), SSIM %.4f / %.4f, worst frame %.2f dB below the same frame of the single pass (goal 3 dB)",
		ps, pw, ss, sw, drop)

	// 8 slots against 1 needs 8 physical cores for the workers and a CPU more for the control
	// plane.
	if len(allowed) < 9 || len(cores) < 8 {
		b.Logf("8 slots against 1 (goal 5x): not run, this machine has %d CPUs and %d physical cores; it needs 9 and 8", len(allowed), len(cores))
		return
	}
	eight, split8, v8 := run(0, pinned(b, cores, allowed, 8)...)
	if v8.Split == nil || v8.Split.Parts < 2 {
		b.Fatalf("eight slots split into %+v: want parts", v8.Split)
	}
	s8 := probeFacts(b, split8)
	b.ReportMetric(eight.Seconds(), "8-slots-s")
	b.ReportMetric(one.Seconds()/eight.Seconds(), "speedup-8")
	b.Logf("60 s 720p encode: 1 slot %.1f s, 8 slots %.1f s (%d parts): %.2fx (goal 5x)",
		one.Seconds(), eight.Seconds(), v8.Split.Parts, one.Seconds()/eight.Seconds())
	b.Logf("quality of the %d parts: frames %d; video %.3f s; audio starts %.3f s; PSNR %.2f dB, SSIM %.4f, worst frame %.2f dB below the single pass's",
		v8.Split.Parts, s8.Frames, s8.VDur, s8.AStart, psnrOf(b, split8, source), ssimOf(b, split8, source), worstFrameDrop(b, split8, whole, source))
}

// physicalCores lists one CPU of each physical core among the allowed CPUs, the first of the
// core's hardware threads (topology/core_cpus_list), so that workers pinned to them never share
// a core. A CPU whose topology cannot be read counts as a core of its own.
func physicalCores(allowed []int) []string {
	var cores []string
	seen := map[string]bool{}
	for _, cpu := range allowed {
		key := strconv.Itoa(cpu)
		if b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/core_cpus_list", cpu)); err == nil {
			key = strings.TrimSpace(string(b))
		}
		if !seen[key] {
			seen[key] = true
			cores = append(cores, strconv.Itoa(cpu))
		}
	}
	return cores
}

// allowedCPUs is the CPUs this process may run on (a cpuset or offline CPUs leave gaps), from
// the Cpus_allowed_list of /proc/self/status ("0-3,8-11"); where that cannot be read, 0 to
// NumCPU-1.
func allowedCPUs() []int {
	status, _ := os.ReadFile("/proc/self/status")
	var cpus []int
	for line := range strings.Lines(string(status)) {
		if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			for part := range strings.SplitSeq(strings.TrimSpace(list), ",") {
				lo, hi, isRange := strings.Cut(part, "-")
				if !isRange {
					hi = lo
				}
				a, err1 := strconv.Atoi(lo)
				z, err2 := strconv.Atoi(hi)
				if err1 != nil || err2 != nil {
					cpus = nil
					break
				}
				for c := a; c <= z; c++ {
					cpus = append(cpus, c)
				}
			}
		}
	}
	if len(cpus) == 0 {
		for c := range runtime.NumCPU() {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// pinned is the CPUs of n workers: n physical cores, or where the machine has fewer, the first
// n allowed CPUs, saying so.
func pinned(tb testing.TB, cores []string, allowed []int, n int) []string {
	tb.Helper()
	if len(cores) >= n {
		tb.Logf("%d workers on CPUs %v, one physical core each", n, cores[:n])
		return cores[:n]
	}
	tb.Logf("%d workers: this machine has %d physical cores, so some workers share one", n, len(cores))
	if len(allowed) < n {
		tb.Fatalf("%d workers need %d CPUs; this process may use %d", n, n, len(allowed))
	}
	var cpus []string
	for _, c := range allowed[:n] {
		cpus = append(cpus, strconv.Itoa(c))
	}
	return cpus
}

// worstFrameDrop is the most one frame of split's PSNR against the source falls below the same
// frame of whole's, in dB.
func worstFrameDrop(tb testing.TB, split, whole, source string) float64 {
	tb.Helper()
	a, w := framePSNR(tb, split, source), framePSNR(tb, whole, source)
	worst := 0.0
	for i := range min(len(a), len(w)) {
		worst = max(worst, w[i]-a[i])
	}
	return worst
}

// framePSNR is each frame's PSNR (psnr_avg) of a file's video against the source's.
func framePSNR(tb testing.TB, path, source string) []float64 {
	tb.Helper()
	stats := filepath.Join(tb.TempDir(), "psnr.log")
	if out, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-i", path, "-i", source, "-lavfi",
		"[0:v][1:v]psnr=stats_file="+stats, "-f", "null", "-").CombinedOutput(); err != nil {
		tb.Fatalf("psnr: %v\n%s", err, out)
	}
	f, err := os.Open(stats)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		for _, field := range strings.Fields(sc.Text()) {
			if v, ok := strings.CutPrefix(field, "psnr_avg:"); ok {
				p, err := strconv.ParseFloat(v, 64)
				if err != nil {
					p = 100 // "inf": identical frames
				}
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		tb.Fatal(fmt.Sprintf("%s: no per-frame PSNR", stats))
	}
	return out
}

// ratios writes speed-ups as "1.87x", in their order.
func ratios(xs []float64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatFloat(x, 'f', 2, 64) + "x"
	}
	return out
}
