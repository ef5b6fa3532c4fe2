package integration

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/diskcheck"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// The trivial FFmpeg command: a few frames of a test pattern to one small file.
const trivialCommand = "ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -frames:v 5 -pix_fmt yuv420p out.mp4"

var trivialArgs = []string{"-f", "lavfi", "-i", "testsrc=duration=1:size=64x48:rate=10", "-frames:v", "5", "-pix_fmt", "yuv420p", "out.mp4"}

// productionLease puts a benchmark's fleet server back on the default lease: the tests' short one
// settles a lost worker's jobs within seconds, but sweeps for lost leases every 750 ms and asks
// for a heartbeat a second, which is no deployment's cost.
var productionLease = map[string]string{"MEDIAJOBS_LEASE": "30s"}

// benchFleet starts a server and, over tr, workers runners of concurrency slots each; no
// transport (""): the server's in-process runner with concurrency slots. The store is SQLite
// throughout, so that only the transport differs.
func benchFleet(b *testing.B, tr transport, workers, concurrency int) (*server, []*worker) {
	if tr == "" {
		return startServer(b, serverOpts{Backend: sqliteBackend, Unthrottled: true,
			Env: map[string]string{"MEDIAJOBS_SLOTS": fmt.Sprint(concurrency)}}), nil
	}
	srv, control := fleetOn(b, tr, sqliteBackend, productionLease)
	var ws []*worker
	for range workers {
		ws = append(ws, startWorker(b, control, concurrency))
	}
	return srv, ws
}

// serviceCPU is the CPU the server and the workers' own processes (not their sandboxes) have
// spent so far, the server's and the workers' apart.
func serviceCPU(srv *server, ws []*worker) (server, workers time.Duration) {
	for _, w := range ws {
		workers += procCPU("/proc/" + strconv.Itoa(w.cmd.Process.Pid))
	}
	return srv.cpuUsage().server, workers
}

// machineCPU is the CPU every process of the machine has spent so far (user, nice, system,
// interrupts), from /proc/stat; zero where it cannot be read.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// BenchmarkDispatch measures dispatch latency, submit → running (the job's startedAt minus its
// createdAt, both stamped by the control plane), one job at a time so that nothing queues, on
// each transport. Goals: p99 ≤ 20 ms in process, ≤ 100 ms across processes.
func BenchmarkDispatch(b *testing.B) {
	for _, tr := range []transport{"", transportHTTP, transportNATS} {
		name := string(tr)
		if tr == "" {
			name = "InProcess"
		}
		b.Run(name, func(b *testing.B) {
			srv, _ := benchFleet(b, tr, 1, 1)
			c := newClient(b, srv, createAccount(b, srv, "pro").APIKey)
			c.complete(ffmpegJob(trivialCommand, nil, nil)) // warm
			const n = 40
			var lat []time.Duration
			for range n {
				j := c.complete(ffmpegJob(trivialCommand, nil, nil))
				if j.StartedAt == nil {
					b.Fatalf("job %s has no startedAt", j.ID)
				}
				lat = append(lat, time.Duration(*j.StartedAt-j.CreatedAt)*time.Millisecond)
			}
			b.ReportMetric(ms(percentile(lat, 50)), "median-ms")
			b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
			b.Logf("%s: dispatch (submit → running) over %d jobs: median %v, p99 %v", name, n, percentile(lat, 50), percentile(lat, 99))
		})
	}
}

