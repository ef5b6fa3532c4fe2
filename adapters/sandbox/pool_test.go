package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestMain lets this test binary be the warm sandboxes' launcher, as the worker's binary is,
// and builds the native one (mediajobs-launcher) for the tests that hold both to one protocol.
func TestMain(m *testing.M) {
	if sandbox.RunLauncher() {
		return
	}
	os.Exit(runTests(m))
}

// nativeLauncher is the path of the native launcher this package's tests built, or "" with
// nativeErr saying why there is none.
var (
	nativeLauncher string
	nativeErr      error
)

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "launcher-")
	if err != nil {
		nativeErr = err
		return m.Run()
	}
	defer os.RemoveAll(dir)
	if nativeErr = os.Chmod(dir, 0o755); nativeErr == nil { // bound into sandboxes of another user
		path := filepath.Join(dir, "mediajobs-launcher")
		if nativeErr = testenv.BuildLauncher(path); nativeErr == nil {
			nativeLauncher = path
		}
	}
	return m.Run()
}

// launcher is a program that acts as the warm sandboxes' launcher.
type launcher struct {
	name string
	path string // "" for this test binary
}

// command is an exec.Cmd of the launcher with args.
func (l launcher) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	path := l.path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		path = exe
	}
	return exec.Command(path, append([]string{sandbox.LauncherArg}, args...)...)
}

// launchers are both launchers: the Go one (RunLauncher, in this test binary, as a worker's
// binary without mediajobs-launcher beside it is) and the native one make build puts there.
func launchers(t *testing.T) []launcher {
	t.Helper()
	return []launcher{{name: "go"}, native(t)}
}

// native is the native launcher this package's tests built.
func native(t *testing.T) launcher {
	t.Helper()
	if nativeLauncher == "" {
		testenv.Missing(t, "gcc and libc6-dev, to build the native launcher (scripts/deps.sh installs them)", nativeErr)
	}
	return launcher{name: "native", path: nativeLauncher}
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
	for _, l := range launchers(t) {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			cfg := sandbox.PoolConfig{Size: 2, Launcher: l.path}
			pool, shell := newPoolWith(t, sb, cfg), newPoolWith(t, shellSB, cfg)
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
		})
	}
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

// TestWarmDirectoryIsEmptyForTheNext: a warm sandbox's work directory is kept for the next
// sandbox once emptied (workdir), and the next run finds in it its own staged files only,
// nothing of what the run before left (files, a directory, a symlink, a changed mode, the
// synchronous-writes flag chattr +S sets, which the next run's files would inherit: such a
// directory is not kept); each run's files come back to its own work directory.
func TestWarmDirectoryIsEmptyForTheNext(t *testing.T) {
	t.Parallel()
	sb := available(t, sandbox.Config{Programs: []string{"/usr/bin/sh"}})
	root, err := os.MkdirTemp("", "warm-pool-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	p, err := sandbox.NewPool(sb, sandbox.PoolConfig{Size: 1, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	warmDirs := func() map[uint64]bool {
		inodes := map[uint64]bool{}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if st, err := os.Lstat(filepath.Join(root, e.Name())); err == nil && strings.HasPrefix(e.Name(), "warm-") {
				inodes[st.Sys().(*syscall.Stat_t).Ino] = true
			}
		}
		return inodes
	}
	seen := map[uint64]bool{}
	const runs = 5
	for i := range runs {
		if err := p.WaitFull(ctx); err != nil {
			t.Fatal(err)
		}
		for ino := range warmDirs() {
			seen[ino] = true
		}
		dir := t.TempDir()
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("in"), 0o644); err != nil {
			t.Fatal(err)
		}
		flag := "" // the middle run flags its directory, which is then not kept
		if i == runs/2 {
			flag = "; chattr +S ."
		}
		var out bytes.Buffer
		res, err := p.Run(ctx, sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Stdout: &out, Args: []string{"-c",
			`echo .* *; case "$(lsattr -d . 2>&1)" in *S*) echo flagged;; esac; echo secret > left.txt; mkdir -p sub && echo x > sub/y; ln -s /etc/passwd link; chmod 777 .` + flag}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: %v, exit %d: %s", i, err, res.ExitCode, res.StderrTail)
		}
		if got := strings.TrimSpace(out.String()); got != ". .. in.txt" {
			t.Errorf("run %d found %q in its work directory; want its own in.txt only", i, got)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "left.txt")); err != nil || string(b) != "secret\n" {
			t.Errorf("run %d's file did not come back: %q, %v", i, b, err)
		}
		if p.WarmRuns() != int64(i+1) {
			t.Fatalf("run %d started cold", i)
		}
	}
	// Every run's sandbox had one, as the refill follows the run; without keeping, each would
	// have been a new directory.
	if len(seen) >= runs {
		t.Errorf("%d runs' sandboxes had %d work directories; want them kept and reused", runs, len(seen))
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
	for _, l := range launchers(t) {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			p := newPoolWith(t, sb, sandbox.PoolConfig{Size: 1, Launcher: l.path})
			if err := p.WaitFull(context.Background()); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			res, err := p.Run(context.Background(), sandbox.Spec{Dir: dir, Program: "/usr/bin/env", Stdout: &out})
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
		})
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

