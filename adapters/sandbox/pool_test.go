package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestMain lets this test binary be the warm sandboxes' launcher, as the worker's binary is.
func TestMain(m *testing.M) {
	if sandbox.RunLauncher() {
		return
	}
	os.Exit(m.Run())
}

// newPool is a pool over sb whose work directories sit beside the tests' (one filesystem).
func newPool(t testing.TB, sb *sandbox.Sandbox, size int) *sandbox.Pool {
	t.Helper()
	return newPoolWith(t, sb, sandbox.PoolConfig{Size: size})
}

// newPoolWith is newPool with cfg, whose Root it makes.
func newPoolWith(t testing.TB, sb *sandbox.Sandbox, cfg sandbox.PoolConfig) *sandbox.Pool {
	t.Helper()
	root, err := os.MkdirTemp("", "warm-pool-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	cfg.Root = root
	p, err := sandbox.NewPool(sb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		_ = os.RemoveAll(root)
	})
	return p
}

// TestWarmSuite holds the warm path (Pool) to the suite every sandbox passes, with the same
// claims as the cold one: the filter, and the memory limit where a cgroup per run can be had.
func TestWarmSuite(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	shellSB, err := sandbox.New(sandbox.Config{Programs: []string{sandbox.FFmpeg, sandbox.FFprobe, "/usr/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	pool, shell := newPool(t, sb, 2), newPool(t, shellSB, 2)
	t.Cleanup(func() {
		if pool.WarmRuns() == 0 || shell.WarmRuns() == 0 {
			t.Errorf("warm runs: %d and %d (shell): every run started cold", pool.WarmRuns(), shell.WarmRuns())
		}
	})
	sandboxtest.TestRunner(t, sandboxtest.Features{
		Shell:         func(*testing.T) sandbox.Runner { return sandboxtest.WarmOnly(shell) },
		SyscallFilter: true,
		MemoryLimit:   sb.MemoryCgroups() == nil,
	}, func(t *testing.T) sandbox.Runner { return pool })
}

// TestPoolRefillsAfterTheRun: the sandbox a run takes is replaced once the run has returned,
// not while its program runs (a start beside the program's own slowed it). The run waits on a
// FIFO that the test opens only after watching the pool stay empty for a second, ten times what
// a refill takes here.
func TestPoolRefillsAfterTheRun(t *testing.T) {
	t.Parallel()
	sb := available(t, sandbox.Config{Programs: []string{"/usr/bin/sh"}})
	p := newPool(t, sb, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitFull(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o666); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		res, err := p.Run(ctx, sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Args: []string{"-c", "read x < gate"}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, res.StderrTail)
		}
		done <- err
	}()
	// The run has taken the pool's sandbox; it holds until the gate opens. The FIFO opens for
	// writing once the program has opened it for reading.
	var f *os.File
	for f == nil {
		var err error
		if f, err = os.OpenFile(gate, os.O_WRONLY|syscall.O_NONBLOCK, 0); err != nil {
			select {
			case err := <-done:
				t.Fatalf("the run ended before it read the gate: %v", err)
			case <-ctx.Done():
				t.Fatal("the run never read the gate")
			case <-time.After(time.Millisecond): // the poll interval of a wait on the program
			}
		}
	}
	defer f.Close()
	watch := time.Now()
	for time.Since(watch) < time.Second {
		if p.Ready() != 0 {
			t.Fatal("the pool refilled while the run's program ran")
		}
		time.Sleep(10 * time.Millisecond) // the poll interval of the watch
	}
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := p.WaitFull(ctx); err != nil || p.WarmRuns() != 1 {
		t.Fatalf("after the run: %v, %d warm runs", err, p.WarmRuns())
	}
}

// TestWarmEnvironmentIsClean: the program a warm sandbox runs sees the environment a cold
// one gives, and nothing of what its launcher was started with (GOMAXPROCS).
func TestWarmEnvironmentIsClean(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{Programs: []string{"/usr/bin/env"}})
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, sb, 1)
	if err := p.WaitFull(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := p.Run(context.Background(), sandbox.Spec{Dir: t.TempDir(), Program: "/usr/bin/env", Stdout: &out})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("env: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
	}
	if p.WarmRuns() != 1 {
		t.Fatalf("the run was not warm (%d warm runs)", p.WarmRuns())
	}
	want := []string{
		"HOME=/tmp", "LANG=C.UTF-8", "MALLOC_ARENA_MAX=4", "PATH=/usr/bin", "PWD=/work", "TMPDIR=/tmp", "XDG_CACHE_HOME=/tmp",
	}
	got := strings.Fields(out.String())
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment inside a warm sandbox (-want +got):\n%s", diff)
	}
}

