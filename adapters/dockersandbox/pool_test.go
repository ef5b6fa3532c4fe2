package dockersandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"
)

// newPool is a warm pool over sb whose work directories sit beside the tests' (one filesystem),
// full before it is returned.
func newPool(t testing.TB, sb *Sandbox, size int) *Pool {
	t.Helper()
	root, err := os.MkdirTemp("", "docker-warm-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(context.Background(), sb, PoolConfig{Size: size, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		if ids := ownContainers(t, sb); len(ids) != 0 {
			t.Errorf("after Close, containers %v of owner %s are left", ids, sb.cfg.Owner)
		}
		_ = os.RemoveAll(root)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitFull(ctx); err != nil {
		t.Fatalf("the pool did not fill: %v", err)
	}
	return p
}

// ownContainers lists the containers of sb's owner, running or not.
func ownContainers(t testing.TB, sb *Sandbox) []string {
	t.Helper()
	list, err := sb.cli.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", ownerLabel+"="+sb.cfg.Owner),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// waitContainer waits, through the engine, for the container id to meet cond, or to be gone
// (waitOrGone).
func waitContainer(t *testing.T, sb *Sandbox, id string, cond container.WaitCondition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wait := sb.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: cond})
	if err := waitOrGone(ctx, sb.cli, id, wait); err != nil {
		t.Fatalf("container %s, waiting for %s: %v", id, cond, err)
	}
}

// TestPoolSuite holds the warm containers to the suite every sandbox passes, each run in a warm
// container: the same caps, deadlines and results as a cold container's.
func TestPoolSuite(t *testing.T) {
	t.Parallel()
	sb := available(t, Config{Owner: testOwner("pool-suite")})
	shellSB := available(t, Config{Owner: testOwner("pool-suite-shell"), Programs: withShell()})
	p, shell := newPool(t, sb, 2), newPool(t, shellSB, 1)
	t.Cleanup(func() {
		if p.WarmRuns() == 0 || shell.WarmRuns() == 0 {
			t.Errorf("warm runs: %d and %d (shell): every run started cold", p.WarmRuns(), shell.WarmRuns())
		}
	})
	sandboxtest.TestRunner(t, sandboxtest.Features{OwnSystem: true, Shell: func(*testing.T) sandbox.Runner { return sandboxtest.WarmOnly(shell) }},
		func(t *testing.T) sandbox.Runner { return sandboxtest.WarmOnly(p) })
}

// TestPoolRunsWarm: a run takes a started container, whose launcher runs the program in the
// container's work directory with the staged files and hands the outputs back; the container is
// removed and replaced, and nothing is left behind.
func TestPoolRunsWarm(t *testing.T) {
	t.Parallel()
	sb := available(t, Config{Owner: testOwner("pool-warm")})
	p := newPool(t, sb, 1)
	dir := workDir(t)
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("staged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	used := ownContainers(t, sb)
	res, err := p.Run(ctx, sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Timeout: time.Minute, Args: probeArgs("out.png")})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
	}
	if p.WarmRuns() != 1 {
		t.Fatalf("WarmRuns = %d, want 1", p.WarmRuns())
	}
	for _, name := range []string{"in.txt", "out.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s after the run: %v", name, err)
		}
	}
	// The used container is removed, and its place taken by a fresh one.
	waitContainer(t, sb, used[0], container.WaitConditionRemoved)
	if err := p.WaitFull(ctx); err != nil {
		t.Fatal(err)
	}
	if now := ownContainers(t, sb); len(now) != 1 || now[0] == used[0] {
		t.Errorf("containers %v after the run, want one other than the used %s", now, used[0])
	}

	// A program outside the allowlist runs in no container, warm or cold.
	if _, err := p.Run(ctx, sandbox.Spec{Dir: dir, Program: "/bin/sh"}); !errors.Is(err, sandbox.ErrProgramNotAllowed) {
		t.Errorf("run /bin/sh: %v, want ErrProgramNotAllowed", err)
	}
}