// TestPoolTearsDownWithTheRefill: the sandbox a warm run used stays (its launcher waits on its
// hold pipe, past its end marks) until the refill, which comes after the job has reported:
// the teardown's CPU is not taken from the job's end. The refill then tears it down.
func TestPoolTearsDownWithTheRefill(t *testing.T) {
	t.Parallel()
	sb := available(t, sandbox.Config{Programs: []string{"/usr/bin/sh"}})
	root, err := os.MkdirTemp("", "warm-pool-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	p, err := sandbox.NewPool(sb, sandbox.PoolConfig{Size: 1, Root: root, RefillDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		if pids := poolProcesses(root); len(pids) > 0 {
			t.Errorf("after Close, processes of the pool remain: %v", pids)
		}
		_ = os.RemoveAll(root)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitFull(ctx); err != nil {
		t.Fatal(err)
	}
	before := poolProcesses(root)
	if len(before) == 0 {
		t.Fatal("no process of the warm sandbox found")
	}
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(ctx, sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Args: []string{"-c", "cat in > out"}})
	if err != nil || res.ExitCode != 0 || p.WarmRuns() != 1 {
		t.Fatalf("run: %v, exit %d, %d warm runs: %s", err, res.ExitCode, p.WarmRuns(), res.StderrTail)
	}
	// The run's result and files are whole while its sandbox waits.
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "x" {
		t.Fatalf("out: %q, %v", b, err)
	}
	if held := poolProcesses(root); !cmp.Equal(held, before) {
		t.Fatalf("after the run, before the refill: processes %v; want the used sandbox's %v still there", held, before)
	}
	p.Refill()
	if err := p.WaitFull(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		now := poolProcesses(root)
		if !slices.ContainsFunc(now, func(pid int) bool { return slices.Contains(before, pid) }) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the used sandbox's processes %v remain after the refill: %v", before, now)
		case <-time.After(10 * time.Millisecond): // the poll interval of a wait on the teardown
		}
	}
}

// poolProcesses are the bubblewrap processes of the pool whose root is root (each names the
// launcher's copy there), in PID order.
func poolProcesses(root string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(filepath.Join(root, "launcher"))) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// requiredRlimits are the rlimits a launcher requires, as the tests give them.
var requiredRlimits = []sandbox.Rlimit{{Resource: 0, Value: 60}, {Resource: 1, Value: 1 << 20}, {Resource: 7, Value: 64}, {Resource: 4, Value: 0}}

// pipe is an os.Pipe whose two ends close when the test ends (one closed sooner is harmless).
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		w.Close()
	})
	return r, w
}