// TestPoolRefillWaitsForItsJob: with a RefillDelay, a warm run's sandbox is not replaced until
// Refill says the run's job is over (or the delay is up): the refill's bubblewrap start does
// not take the CPU of the job's last steps.
func TestPoolRefillWaitsForItsJob(t *testing.T) {
	t.Parallel()
	sb := available(t, sandbox.Config{Programs: []string{"/usr/bin/sh"}})
	p := newPoolWith(t, sb, sandbox.PoolConfig{Size: 1, RefillDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitFull(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	if res, err := p.Run(ctx, sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Args: []string{"-c", "true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
	}
	if p.WarmRuns() != 1 {
		t.Fatalf("the run was not warm")
	}
	// An absence can only be watched for a while: a refill started at once is ready in tens
	// of milliseconds.
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if err := p.WaitFull(short); err == nil || p.Ready() != 0 {
		t.Fatalf("the pool refilled before Refill or its delay (%d ready)", p.Ready())
	}
	p.Refill()
	if err := p.WaitFull(ctx); err != nil {
		t.Fatalf("the pool did not refill after Refill: %v", err)
	}
}

// TestLauncherOnStdin: a launcher told to read its command from descriptor 0 (a warm
// container's, attached by the engine) runs it with /dev/null on stdin, not the stream the
// command came on; an empty stream, a program outside the allowlist, or a command that does not
// set every required rlimit launches nothing.
func TestLauncherOnStdin(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rlimits := `[{"resource":0,"value":60},{"resource":1,"value":1048576},{"resource":7,"value":64},{"resource":4,"value":0}]`
	command := `{"program":"/usr/bin/sh","args":["-c","readlink /proc/self/fd/0; cat"],"rlimits":` + rlimits + `}`
	for _, tc := range []struct {
		name, stdin, want string
		ok                bool
	}{
		{"command", command + "\n", "/dev/null\n", true},
		{"nothing", "", "", false},
		{"program outside the allowlist", `{"program":"/usr/bin/env","args":[],"rlimits":` + rlimits + `}`, "", false},
		{"a required rlimit missing", `{"program":"/usr/bin/sh","args":["-c","echo ran"],"rlimits":[{"resource":0,"value":60}]}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(exe, sandbox.LauncherArg, "0", "/usr/bin/sh")
			cmd.Stdin = strings.NewReader(tc.stdin)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if (err == nil) != tc.ok || string(out) != tc.want {
				t.Errorf("launcher: %v, stdout %q, stderr %q; want ok %v, stdout %q", err, out, stderr.String(), tc.ok, tc.want)
			}
		})
	}
}

// TestLauncherSaysReady: a launcher given a ready descriptor writes a byte to it before it
// waits for its command, and the program does not inherit it; a ready descriptor that is not
// one launches nothing.
func TestLauncherSaysReady(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	cmd := exec.Command(exe, sandbox.LauncherArg, "0,3", "/usr/bin/sh")
	cmd.ExtraFiles = []*os.File{readyW}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readyW.Close()
	_ = readyR.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadFull(readyR, make([]byte, 1)); err != nil {
		t.Fatalf("no ready byte before the command: %v (stderr %q)", err, stderr.String())
	}
	rlimits := `[{"resource":0,"value":60},{"resource":1,"value":1048576},{"resource":7,"value":64},{"resource":4,"value":0}]`
	fmt.Fprint(stdin, `{"program":"/usr/bin/sh","args":["-c","if [ -e /proc/self/fd/3 ]; then echo inherited; else echo closed; fi"],"rlimits":`+rlimits+`}`)
	stdin.Close()
	if err := cmd.Wait(); err != nil || stdout.String() != "closed\n" {
		t.Errorf("launcher: %v, stdout %q, stderr %q; want the ready descriptor closed", err, stdout.String(), stderr.String())
	}
	for _, arg := range []string{"0,x", "0,0", "0,2", "5,5"} {
		out, err := exec.Command(exe, sandbox.LauncherArg, arg, "/usr/bin/sh").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "bad") {
			t.Errorf("launcher %q: %v, %q; want it refused", arg, err, out)
		}
	}
}

// TestPoolRoot: a pool's root is a directory of this user that no other may write, and a pool
// made on it removes the work directories a pool before it left.
func TestPoolRoot(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "warm")
	if err := sandbox.PoolRoot(root); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(root, "warm-123", "out.mp4")
	if err := os.MkdirAll(filepath.Dir(left), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.PoolRoot(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(left)); !os.IsNotExist(err) {
		t.Errorf("the work directory left before is still there: %v", err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.PoolRoot(root); err == nil || !strings.Contains(err.Error(), "no other user may write") {
		t.Errorf("a root others may write: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.PoolRoot(link); err == nil {
		t.Error("a root that is a symbolic link was taken")
	}
}

// TestPoolKeepsNoPidfd: a warm run that its deadline kills releases the pidfd it held of its
// sandbox, as one that ends by itself does. Not parallel: it counts this process's pidfds.
func TestPoolKeepsNoPidfd(t *testing.T) {
	pidfds := func() (n int) {
		entries, _ := os.ReadDir("/proc/self/fd")
		for _, e := range entries {
			if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == "anon_inode:[pidfd]" {
				n++
			}
		}
		return n
	}
	before := pidfds()
	sb := available(t, sandbox.Config{Programs: []string{"/usr/bin/sh"}})
	p := newPoolWith(t, sb, sandbox.PoolConfig{Size: 1})
	for i := range 3 {
		if err := p.WaitFull(context.Background()); err != nil {
			t.Fatal(err)
		}
		res, err := p.Run(context.Background(), sandbox.Spec{Dir: sandboxtest.WorkDir(t), Program: "/usr/bin/sh",
			Timeout: 300 * time.Millisecond, Args: []string{"-c", "sleep 5"}})
		if err != nil || !res.TimedOut {
			t.Fatalf("run %d: %+v, %v; want it timed out", i, res, err)
		}
	}
	if p.WarmRuns() != 3 {
		t.Errorf("WarmRuns = %d, want 3", p.WarmRuns())
	}
	p.Close()
	if after := pidfds(); after != before {
		t.Errorf("pidfds: %d before the pool, %d after it closed", before, after)
	}
}