// BenchmarkFleet measures throughput: 40 trivial jobs through 1 and 2 workers of concurrency
// 2 over HTTP, against the same command run bare with the same concurrency (2 and 4 at once),
// and run bare inside the sandbox (bubblewrap, as every job runs): the gap between those two is
// the sandbox's, which no job skips; the gap between the sandboxed run and the fleet is the
// service's (claims, leases, uploads, the store). Goal: the fleet within 10% of sandboxed.
//
// The three runs take turns, five rounds of each on one fleet, and each share is the median of
// the rounds' own: on a 2-core VM one round of each moved the share between 72% and 103%.
func BenchmarkFleet(b *testing.B) {
	const jobs, concurrency, rounds = 40, 2, 5
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			srv, ws := benchFleet(b, transportHTTP, workers, concurrency)
			if dev, ok, err := diskcheck.Unjournaled(os.TempDir()); err == nil && ok {
				b.Logf("the runs' directories are on an ext4 without a journal (%s), where each file or directory made scans past those removed in the last 30 s, which a fleet makes more of than the sandboxed runs (docs/performance.md, \"The disk under the fleet\")", dev)
			}
			c := newClient(b, srv, createAccount(b, srv, "pro").APIKey)
			c.complete(ffmpegJob(trivialCommand, nil, nil)) // warm
			c = c.unchecked()
			var bare, sandboxed, fleet, ofBare, ofSandboxed []float64
			// Where the fleet's CPU goes, per job: the machine's during the sandboxed runs and
			// during the fleet's, and the service's own (server and workers, not their sandboxes).
			var sandboxedCPU, fleetCPU, ownCPU, serverCPU, workersCPU []time.Duration
			for range rounds {
				br := bareRate(b, jobs, workers*concurrency)
				m0 := machineCPU()
				sr := sandboxedRate(b, jobs, workers*concurrency)
				m1 := machineCPU()
				s1, w1 := serviceCPU(srv, ws)
				fr := fleetRate(b, c, jobs)
				m2 := machineCPU()
				s2, w2 := serviceCPU(srv, ws)
				bare, sandboxed, fleet = append(bare, br), append(sandboxed, sr), append(fleet, fr)
				ofBare, ofSandboxed = append(ofBare, fr/br), append(ofSandboxed, fr/sr)
				sandboxedCPU, fleetCPU = append(sandboxedCPU, (m1-m0)/jobs), append(fleetCPU, (m2-m1)/jobs)
				ownCPU = append(ownCPU, (s2-s1+w2-w1)/jobs)
				serverCPU, workersCPU = append(serverCPU, (s2-s1)/jobs), append(workersCPU, (w2-w1)/jobs)
			}
			b.ReportMetric(ms(median(ownCPU)), "service-cpu-ms/job")
			round := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
			b.Logf("CPU per job, medians of %d rounds: the machine's %v sandboxed and %v through the fleet, of which the server's and workers' own %v (the server %v, the workers %v)",
				rounds, round(median(sandboxedCPU)), round(median(fleetCPU)), round(median(ownCPU)), round(median(serverCPU)), round(median(workersCPU)))
			b.ReportMetric(median(fleet), "fleet-jobs/s")
			b.ReportMetric(median(bare), "bare-jobs/s")
			b.ReportMetric(median(sandboxed), "sandboxed-jobs/s")
			b.ReportMetric(median(ofBare), "fleet/bare")
			b.ReportMetric(median(ofSandboxed), "fleet/sandboxed")
			b.Logf("%d worker(s) × %d, medians of %d rounds: %.1f jobs/s through the fleet; at %d at once %.1f jobs/s bare, %.1f in the sandbox: %.0f%% of bare, %.0f%% of sandboxed (rounds %s)",
				workers, concurrency, rounds, median(fleet), workers*concurrency, median(bare), median(sandboxed),
				100*median(ofBare), 100*median(ofSandboxed), percents(ofSandboxed))
		})
	}
}

// fleetRate submits n trivial jobs at once, follows each to its end, and returns jobs per second.
func fleetRate(b *testing.B, c *client, n int) float64 {
	b.Helper()
	start := time.Now()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = c.submit(ffmpegJob(trivialCommand, nil, nil))
	}
	for _, id := range ids {
		if j := c.waitTerminal(id); j.Status != "complete" {
			b.Fatalf("job %s: %s", id, errorText(j))
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// percents writes ratios as whole percents, in their order: "85 91 88".
func percents(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(int(math.Round(100 * x)))
	}
	return strings.Join(parts, " ")
}

// sandboxedRate runs the trivial command n times in the sandbox, at most atOnce in parallel,
// each in a fresh work directory, and returns runs per second.
func sandboxedRate(b *testing.B, n, atOnce int) float64 {
	b.Helper()
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		b.Fatal(err)
	}
	root := dataDir(b)
	sem := make(chan struct{}, atOnce)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			work := filepath.Join(root, fmt.Sprint(i))
			if err := os.Mkdir(work, 0o777); err != nil {
				b.Error(err)
				return
			}
			_ = os.Chmod(work, 0o777) // the sandbox user writes here
			res, err := sb.Run(context.Background(), sandbox.Spec{Dir: work, Program: sandbox.FFmpeg,
				Args: append([]string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y"}, trivialArgs...)})
			if err != nil || res.ExitCode != 0 {
				b.Errorf("sandboxed run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// bareRate runs the trivial command n times with exec, at most at once in parallel, and returns
// runs per second.
func bareRate(b *testing.B, n, atOnce int) float64 {
	b.Helper()
	sem := make(chan struct{}, atOnce)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := ffmpegBare(context.Background(), b.TempDir(), trivialArgs...); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}