// encode is l in the launchers' wire format.
func encode(t *testing.T, l sandbox.Launch) string {
	t.Helper()
	b, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// launcherRow is a command sent to a launcher whose allowlist is allow (default /usr/bin/sh),
// and what it should print; ok false: it refuses with status 126.
type launcherRow struct {
	name, stdin string
	allow       []string
	want        string
	ok          bool
}

// TestLauncherOnStdin: a launcher told to read its command from descriptor 0 (a warm
// container's, attached by the engine) runs it with /dev/null on stdin, not the stream the
// command came on, its arguments as sent and its rlimits set; an empty stream, a command in
// another format or cut short, a program outside the allowlist, or a command that does not set
// every required rlimit launches nothing. Both launchers, the Go one and the native one.
func TestLauncherOnStdin(t *testing.T) {
	t.Parallel()
	sh := func(script string, rlimits ...sandbox.Rlimit) sandbox.Launch {
		return sandbox.Launch{Program: "/usr/bin/sh", Args: []string{"-c", script, "sh", "two words", ""}, Rlimits: rlimits}
	}
	command := encode(t, sh(`readlink /proc/self/fd/0; printf '[%s]' "$@"; echo; ulimit -t; ulimit -H -t; ulimit -n; ulimit -H -n; cat`, requiredRlimits...))
	withMore := encode(t, sh("ulimit -v", append(slices.Clone(requiredRlimits), sandbox.Rlimit{Resource: 9, Value: 1 << 30})...))
	// A command of exactly MaxLaunchBytes, in arguments exec takes (each under 128 KiB).
	whole := sh("echo whole", requiredRlimits...)
	for range 15 {
		whole.Args = append(whole.Args, strings.Repeat("x", 64<<10))
	}
	// One argument more, of the bytes left less its NUL (the count keeps its two digits).
	whole.Args = append(whole.Args, strings.Repeat("y", sandbox.MaxLaunchBytes-len(encode(t, whole))-1))
	longest := encode(t, whole)
	if len(longest) != sandbox.MaxLaunchBytes {
		t.Fatalf("the longest command is %d bytes, not %d", len(longest), sandbox.MaxLaunchBytes)
	}
	var rows []launcherRow
	for i, r := range requiredRlimits {
		rest := slices.Delete(slices.Clone(requiredRlimits), i, i+1)
		rows = append(rows, launcherRow{name: fmt.Sprintf("rlimit %d missing", r.Resource), stdin: encode(t, sh("echo ran", rest...))})
	}
	for _, program := range []string{"/usr/bin/env", "/usr/bin/s", "/usr/bin/shx", "/usr/bin/sh/", "usr/bin/sh", ""} {
		rows = append(rows, launcherRow{name: "program " + program + " outside the allowlist",
			stdin: encode(t, sandbox.Launch{Program: program, Args: []string{"-c", "echo ran"}, Rlimits: requiredRlimits})})
	}
	for _, l := range launchers(t) {
		for _, tc := range append([]launcherRow{
			{name: "command", stdin: command, want: "/dev/null\n[two words][]\n60\n60\n64\n64\n", ok: true},
			{name: "one more rlimit", stdin: withMore, want: "1048576\n", ok: true},
			{name: "an allowlist of two", stdin: command, allow: []string{"/usr/bin/true", "/usr/bin/sh"}, want: "/dev/null\n[two words][]\n60\n60\n64\n64\n", ok: true},
			{name: "the longest command", stdin: longest, want: "whole\n", ok: true},
			{name: "a byte longer than the longest", stdin: longest + "x", want: "", ok: false},
			{name: "nothing", stdin: ""},
			{name: "JSON", stdin: `{"program":"/usr/bin/sh","args":["-c","echo ran"],"rlimits":[]}`},
			{name: "cut short", stdin: command[:len(command)-1]},
			{name: "a byte more", stdin: command + "x"},
			{name: "a field more", stdin: command + "x\x00"},
		}, rows...) {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				allow := tc.allow
				if allow == nil {
					allow = []string{"/usr/bin/sh"}
				}
				cmd := l.command(t, append([]string{"0"}, allow...)...)
				cmd.Stdin = strings.NewReader(tc.stdin)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if (err == nil) != tc.ok || string(out) != tc.want {
					t.Errorf("launcher: %v, stdout %q, stderr %q; want ok %v, stdout %q", err, out, stderr.String(), tc.ok, tc.want)
				}
				if code := cmd.ProcessState.ExitCode(); !tc.ok && (code != 126 || !strings.HasPrefix(stderr.String(), "sandbox launcher: ")) {
					t.Errorf("launcher refused with status %d and stderr %q; want 126 and a line saying why", code, stderr.String())
				}
			})
		}
	}
}

