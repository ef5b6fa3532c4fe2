package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

const workerToken = "fleet-worker-token-of-the-tests"

// worker is a running `mediajobs worker`.
type worker struct {
	Name   string
	Work   string // its --work-dir
	cmd    *exec.Cmd
	exited chan struct{}
	log    *lockedBuffer
}

// startWorker runs `mediajobs worker --control control` with a work directory of its own and an
// environment that holds nothing of the control plane's but the worker token: no database, no
// signing key. It is stopped (SIGTERM) when the test ends.
func startWorker(t testing.TB, control string, concurrency int, extra ...string) *worker {
	t.Helper()
	return startWorkerOn(t, "", control, concurrency, extra...)
}

// startWorkerOn is startWorker with the worker, and so every sandbox and FFmpeg it starts, held
// to the CPUs of cpus (taskset's list, "0" or "0-1"); empty: any.
func startWorkerOn(t testing.TB, cpus, control string, concurrency int, extra ...string) *worker {
	t.Helper()
	env := []string{"MEDIAJOBS_WORKER_TOKEN=" + workerToken}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEDIAJOBS_") && !strings.HasPrefix(kv, "SSL_CERT_") {
			env = append(env, kv)
		}
	}
	env = append(env, extra...)
	w := &worker{Name: "w_" + randomHex(3), Work: dataDir(t), log: &lockedBuffer{}, exited: make(chan struct{})}
	args := []string{binary, "worker", "--control", control, "--work-dir", w.Work, "--concurrency", fmt.Sprint(concurrency),
		"--name", w.Name, "--drain-timeout", "5s"}
	if cpus != "" {
		args = append([]string{"taskset", "-c", cpus}, args...)
	}
	w.cmd = exec.Command(args[0], args[1:]...)
	w.cmd.Env = env
	w.cmd.Stdout, w.cmd.Stderr = w.log, w.log
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start mediajobs worker: %v", err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		w.stop(t)
		if t.Failed() {
			t.Logf("worker %s log:\n%s", w.Name, tail(w.log.String(), 6000))
		}
	})
	return w
}

// stop ends the worker with SIGTERM, as an operator would, and waits for it to exit, killing it
// after 20 s.
func (w *worker) stop(t testing.TB) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(20 * time.Second):
		w.kill()
		t.Errorf("worker %s did not stop within 20 s of SIGTERM", w.Name)
	}
}

// kill ends the worker and everything it started with SIGKILL, as a crash would.
func (w *worker) kill() {
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.exited
}

// fleetServer is `serve --runner=false` taking remote workers, with a short lease so that a
// lost worker's jobs are settled within seconds.
func fleetServer(t testing.TB, b backend, env map[string]string) *server {
	t.Helper()
	e := map[string]string{"MEDIAJOBS_RUNNER": "false", "MEDIAJOBS_WORKER_TOKEN": workerToken, "MEDIAJOBS_LEASE": "3s"}
	for k, v := range env {
		e[k] = v
	}
	return startServer(t, serverOpts{Backend: b, Unthrottled: true, Env: e})
}

// pacedCommand runs for about the given seconds at real-time pace, cheaply, writing name.
func pacedCommand(name string, seconds int) string {
	return fmt.Sprintf("ffmpeg -re -f lavfi -i testsrc=duration=%d:size=32x32:rate=5 -c:v mpeg4 %s", seconds, name)
}

// charges counts the ledger's charges per job of the client's account.
func charges(t *testing.T, c *client) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range wholeLedger(t, c) {
		if e.Kind == "charge" {
			out[e.JobID]++
		}
	}
	return out
}

// TestFleet runs jobs on a fleet of an API-only `serve` and two `mediajobs worker` processes
// that own no database. Over HTTP it is the smallest fleet, with nothing but the binary: serve
// on its embedded default (SQLite, local blobs). Over NATS (the broker transport) serve is on
// PostgreSQL and the workers' claims, heartbeats and reports go through JetStream. Jobs run end
// to end with their outputs uploaded back through the lease and served by the API; then one
// worker is killed with SIGKILL mid-run: every job still ends, the lost ones RUNNER_LOST and
// free, none charged twice.
func TestFleet(t *testing.T) {
	t.Parallel()
	forEachTransport(t, func(t *testing.T, tr transport, b backend) {
		srv, control := fleetOn(t, tr, b, nil)
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
		a := startWorker(t, control, 2)
		startWorker(t, control, 2)
		runFleet(t, c, a)
	})
}