// TestPoolNeedsTheLauncher: an image without the launcher's label is not pooled, and the error
// says what to do.
func TestPoolNeedsTheLauncher(t *testing.T) {
	t.Parallel()
	sb := available(t, Config{})
	other, err := New(Config{Image: baseImage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	_, err = NewPool(context.Background(), other, PoolConfig{Size: 1, Root: t.TempDir()})
	if !errors.Is(err, ErrNoLauncher) || !strings.Contains(err.Error(), LauncherLabel) {
		t.Errorf("NewPool over %s: %v, want ErrNoLauncher naming %s", baseImage, err, LauncherLabel)
	}
	_ = sb
}

// baseImage is the Debian image make images builds the others from: no launcher in it.
const baseImage = "debian:bookworm-slim"

// workDir is a work directory the sandbox user can reach.
func workDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// BenchmarkPoolRun runs a one-frame FFmpeg command in a fresh container and in a warm one (the
// pool full before each run): what the pool takes off a step's path.
func BenchmarkPoolRun(b *testing.B) {
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(b *testing.B) {
			sb := availableTB(b, Config{Owner: testOwner("pool-bench-" + strconv.FormatBool(warm))})
			var r sandbox.Runner = sb
			var p *Pool
			if warm {
				p = newPool(b, sb, 1)
				r = p
			}
			dir := workDir(b)
			var took time.Duration
			for b.Loop() {
				if p != nil {
					b.StopTimer()
					if err := p.WaitFull(context.Background()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				t0 := time.Now()
				res, err := r.Run(context.Background(), sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Timeout: time.Minute, Args: []string{
					"-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=size=16x16:duration=0.04", "-frames:v", "1", "out.png",
				}})
				took += time.Since(t0)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
				}
			}
			b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/run")
		})
	}
}

// TestPoolFallsBackFromADeadContainer: a warm container whose launcher died while it waited
// (killed, its attach stream broken) runs nothing; the run starts cold instead and succeeds.
func TestPoolFallsBackFromADeadContainer(t *testing.T) {
	t.Parallel()
	sb := available(t, Config{Owner: testOwner("pool-dead")})
	p := newPool(t, sb, 1)
	ids := ownContainers(t, sb)
	if len(ids) != 1 {
		t.Fatalf("the pool's containers: %v, want one", ids)
	}
	if _, err := sb.cli.ContainerKill(context.Background(), ids[0], client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	waitContainer(t, sb, ids[0], container.WaitConditionNotRunning)
	dir := workDir(t)
	res, err := p.Run(context.Background(), sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Timeout: time.Minute, Args: probeArgs("out.png")})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
	}
	if p.WarmRuns() != 0 {
		t.Errorf("WarmRuns = %d: the dead container was used", p.WarmRuns())
	}
	if _, err := os.Stat(filepath.Join(dir, "out.png")); err != nil {
		t.Error(err)
	}
}

// TestPoolRunsOnlyWithinItsCeilings: a run that asks for more CPU time than the warm container
// was made for runs cold (the engine's ceiling is the second wall), and the containers made
// after it fit it.
func TestPoolRunsOnlyWithinItsCeilings(t *testing.T) {
	t.Parallel()
	sb := available(t, Config{Owner: testOwner("pool-ceilings")})
	p := newPool(t, sb, 1)
	dir := workDir(t)
	spec := sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Timeout: time.Minute, Args: probeArgs("out.png"),
		Limits: sandbox.Limits{CPUSeconds: 10 * int64(sandbox.DefaultTimeout/time.Second) * int64(runtime.NumCPU())}}
	for i, wantWarm := range []int64{0, 1} {
		if err := p.WaitFull(context.Background()); err != nil {
			t.Fatal(err)
		}
		res, err := p.Run(context.Background(), spec)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: %v, exit %d: %s", i, err, res.ExitCode, res.StderrTail)
		}
		if p.WarmRuns() != wantWarm {
			t.Errorf("after run %d, WarmRuns = %d, want %d", i, p.WarmRuns(), wantWarm)
		}
	}
}

// probeArgs writes one small frame to out.
func probeArgs(out string) []string {
	return []string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=size=16x16:duration=0.04", "-frames:v", "1", out}
}

// testOwner is an owner label of name's own, this run's: a container another run left behind
// (or another test binary's, at the same time) is not counted as this one's.
func testOwner(name string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// withShell is the default programs and /usr/bin/sh, which the image has: the suite's probes.
func withShell() map[string]string {
	return map[string]string{sandbox.FFmpeg: sandbox.FFmpeg, sandbox.FFprobe: sandbox.FFprobe, "/usr/bin/sh": "/usr/bin/sh"}
}

// TestPoolContainersDieWithTheirWorker: a worker that dies without closing its pool (killed)
// closes the attach streams; the engine then closes each waiting launcher's stdin, the launcher
// exits without a command, and the engine removes the container.
func TestPoolContainersDieWithTheirWorker(t *testing.T) {
	t.Parallel()
	sb := available(t, Config{Owner: testOwner("pool-orphan")})
	p := newPool(t, sb, 1)
	w, ok := p.ahead.Take()
	if !ok {
		t.Fatal("the full pool had nothing to take")
	}
	w.att.Close() // as the worker's death closes it
	waitContainer(t, sb, w.id, container.WaitConditionRemoved)
	_ = os.RemoveAll(w.dir)
}