// TestLauncherSaysReady: a launcher given a ready descriptor writes a byte to it before it
// waits for its command, and the program inherits neither it nor the command's; a descriptor
// argument that is not one launches nothing. Both launchers.
func TestLauncherSaysReady(t *testing.T) {
	t.Parallel()
	for _, l := range launchers(t) {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			// As bubblewrap passes them: the command on a descriptor of 3 or more, the ready one
			// after it.
			readyR, readyW := pipe(t)
			commandR, commandW := pipe(t)
			cmd := l.command(t, "3,4", "/usr/bin/sh")
			cmd.ExtraFiles = []*os.File{commandR, readyW}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			readyW.Close()
			commandR.Close()
			_ = readyR.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := io.ReadFull(readyR, make([]byte, 1)); err != nil {
				t.Fatalf("no ready byte before the command: %v (stderr %q)", err, stderr.String())
			}
			// Built-ins only: a command sh forked would hold descriptors of its own.
			fmt.Fprint(commandW, encode(t, sandbox.Launch{Program: "/usr/bin/sh", Rlimits: requiredRlimits,
				Args: []string{"-c", "for fd in 3 4 5 6 7 8 9; do [ -e /proc/self/fd/$fd ] && echo inherited $fd; done; echo checked"}}))
			commandW.Close()
			if err := cmd.Wait(); err != nil || stdout.String() != "checked\n" {
				t.Errorf("launcher: %v, stdout %q, stderr %q; want no descriptor but 0, 1 and 2 in the program", err, stdout.String(), stderr.String())
			}
			for _, arg := range []string{"0,x", "0,0", "0,2", "5,5", "1", "03", "-1", ""} {
				out, err := l.command(t, arg, "/usr/bin/sh").CombinedOutput()
				if err == nil || !strings.Contains(string(out), "bad") {
					t.Errorf("launcher %q: %v, %q; want it refused", arg, err, out)
				}
			}
		})
	}
}

// TestLauncherEndNeedsItsOwnPIDNamespace: with an end mark, a launcher kills every process it
// may signal once the program has exited, so it runs nothing unless it is the first or second
// process of a PID namespace (a sandbox's own). Tried in a PID namespace of bubblewrap's, where
// the launcher is the third process: a launcher that went on would kill only that namespace's
// processes, never the test's. As the second (the warm suite's case), it runs the program and
// kills what the program left behind.
func TestLauncherEndNeedsItsOwnPIDNamespace(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		testenv.Missing(t, "bubblewrap (scripts/deps.sh installs it)", err)
	}
	// The program's parent is the launcher: it may not read the launcher's memory or
	// environment (the end mark is there), since the launcher is not dumpable.
	command := encode(t, sandbox.Launch{Program: "/usr/bin/sh", Rlimits: requiredRlimits, End: "\x00END\x00",
		Args: []string{"-c", `if cat /proc/$PPID/environ >/dev/null 2>&1; then echo readable; else echo unreadable; fi; sleep 600 & exit 3`}})
	for _, l := range launchers(t) {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			path := l.command(t).Path
			ns := []string{"--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"}
			// Third: sh forks the launcher (its command is not its last, so it does not exec it).
			third := exec.Command(bwrap, append(ns, "/usr/bin/sh", "-c", `"$0" `+sandbox.LauncherArg+` 0 /usr/bin/sh; echo "status $?"`, path)...)
			third.Stdin = strings.NewReader(command)
			out, _ := third.CombinedOutput()
			if !strings.Contains(string(out), "PID namespace") || !strings.HasSuffix(string(out), "status 126\n") {
				t.Errorf("launcher as process 3: %q; want it refused with status 126", out)
			}
			second := exec.Command(bwrap, append(ns, path, sandbox.LauncherArg, "0", "/usr/bin/sh")...)
			second.Stdin = strings.NewReader(command)
			var stdout, stderr bytes.Buffer
			second.Stdout, second.Stderr = &stdout, &stderr
			start := time.Now()
			err := second.Run()
			if second.ProcessState.ExitCode() != 3 || stdout.String() != "unreadable\n\x00END\x00" || stderr.String() != "\x00END\x003\n" || time.Since(start) > 5*time.Minute {
				t.Errorf("launcher as process 2: %v, stdout %q, stderr %q; want status 3, the end marks, and its environment unreadable", err, stdout.String(), stderr.String())
			}
			// What the program left is gone once the launcher has exited, even with a first
			// process that outlives it (sh, not bubblewrap's, which would kill it anyway). The
			// listing uses built-ins only.
			outlived := exec.Command(bwrap, append(append([]string{"--as-pid-1"}, ns...), "/usr/bin/sh", "-c",
				`"$0" `+sandbox.LauncherArg+` 0 /usr/bin/sh >/dev/null 2>&1; echo "status $?"; for p in /proc/[0-9]*; do echo "${p#/proc/}"; done`, path)...)
			outlived.Stdin = strings.NewReader(command)
			if out, err := outlived.CombinedOutput(); err != nil || string(out) != "status 3\n1\n" {
				t.Errorf("after the launcher, as process 2 under sh: %v, %q; want status 3 and process 1 alone", err, out)
			}
		})
	}
}