// forEachTransport runs fn in parallel subtests, once per transport of the workers: over HTTP
// with serve on SQLite (the smallest fleet), over NATS with serve on PostgreSQL.
func forEachTransport(t *testing.T, fn func(t *testing.T, tr transport, b backend)) {
	for _, tr := range []transport{transportHTTP, transportNATS} {
		t.Run(string(tr), func(t *testing.T) {
			t.Parallel()
			b := sqliteBackend
			if tr == transportNATS {
				b = postgresBackend
			}
			fn(t, tr, b)
		})
	}
}

// transport is how workers reach the control plane.
type transport string

const (
	transportHTTP transport = "HTTP"
	transportNATS transport = "NATS"
)

// fleetOn starts a fleet server on backend b for workers over tr, and returns it with the
// --control of its workers. Over NATS each test has a JetStream stream of its own, so that
// tests running at once never answer each other's workers.
func fleetOn(t testing.TB, tr transport, b backend, env map[string]string) (*server, string) {
	t.Helper()
	if tr == transportHTTP {
		srv := fleetServer(t, b, env)
		return srv, srv.Base
	}
	requireNATS(t)
	control := natsControl()
	e := map[string]string{"MEDIAJOBS_RUNNER_BROKER": control}
	for k, v := range env {
		e[k] = v
	}
	return fleetServer(t, b, e), control
}

// natsControl is the broker URL of a JetStream stream of its own, so that tests running at
// once never answer each other's workers.
func natsControl() string { return "nats://127.0.0.1:4222?stream=IT_" + strings.ToUpper(randomHex(6)) }

// requireNATS ends the test (testenv.Missing) when no NATS server answers on its loopback port.
func requireNATS(t testing.TB) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:4222", time.Second)
	if err != nil {
		testenv.Missing(t, "NATS on 127.0.0.1:4222 (scripts/services.sh starts it)", err)
	}
	_ = c.Close()
}

// runFleet runs short jobs through the fleet, then kills worker a while four paced jobs run
// on the two workers' four slots.
func runFleet(t *testing.T, c *client, a *worker) {
	t.Helper()
	var ids []string
	for i := range 6 {
		ids = append(ids, c.submit(ffmpegJob(fmt.Sprintf("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -pix_fmt yuv420p out%d.mp4", i), nil, nil)))
	}
	for _, id := range ids {
		j := c.waitTerminal(id)
		if j.Status != "complete" || j.Output == nil || j.Output.File == nil {
			t.Fatalf("job %s: %s %s", id, j.Status, errorText(j))
		}
		if body := c.mustGet(j.Output.File.URL); int64(len(body)) != j.Output.File.Size || len(body) == 0 {
			t.Fatalf("job %s: downloaded %d bytes of %d", id, len(body), j.Output.File.Size)
		}
	}

	marker := "fleet_" + randomHex(4)
	var paced []string
	for i := range 4 {
		paced = append(paced, c.submit(ffmpegJob(pacedCommand(fmt.Sprintf("%s_%d.mp4", marker, i), 8), nil, map[string]any{"timeout": 120})))
	}
	for _, id := range paced {
		c.waitFor(id, "running", func(j jobView) bool { return j.Status == "running" })
	}
	// Four FFmpeg processes: both workers' slots are taken.
	deadline := time.Now().Add(30 * time.Second)
	for len(processesWith(marker, "ffmpeg")) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 paced jobs run FFmpeg", len(processesWith(marker, "ffmpeg")))
		}
		time.Sleep(100 * time.Millisecond) // the poll interval of a wait on that state
	}
	a.kill()
	counts := map[string]int{}
	for _, id := range paced {
		j := c.waitTerminal(id)
		switch {
		case j.Status == "complete":
			counts["complete"]++
		case j.Status == "failed" && j.Error.Code == "RUNNER_LOST" && j.Error.Retryable && j.Cost != nil && j.Cost.Amount == 0:
			counts["lost"]++
		default:
			t.Errorf("job %s ended %s: %s (cost %+v)", id, j.Status, errorText(j), j.Cost)
		}
	}
	if counts["complete"] != 2 || counts["lost"] != 2 {
		t.Errorf("after killing a worker: %v, want the survivor's 2 complete and the lost worker's 2 RUNNER_LOST", counts)
	}
	for id, n := range charges(t, c) {
		if n != 1 {
			t.Errorf("job %s charged %d times", id, n)
		}
	}
	waitNoProcesses(t, marker)
}

// waitNoProcesses waits until no process with marker is left: a killed worker's sandboxes die
// with it.
func waitNoProcesses(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(processesWith(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes with %q outlive their workers: %v", marker, processesWith(marker))
		}
		time.Sleep(100 * time.Millisecond) // the poll interval of a wait on that state
	}
}