// TestLauncherHoldsItsEnd: a launcher given a hold descriptor writes its end marks as soon as
// the program's processes are gone, then waits for the descriptor's end before it exits (the
// sandbox's namespaces go with it), and the program never holds that descriptor; a hold
// argument that is not a descriptor of its own launches nothing. Both launchers, each as a
// sandbox's second process, as the pool starts them.
func TestLauncherHoldsItsEnd(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		testenv.Missing(t, "bubblewrap (scripts/deps.sh installs it)", err)
	}
	// Built-ins only: a command sh forked would hold descriptors of its own.
	command := encode(t, sandbox.Launch{Program: "/usr/bin/sh", Rlimits: requiredRlimits, End: "\x00END\x00",
		Args: []string{"-c", "for fd in 3 4 5 6 7 8 9; do [ -e /proc/self/fd/$fd ] && echo inherited $fd; done; exit 3"}})
	for _, l := range launchers(t) {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			_, readyW := pipe(t)
			holdR, holdW := pipe(t)
			stdout, stdoutW := pipe(t)
			cmd := exec.Command(bwrap, "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev",
				"--proc", "/proc", "--", l.command(t).Path, sandbox.LauncherArg, "0,3,4", "/usr/bin/sh")
			cmd.Stdin = strings.NewReader(command)
			cmd.Stdout = stdoutW
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.ExtraFiles = []*os.File{readyW, holdR}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			readyW.Close()
			holdR.Close()
			stdoutW.Close()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			want := "\x00END\x00"
			got := make([]byte, len(want))
			_ = stdout.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := io.ReadFull(stdout, got); err != nil || string(got) != want {
				t.Fatalf("stdout %q, %v (stderr %q); want the end mark alone, no descriptor inherited", got, err, stderr.String())
			}
			// An absence can only be watched for a while.
			select {
			case err := <-exited:
				t.Fatalf("the launcher exited before its hold closed: %v, stderr %q", err, stderr.String())
			case <-time.After(300 * time.Millisecond):
			}
			holdW.Close()
			select {
			case <-exited:
			case <-time.After(time.Minute):
				t.Fatal("the launcher did not exit once its hold closed")
			}
			if code := cmd.ProcessState.ExitCode(); code != 3 || stderr.String() != want+"3\n" {
				t.Errorf("exit %d, stderr %q; want the program's status 3 and the end mark", code, stderr.String())
			}
			for _, arg := range []string{"3,4,4", "3,4,3", "3,4,2", "3,4,x", "3,4,", "3,4,5,6", "0,,4"} {
				out, err := l.command(t, arg, "/usr/bin/sh").CombinedOutput()
				if err == nil || !strings.Contains(string(out), "bad") {
					t.Errorf("launcher %q: %v, %q; want it refused", arg, err, out)
				}
			}
			// A hold well written but not open is refused before anything runs (20: above what the
			// Go launcher's runtime opens for itself).
			_, readyW2 := pipe(t)
			closed := l.command(t, "0,3,20", "/usr/bin/sh")
			closed.Stdin = strings.NewReader(command)
			closed.ExtraFiles = []*os.File{readyW2}
			if out, err := closed.CombinedOutput(); err == nil || !strings.Contains(string(out), "hold descriptor") || strings.Contains(string(out), "\x00END\x00") {
				t.Errorf("launcher with hold 20 not open: %v, %q; want it refused before the program", err, out)
			}
		})
	}
}

// TestLaunchEncoding: a command decodes to what was encoded; a NUL in a field, or a command
// longer than a launcher reads, does not encode.
func TestLaunchEncoding(t *testing.T) {
	t.Parallel()
	for _, l := range []sandbox.Launch{
		{Program: "/usr/bin/ffmpeg", Args: []string{"-i", "in.mp4", "", "out.mp4"}, Rlimits: requiredRlimits, End: sandbox.NewEndMark()},
		{Program: "/usr/bin/ffprobe", Rlimits: []sandbox.Rlimit{{Resource: 1, Value: 1<<64 - 1}}},
		{Program: "/usr/bin/sh"},
	} {
		b, err := l.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := sandbox.DecodeLaunch(b)
		if err != nil {
			t.Fatalf("DecodeLaunch(%q): %v", b, err)
		}
		if diff := cmp.Diff(l, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("decoded %q (-sent +decoded):\n%s", b, diff)
		}
	}
	for _, l := range []sandbox.Launch{
		{Program: "/usr/bin/sh", Args: []string{"a\x00b"}},
		{Program: "/usr/bin/sh\x00"},
		{Program: "/usr/bin/sh", Args: []string{strings.Repeat("x", sandbox.MaxLaunchBytes)}},
	} {
		if b, err := l.Encode(); err == nil {
			t.Errorf("Encode(%.40q...) = %.40q; want an error", l.Args, b)
		}
	}
}

// FuzzDecodeLaunch: whatever a launcher is sent, DecodeLaunch answers without panicking, and a
// command it accepts encodes back to the same bytes.
func FuzzDecodeLaunch(f *testing.F) {
	for _, l := range []sandbox.Launch{
		{Program: "/usr/bin/ffmpeg", Args: []string{"-i", "in.mp4", "out.mp4"}, Rlimits: requiredRlimits, End: "abc"},
		{Program: "/usr/bin/sh"},
	} {
		b, err := l.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("mediajobs-launch-1\x00p\x00\x0001\x000\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := sandbox.DecodeLaunch(data)
		if err != nil {
			return
		}
		b, err := l.Encode()
		if err != nil || !bytes.Equal(b, data) {
			t.Errorf("DecodeLaunch(%q) = %+v, which encodes to %q, %v", data, l, b, err)
		}
	})
}

// fuzzProgram is the program FuzzLaunchersAgree allows: none such exists, so no command runs.
const fuzzProgram = "/nonexistent/mediajobs-fuzz"