// TestControlPlaneRestart: serve restarts while its workers run jobs. The workers keep
// running them, re-send what the control plane does not take while it is down, and the results
// are taken after the restart: every job completes, none is charged twice.
func TestControlPlaneRestart(t *testing.T) {
	t.Parallel()
	for _, tr := range []transport{transportHTTP, transportNATS} {
		t.Run(string(tr), func(t *testing.T) {
			t.Parallel()
			testControlPlaneRestart(t, tr)
		})
	}
}

func testControlPlaneRestart(t *testing.T, tr transport) {
	srv, control := fleetOn(t, tr, postgresBackend, nil)
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	startWorker(t, control, 2)
	marker := "restart_" + randomHex(4)
	var ids []string
	for i := range 2 {
		ids = append(ids, c.submit(ffmpegJob(pacedCommand(fmt.Sprintf("%s_%d.mp4", marker, i), 6), nil, map[string]any{"timeout": 120})))
	}
	for _, id := range ids {
		c.waitFor(id, "running", func(j jobView) bool { return j.Status == "running" })
	}
	srv.stop(t)
	time.Sleep(2 * time.Second) // down for a while: heartbeats fail and are retried
	srv.start(t)
	for _, id := range ids {
		if j := c.waitTerminal(id); j.Status != "complete" {
			t.Fatalf("job %s after the restart: %s %s", id, j.Status, errorText(j))
		}
	}
	for id, n := range charges(t, c) {
		if n != 1 {
			t.Errorf("job %s charged %d times", id, n)
		}
	}
}

// TestWorkerMetrics: a worker started with --metrics-addr counts its runs by outcome, times
// their phases, and counts its slots at /metrics; with --pprof-addr it serves Go's profiles on that address.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	srv := fleetServer(t, sqliteBackend, nil)
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	addr, pprofAddr := freeAddr(t), freeAddr(t)
	startWorker(t, srv.Base, 3, "MEDIAJOBS_METRICS_ADDR="+addr, "MEDIAJOBS_PPROF_ADDR="+pprofAddr)
	if j := c.complete(ffmpegJob(trivialCommand, nil, nil)); j.Status != "complete" {
		t.Fatalf("job: %s %s", j.Status, errorText(j))
	}
	// The profiles listen before the worker claims: it is up once a job has run.
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(cmdline), "worker") {
		t.Fatalf("worker /debug/pprof/cmdline: %d %q", resp.StatusCode, cmdline)
	}
	wants := []string{
		`mediajobs_worker_runs_total{class="cpu",outcome="complete",type="ffmpeg"} 1`,
		`mediajobs_worker_slots{class="cpu"} 3`,
		`mediajobs_worker_slots_busy{class="cpu"} 0`,
		`mediajobs_worker_run_seconds_count{class="cpu",outcome="complete",type="ffmpeg"} 1`,
		`mediajobs_worker_run_phase_seconds_count{class="cpu",phase="stage",type="ffmpeg"} 1`,
		`mediajobs_worker_run_phase_seconds_count{class="cpu",phase="compute",type="ffmpeg"} 1`,
		`mediajobs_worker_run_phase_seconds_count{class="cpu",phase="store",type="ffmpeg"} 1`,
		`mediajobs_worker_run_phase_seconds_count{class="cpu",phase="report",type="ffmpeg"} 1`,
	}
	// The worker counts a run once the control plane has acknowledged its report, which a
	// client following the job may hear of first.
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		missing := slices.DeleteFunc(slices.Clone(wants), func(w string) bool { return strings.Contains(string(body), w) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker /metrics lacks %s:\n%s", strings.Join(missing, ", "), tail(string(body), 3000))
		}
		time.Sleep(20 * time.Millisecond) // the poll interval of a wait on the worker's metrics
	}
}

// TestWorkerKeepsItsOwnCPUsFew: a worker process runs its own Go code on one CPU in eight (at
// least one), leaving the rest to its sandboxes, unless GOMAXPROCS says otherwise.
func TestWorkerKeepsItsOwnCPUsFew(t *testing.T) {
	t.Parallel()
	_, control := fleetOn(t, transportHTTP, sqliteBackend, nil)
	byDefault := startWorker(t, control, 1)
	set := startWorker(t, control, 1, "GOMAXPROCS=3")
	for _, tt := range []struct {
		w    *worker
		want string
	}{
		{byDefault, fmt.Sprintf(`"goProcs":%d`, max(1, runtime.NumCPU()/8))},
		{set, `"goProcs":3`},
	} {
		waitUntil(t, "worker running", 30*time.Second, func() bool {
			return strings.Contains(tt.w.log.String(), "mediajobs worker running")
		})
		if log := tt.w.log.String(); !strings.Contains(log, tt.want) {
			t.Errorf("worker's log has no %s:\n%s", tt.want, tail(log, 2000))
		}
	}
}