// FuzzLaunchersAgree: the native launcher reads a command as DecodeLaunch does, since the Go
// launcher uses DecodeLaunch itself. Whatever it is sent, it refuses what DecodeLaunch refuses,
// as a command it cannot decode, and takes the rest as DecodeLaunch reads them: a program
// outside its allowlist is refused as such, a command without a required rlimit as such, and
// anything else gets past both checks (its allowlist holds only a program that does not exist,
// so the furthest it gets is an exec that fails; an end mark is refused outside a PID namespace
// of its own before that).
func FuzzLaunchersAgree(f *testing.F) {
	for _, l := range []sandbox.Launch{
		{Program: fuzzProgram, Args: []string{"-i", "in.mp4", "", "out.mp4"}, Rlimits: requiredRlimits},
		{Program: fuzzProgram, Rlimits: append(slices.Clone(requiredRlimits), sandbox.Rlimit{Resource: 9, Value: 1<<64 - 1}), End: "mark\x00\xff"},
		{Program: fuzzProgram, Rlimits: requiredRlimits[1:]},
		{Program: "/usr/bin/sh", Args: []string{"-c", "echo ran"}, Rlimits: requiredRlimits},
		{Program: fuzzProgram, Rlimits: []sandbox.Rlimit{{Resource: 1 << 16, Value: 1}, {Resource: 0, Value: 0}, {Resource: 1, Value: 0}, {Resource: 7, Value: 0}, {Resource: 4, Value: 0}}},
	} {
		b, err := l.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(""))
	f.Add([]byte("mediajobs-launch-1\x00p\x00\x0001\x000\x00"))
	f.Add([]byte("mediajobs-launch-1\x00" + fuzzProgram + "\x00AB\x000\x000\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd := native(t).command(t, "0", fuzzProgram)
		cmd.Stdin = bytes.NewReader(data)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		_ = cmd.Run()
		said := strings.TrimPrefix(stderr.String(), "sandbox launcher: ")
		refused := func(why string) bool {
			return cmd.ProcessState.ExitCode() == 126 && strings.HasPrefix(stderr.String(), "sandbox launcher: ") && strings.Contains(said, why)
		}
		l, err := sandbox.DecodeLaunch(data)
		var want string
		switch {
		case len(data) > sandbox.MaxLaunchBytes:
			want = "longer than"
		case len(data) == 0:
			want = "no command"
		case err != nil:
			want = "decode command"
		case l.Program != fuzzProgram:
			want = "is not allowed"
		default:
			missing := map[int]bool{}
			for _, r := range requiredRlimits {
				missing[r.Resource] = true
			}
			for _, r := range l.Rlimits {
				delete(missing, r.Resource)
			}
			if len(missing) > 0 {
				want = "sets no rlimit"
			}
		}
		if want != "" {
			if !refused(want) {
				t.Fatalf("native launcher on %q: status %d, stderr %q; want it refused, saying %q (DecodeLaunch: %+v, %v)",
					data, cmd.ProcessState.ExitCode(), stderr.String(), want, l, err)
			}
			return
		}
		for _, wrong := range []string{"decode command", "is not allowed", "sets no rlimit", "read command"} {
			if strings.Contains(said, wrong) {
				t.Fatalf("native launcher on %q: stderr %q; DecodeLaunch takes it as %+v", data, stderr.String(), l)
			}
		}
	})
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

// TestPoolKeepsNoDescriptor: a warm run that its deadline kills releases what it held of its
// sandbox (the pidfd, the host's end of the hold pipe), as one that ends by itself does. Not
// parallel: it counts this process's descriptors, with the collector off, whose finalizers
// would close a leaked file sooner or later.
func TestPoolKeepsNoDescriptor(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	count := func(kind string) (n int) {
		entries, _ := os.ReadDir("/proc/self/fd")
		for _, e := range entries {
			if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(l, kind) {
				n++
			}
		}
		return n
	}
	before := count("anon_inode:[pidfd]")
	sb := available(t, sandbox.Config{Programs: []string{"/usr/bin/sh"}})
	p := newPoolWith(t, sb, sandbox.PoolConfig{Size: 1})
	var pipes []int // with the pool full, before each run
	for i := range 4 {
		if err := p.WaitFull(context.Background()); err != nil {
			t.Fatal(err)
		}
		pipes = append(pipes, count("pipe:"))
		res, err := p.Run(context.Background(), sandbox.Spec{Dir: sandboxtest.WorkDir(t), Program: "/usr/bin/sh",
			Timeout: 300 * time.Millisecond, Args: []string{"-c", "sleep 5"}})
		if err != nil || !res.TimedOut {
			t.Fatalf("run %d: %+v, %v; want it timed out", i, res, err)
		}
	}
	if p.WarmRuns() != 4 {
		t.Errorf("WarmRuns = %d, want 4", p.WarmRuns())
	}
	// From the second run on, the pool holds one sandbox and nothing of the runs before it.
	if pipes[1] != pipes[3] {
		t.Errorf("pipes open with the pool full, before each run: %v; want no more after each run", pipes)
	}
	p.Close()
	if after := count("anon_inode:[pidfd]"); after != before {
		t.Errorf("pidfds: %d before the pool, %d after it closed", before, after)
	}
}
