package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/workcap"
	"github.com/mediajobs/mediajobs/core/porttest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// Features says what an implementation shows that the suite must allow, and what more it
// claims that the suite then holds it to.
type Features struct {
	// OwnSystem is set for a sandbox with a system of its own (a container image): its
	// /etc/passwd exists and may be read, and must only not be the host's.
	OwnSystem bool
	// Shell returns a runner of the same sandbox that may also run /usr/bin/sh. The suite runs
	// programs of its own through it, as a compromised FFmpeg would run foreign code; tests
	// that need it are left out when it is nil.
	Shell func(t *testing.T) sandbox.Runner
	// SyscallFilter claims a system call filter that denies what WantSyscalls lists, with
	// the errno it names. It needs Shell.
	SyscallFilter bool
	// MemoryLimit claims that a run its memory limit stopped is reported as
	// LimitExceeded{Limit: sandbox.LimitMemory}, not as the program's own failure.
	MemoryLimit bool
}

// Constructor returns the Runner under test, which must be available (an implementation's test
// ends through testenv before calling TestRunner when it cannot run here).
type Constructor func(t *testing.T) sandbox.Runner

// TestRunner runs the suite: each test below, in parallel, against the runners newRunner returns;
// TestSyscallFilter and TestMemoryLimit only where f claims them. Each test runs real FFmpeg in
// the sandbox; no validator runs, so the sandbox alone must stop every escape.
func TestRunner(t *testing.T, f Features, newRunner Constructor) {
	t.Helper()
	if err := newRunner(t).Available(context.Background()); err != nil {
		t.Fatalf("Available: %v (the implementation's test must skip before TestRunner when it cannot run)", err)
	}
	tests := []func(t *testing.T, f Features, newRunner Constructor){
		TestEncodes,
		TestStdout,
		TestStderr,
		TestNonZeroExitKeepsStderrTail,
		TestExitCodes,
		TestTimeoutKillsEverything,
		TestCancelKillsEverything,
		TestByteCapAcrossManyFiles,
		TestByteCapInOneFile,
		TestFileCap,
		TestWithinCaps,
		TestEscapes,
		TestNoSockets,
	}
	if f.SyscallFilter {
		if f.Shell == nil {
			t.Fatal("Features.SyscallFilter needs Features.Shell to run its probe")
		}
		tests = append(tests, TestSyscallFilter)
	}
	if f.MemoryLimit {
		tests = append(tests, TestMemoryLimit)
	}
	if f.Shell != nil {
		tests = append(tests, TestNothingRunsAfterReturn, TestNoPseudoTerminals, TestByteCapUnnamedFiles, TestNoDiskReservedPastTheLength)
	}
	porttest.Run(t, f, newRunner, tests...)
}

// WorkDir makes a work dir whose parents a sandbox running as another uid can traverse, as
// the runner's work root must be (t.TempDir's parent is 0700).
func WorkDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FFmpegArgs prefixes args with the quiet, non-interactive flags the runner uses.
func FFmpegArgs(args ...string) []string {
	return append([]string{"-hide_banner", "-nostdin", "-loglevel", "error"}, args...)
}

// run runs spec with FFmpeg, a minute and a fresh work dir unless spec says otherwise.
func run(t *testing.T, r sandbox.Runner, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	if spec.Dir == "" {
		spec.Dir = WorkDir(t)
	}
	if spec.Program == "" {
		spec.Program = sandbox.FFmpeg
	}
	if spec.Timeout == 0 {
		spec.Timeout = time.Minute
	}
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", spec.Args, err)
	}
	return res
}

// TestEncodes: FFmpeg runs in the sandbox and writes its output into the work dir.
func TestEncodes(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	r, dir := newRunner(t), WorkDir(t)

	res := run(t, r, sandbox.Spec{Dir: dir, Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=1:size=160x120", "-y", "out.mp4")})

	if res.ExitCode != 0 || res.TimedOut || res.LimitExceeded != nil {
		t.Fatalf("ExitCode = %d, TimedOut = %v, LimitExceeded = %+v; stderr: %s", res.ExitCode, res.TimedOut, res.LimitExceeded, res.StderrTail)
	}
	if fi, err := os.Stat(filepath.Join(dir, "out.mp4")); err != nil || fi.Size() == 0 {
		t.Fatalf("output not in work dir: %v", err)
	}
	if res.Wall <= 0 {
		t.Errorf("Wall = %v, want > 0", res.Wall)
	}
}

// TestStdout: a program's standard output reaches Spec.Stdout: ffprobe's answer comes back.
func TestStdout(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	r, dir := newRunner(t), WorkDir(t)
	run(t, r, sandbox.Spec{Dir: dir, Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=1:size=160x120", "-y", "in.mp4")})

	var out bytes.Buffer
	res := run(t, r, sandbox.Spec{Dir: dir, Program: sandbox.FFprobe, Stdout: &out,
		Args: []string{"-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", "in.mp4"}})

	if res.ExitCode != 0 {
		t.Fatalf("ffprobe exited %d: %s", res.ExitCode, res.StderrTail)
	}
	if diff := cmp.Diff("160,120", strings.TrimSpace(out.String())); diff != "" {
		t.Errorf("ffprobe output (-want +got):\n%s", diff)
	}
}

// TestNonZeroExitKeepsStderrTail: a failing run reports FFmpeg's own exit code, and the tail of
// its stderr as at most sandbox.StderrTailBytes of valid UTF-8 that names the failure.
func TestNonZeroExitKeepsStderrTail(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	// Debug logging makes far more than 2 KB of stderr before the missing input fails.
	res := run(t, newRunner(t), sandbox.Spec{Args: []string{"-nostdin", "-loglevel", "debug", "-f", "lavfi", "-i", "testsrc=duration=1", "-i", "missing-input.mp4", "-y", "out.mp4"}})

	if res.ExitCode == 0 || res.ExitCode == -1 {
		t.Fatalf("ExitCode = %d, want FFmpeg's own failure", res.ExitCode)
	}
	if n := len(res.StderrTail); n == 0 || n > sandbox.StderrTailBytes {
		t.Errorf("len(StderrTail) = %d, want 1..%d", n, sandbox.StderrTailBytes)
	}
	if !utf8.Valid(res.StderrTail) {
		t.Error("StderrTail is not valid UTF-8")
	}
	if !bytes.Contains(res.StderrTail, []byte("missing-input.mp4")) {
		t.Errorf("StderrTail does not name the failure:\n%s", res.StderrTail)
	}
}

// TestNothingRunsAfterReturn: a process the program left behind, writing to a file of the work
// directory, is gone once Run has returned, when the runner reads the outputs and hands them
// on: the file does not grow after that. Leftovers of several kinds: a child in the background,
// a grandchild whose parent exited (an orphan), one in a session of its own, one that opened the
// file only after the program's exit, each run twice, since the race it guards against (a warm
// sandbox handing its files back while its teardown went on) lost only most of the time. It
// needs Shell.
func TestNothingRunsAfterReturn(t *testing.T, f Features, _ Constructor) {
	t.Parallel()
	r := f.Shell(t)
	const loop = "while :; do echo b >&3; done"
	for _, tt := range []struct{ name, script string }{
		{"background child", "exec 3>out.txt; (" + loop + ") & sleep 0.2; exit 0"},
		{"orphan", "exec 3>out.txt; sh -c '(" + loop + ") & exit 0'; sleep 0.2; exit 0"},
		{"own session", "exec 3>out.txt; setsid sh -c '" + loop + "' & sleep 0.2; exit 0"},
		{"opens late", "echo a > out.txt; (sleep 0.1; exec 3>>out.txt; " + loop + ") & exit 0"},
	} {
		for i := range 2 {
			dir := WorkDir(t)
			res, err := r.Run(context.Background(), sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Timeout: time.Minute,
				Args: []string{"-c", tt.script}})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("%s, run %d: %v, exit %d: %s", tt.name, i, err, res.ExitCode, res.StderrTail)
			}
			path := filepath.Join(dir, "out.txt")
			before, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // watching for a change that must not come
			after, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if after.Size() != before.Size() {
				t.Fatalf("%s, run %d: out.txt grew from %d to %d bytes after Run returned", tt.name, i, before.Size(), after.Size())
			}
		}
	}
}

// TestNoPseudoTerminals: a program opens no pseudo-terminal, nor writes where they were. The
// ptys of every devpts (bubblewrap's and each container's) come from the host's one budget,
// kernel.pty.max, which one job opening /dev/ptmx thousands of times would take from every
// other sandbox and container on the host. It needs Shell.
func TestNoPseudoTerminals(t *testing.T, f Features, _ Constructor) {
	t.Parallel()
	var out bytes.Buffer
	res, err := f.Shell(t).Run(context.Background(), sandbox.Spec{Dir: WorkDir(t), Program: "/usr/bin/sh", Stdout: &out, Timeout: time.Minute,
		Args: []string{"-c", `for p in /dev/ptmx /dev/pts/ptmx; do (exec 3<>$p) 2>/dev/null && echo "opened $p"; done; (: > /dev/pts/x) 2>/dev/null && echo "wrote /dev/pts/x"; echo done`}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
	}
	if got := strings.TrimSpace(out.String()); got != "done" {
		t.Errorf("the program %q; want no pseudo-terminal opened and nothing written", got)
	}
}

// TestExitCodes: exit codes read as FFmpeg's own (1..127) or, for a run a signal killed, 128+N, in
// every implementation.
func TestExitCodes(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	r := newRunner(t)
	ffmpegOwn := func(code int) bool { return code > 0 && code < 128 }
	tests := []struct {
		name   string
		args   []string
		limits sandbox.Limits
		want   func(code int) bool
		says   string
	}{
		{"success", FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.1", "-f", "null", "-"), sandbox.Limits{},
			func(code int) bool { return code == 0 }, "0"},
		{"unknown option", FFmpegArgs("-no-such-option", "-f", "lavfi", "-i", "testsrc", "-f", "null", "-"), sandbox.Limits{},
			ffmpegOwn, "FFmpeg's own failure status, 1..127"},
		{"bad filter graph", FFmpegArgs("-f", "lavfi", "-i", "nosuchsource", "-f", "null", "-"), sandbox.Limits{},
			ffmpegOwn, "FFmpeg's own failure status, 1..127"},
		// A signal's death reads 128+N, the shell's convention, in every implementation.
		{"killed by the file-size limit", FFmpegArgs("-f", "lavfi", "-i", "testsrc=size=640x480:duration=30", "-c:v", "rawvideo", "-f", "nut", "-y", "big.nut"),
			sandbox.Limits{FileSizeBytes: 1 << 20},
			func(code int) bool { return code == 128+int(syscall.SIGXFSZ) }, "153 (SIGXFSZ)"},
	}
	for _, tt := range tests {
		res := run(t, r, sandbox.Spec{Args: tt.args, Limits: tt.limits})
		if !tt.want(res.ExitCode) || res.TimedOut {
			t.Errorf("%s: ExitCode = %d, TimedOut = %v; want %s; stderr: %s", tt.name, res.ExitCode, res.TimedOut, tt.says, res.StderrTail)
		}
	}
}

// TestTimeoutKillsEverything: a run past its timeout is TimedOut with exit -1, and no process of it
// is left.
func TestTimeoutKillsEverything(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	marker := fmt.Sprintf("sandboxtest-timeout-%d", time.Now().UnixNano())

	res := run(t, newRunner(t), sandbox.Spec{
		Args:    FFmpegArgs("-f", "lavfi", "-i", "testsrc", "-t", "3600", "-metadata", "title="+marker, "-f", "null", "-"),
		Timeout: time.Second,
	})

	if !res.TimedOut || res.ExitCode != -1 {
		t.Fatalf("TimedOut = %v, ExitCode = %d; want true, -1", res.TimedOut, res.ExitCode)
	}
	waitGone(t, marker)
}

// TestCancelKillsEverything: a run whose caller's context ends returns that error, is not TimedOut,
// and leaves no process.
func TestCancelKillsEverything(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	marker := fmt.Sprintf("sandboxtest-cancel-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	res, err := newRunner(t).Run(ctx, sandbox.Spec{Dir: WorkDir(t), Program: sandbox.FFmpeg, Timeout: time.Minute,
		Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc", "-t", "3600", "-metadata", "title="+marker, "-f", "null", "-")})

	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run error = %v, want the caller's context error", err)
	}
	if res.TimedOut {
		t.Error("TimedOut = true for a caller cancellation; want false (not the job's own deadline)")
	}
	waitGone(t, marker)
}

// waitGone waits until no process of this host has marker in its command line: a sandbox's
// processes end with it, asynchronously.
func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := ProcessesWith(t, marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes survived the end of the run: %v", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ProcessesWith lists the pids of this host whose command line contains marker.
func ProcessesWith(t *testing.T, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// DirUsage is what Limits.JobBytes and JobFiles measure: the bytes (the larger of length and
// disk held) and entries under dir.
func DirUsage(t *testing.T, dir string) (bytes, files int64) {
	t.Helper()
	bytes, files, err := workcap.Measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	return bytes, files
}

// byteCap is the byte cap of the caps tests: far over what a run within its caps writes.
const byteCap = 50 << 20

// TestByteCapAcrossManyFiles: a segment muxer writes without end, each file far under the per-file
// limit: only the job's byte cap can stop it before the deadline does. It writes at real time
// (-re, 78 MB/s of raw 1080p), so how far past the cap it gets measures the cap's reaction,
// not how fast this machine's disk and CPUs let FFmpeg write while other tests load them.
func TestByteCapAcrossManyFiles(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	dir := WorkDir(t)
	res := run(t, newRunner(t), sandbox.Spec{Dir: dir, Timeout: 2 * time.Minute, Limits: sandbox.Limits{JobBytes: byteCap},
		Args: FFmpegArgs("-re", "-f", "lavfi", "-i", "testsrc=size=1920x1080:rate=25", "-c:v", "rawvideo", "-f", "segment", "-segment_time", "0.1", "out%05d.nut")})

	want := &sandbox.Exceeded{Limit: sandbox.LimitJobBytes, Max: byteCap}
	if diff := cmp.Diff(want, res.LimitExceeded, cmp.FilterPath(isSeen, cmp.Ignore())); diff != "" {
		t.Fatalf("LimitExceeded (-want +got):\n%s\nTimedOut = %v, stderr: %s", diff, res.TimedOut, res.StderrTail)
	}
	if res.TimedOut || res.ExitCode == 0 {
		t.Errorf("TimedOut = %v, ExitCode = %d; want a killed run", res.TimedOut, res.ExitCode)
	}
	used, files := DirUsage(t, dir)
	t.Logf("byte cap %d: stopped at %d bytes in %d files, %d bytes (%.1f%%) past the cap, after %v",
		byteCap, used, files, used-byteCap, 100*float64(used-byteCap)/byteCap, res.Wall)
	if used > 2*byteCap {
		t.Errorf("the run wrote %d bytes under a %d cap: it was not stopped promptly", used, byteCap)
	}
}

// TestByteCapInOneFile: one file growing without end meets the per-file limit, which the byte cap
// tightens.
func TestByteCapInOneFile(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	dir := WorkDir(t)
	res := run(t, newRunner(t), sandbox.Spec{Dir: dir, Timeout: 2 * time.Minute, Limits: sandbox.Limits{JobBytes: byteCap},
		Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=size=1920x1080:rate=25", "-c:v", "rawvideo", "-f", "nut", "-y", "big.nut")})

	if res.LimitExceeded == nil || res.LimitExceeded.Limit != sandbox.LimitJobBytes || res.LimitExceeded.Max != byteCap {
		t.Fatalf("LimitExceeded = %+v, want job_bytes at %d; TimedOut = %v, exit %d, stderr: %s", res.LimitExceeded, byteCap, res.TimedOut, res.ExitCode, res.StderrTail)
	}
	used, _ := DirUsage(t, dir)
	t.Logf("byte cap %d, one file: stopped at %d bytes (%d past the cap)", byteCap, used, used-byteCap)
}

// TestByteCapUnnamedFiles: files the program unlinks while it holds them open take disk that no
// walk of the work directory finds, and each may grow to the file-size limit: a program taking
// over the sandbox could fill the disk one descriptor at a time. They count against the byte
// cap, and the run is stopped while it still holds them. It needs Shell.
func TestByteCapUnnamedFiles(t *testing.T, f Features, _ Constructor) {
	t.Parallel()
	const each = byteCap * 2 / 5 // four of them pass the cap; none meets the file-size limit
	write := fmt.Sprintf("head -c %d /dev/zero", each)
	script := "exec 3>a 4>b 5>c 6>d && rm a b c d && " + write + " >&3 && " + write + " >&4 && " +
		write + " >&5 && " + write + " >&6 && echo wrote && sleep 60"
	dir := WorkDir(t)
	var out bytes.Buffer
	res, err := f.Shell(t).Run(context.Background(), sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Stdout: &out,
		Timeout: 2 * time.Minute, Limits: sandbox.Limits{JobBytes: byteCap}, Args: []string{"-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	if res.LimitExceeded == nil || res.LimitExceeded.Limit != sandbox.LimitJobBytes || res.LimitExceeded.Seen <= byteCap {
		t.Fatalf("LimitExceeded = %+v, want job_bytes past %d; TimedOut = %v, exit %d, stdout %q, stderr: %s",
			res.LimitExceeded, byteCap, res.TimedOut, res.ExitCode, out.String(), res.StderrTail)
	}
	if res.TimedOut || res.Wall > 30*time.Second {
		t.Errorf("the run ended after %v (TimedOut %v); want it stopped while it held the files, long before its sleep ended", res.Wall, res.TimedOut)
	}
	t.Logf("four unlinked files of %d bytes under a %d cap: stopped at %d bytes after %v", each, byteCap, res.LimitExceeded.Seen, res.Wall)
}

// TestNoSockets: no socket can be made, of any family, in every implementation (a UNIX socket
// could carry descriptors of unlinked files, held by no process, past the byte cap's watcher).
// FFmpeg's unix: protocol asks for one: without the filter the call succeeds and the connect
// finds no such file; with it the socket itself is refused.
func TestNoSockets(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	res := run(t, newRunner(t), sandbox.Spec{Dir: WorkDir(t), Timeout: time.Minute,
		Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.1", "-f", "mpegts", "unix:/tmp/mediajobs-test.sock")})
	if res.ExitCode == 0 || !strings.Contains(string(res.StderrTail), "Address family not supported") {
		t.Errorf("exit %d; want FFmpeg refused its socket (Address family not supported); stderr: %s", res.ExitCode, res.StderrTail)
	}
}

// TestNoDiskReservedPastTheLength: fallocate with FALLOC_FL_KEEP_SIZE, which reserves disk past
// a file's length where RLIMIT_FSIZE does not look, fails (one call could take the disk before
// the byte cap's watcher does), as does XFS's FS_IOC_RESVSP64, which the kernel serves the same
// way on every filesystem; fallocate without a mode, which grows the length, works. It needs
// Shell: util-linux's fallocate, -n for KEEP_SIZE, and the probe.
func TestNoDiskReservedPastTheLength(t *testing.T, f Features, _ Constructor) {
	t.Parallel()
	var out bytes.Buffer
	res, err := f.Shell(t).Run(context.Background(), sandbox.Spec{Dir: WorkDir(t), Program: "/usr/bin/sh", Stdout: &out, Timeout: time.Minute,
		Args: []string{"-c", `fallocate -l 65536 grown && echo grown; : > kept; fallocate -n -l 1073741824 kept 2>&1; stat -c '%b %B' kept`}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d: %s", err, res.ExitCode, res.StderrTail)
	}
	got := out.String()
	if !strings.HasPrefix(got, "grown\n") || !strings.Contains(got, "unsupported") || !strings.Contains(got, "\n0 512") {
		t.Errorf("the program printed %q; want the plain fallocate done, the KEEP_SIZE one not supported, and no block reserved", got)
	}
	// The same reservation through XFS's space ioctl, and sockets, as the probe sees them: the
	// calls every implementation's filter refuses, whatever else it allows.
	// (The errno is each filter's own: Docker's profile answers EPERM where it allows nothing.)
	calls := SyscallProbe(t, f.Shell(t), BuildProbe(t))
	if calls["fallocate, mode 0"] != "OK" {
		t.Errorf("fallocate, mode 0: got %q, want OK", calls["fallocate, mode 0"])
	}
	for _, name := range []string{"fallocate(KEEP_SIZE)", "ioctl(FS_IOC_RESVSP64)", "socket(AF_UNIX)", "socketpair(AF_UNIX)"} {
		if calls[name] == "OK" || calls[name] == "" {
			t.Errorf("%s: got %q, want it refused", name, calls[name])
		}
	}
}

// TestFileCap: a run that makes more files than its file cap is stopped as LimitExceeded
// job_files, long before it makes them all. The cap's watcher stops it 2 to 4 files past the
// cap on a quiet machine; the run is twenty times the cap, since under `make test` (fuzzers
// beside the tests on 2 cores) a run of five times the cap once made all its tiny images
// before the watcher's goroutine was scheduled.
func TestFileCap(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	const fileCap, frames = 1000, 20000
	dir := WorkDir(t)
	res := run(t, newRunner(t), sandbox.Spec{Dir: dir, Timeout: 2 * time.Minute, Limits: sandbox.Limits{JobFiles: fileCap},
		Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=size=16x16:rate=100", "-frames:v", strconv.Itoa(frames), "img%05d.png")})

	if res.LimitExceeded == nil || res.LimitExceeded.Limit != sandbox.LimitJobFiles || res.LimitExceeded.Max != fileCap || res.LimitExceeded.Seen <= fileCap {
		t.Fatalf("LimitExceeded = %+v, want job_files past %d; TimedOut = %v, exit %d, stderr: %s", res.LimitExceeded, fileCap, res.TimedOut, res.ExitCode, res.StderrTail)
	}
	if !strings.Contains(res.LimitExceeded.Message(), "job_files=1000") {
		t.Errorf("Message() = %q, want it to name job_files=1000", res.LimitExceeded.Message())
	}
	_, files := DirUsage(t, dir)
	t.Logf("file cap %d: stopped at %d files (%d past the cap)", fileCap, files, files-fileCap)
	if files >= frames {
		t.Errorf("the run made all %d images under a %d cap", files, fileCap)
	}
}

// TestWithinCaps: staged inputs are not the job's: a job may write its cap's worth beside them.
func TestWithinCaps(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	dir := WorkDir(t)
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("input%d.bin", i)), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := run(t, newRunner(t), sandbox.Spec{Dir: dir, Limits: sandbox.Limits{JobBytes: 1 << 20, JobFiles: 3},
		Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=size=64x64:rate=1", "-frames:v", "3", "img%d.png")})

	if res.ExitCode != 0 || res.LimitExceeded != nil {
		t.Fatalf("ExitCode = %d, LimitExceeded = %+v; want a run within its caps; stderr: %s", res.ExitCode, res.LimitExceeded, res.StderrTail)
	}
}

func isSeen(p cmp.Path) bool { return p.Last().String() == ".Seen" }

// escapeBundle holds host resources that commands try to reach.
type escapeBundle struct {
	hostDir    string // outside the work dir, world-readable, so only the sandbox can stop a read
	hostSecret string // a text file in hostDir
	hostVideo  string // a real media file in hostDir, so a failed read is the wall, not bad input
	httpURL    string
	tcpAddr    string
	usrLocal   string        // a world-readable canary under /usr/local; "" if it could not be made
	extAddr    string        // a listener on a non-loopback address of this host; "" if it has none
	hits       *atomic.Int64 // requests and connections the host listeners saw
}

func setupEscape(t *testing.T) escapeBundle {
	t.Helper()
	b := escapeBundle{hits: new(atomic.Int64)}
	b.hostDir = WorkDir(t)
	if err := os.Chmod(b.hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	b.hostSecret = filepath.Join(b.hostDir, "secret.txt")
	if err := os.WriteFile(b.hostSecret, []byte("host-secret-canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.hostVideo = filepath.Join(b.hostDir, "host.mp4")
	gen := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x120", "-y", b.hostVideo)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("make host video: %v: %s", err, out)
	}
	if err := os.Chmod(b.hostVideo, 0o644); err != nil {
		t.Fatal(err)
	}

	// /usr is the host's own, inside the sandbox, but not what was installed by hand under
	// /usr/local. Making the canary there takes root, as the worker runs.
	if dir, err := os.MkdirTemp("/usr/local/share", "mediajobs-sandboxtest-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		b.usrLocal = filepath.Join(dir, "secret.txt")
		if os.Chmod(dir, 0o755) != nil || os.WriteFile(b.usrLocal, []byte("host-secret-canary\n"), 0o644) != nil {
			b.usrLocal = ""
		}
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		http.ServeFile(w, r, b.hostVideo)
	}))
	t.Cleanup(srv.Close)
	b.httpURL = srv.URL + "/host.mp4"
	b.tcpAddr = countingListener(t, "127.0.0.1:0", b.hits)
	if ip := externalIP(); ip != "" {
		b.extAddr = countingListener(t, net.JoinHostPort(ip, "0"), b.hits)
	}
	return b
}

func countingListener(t *testing.T, addr string, hits *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// externalIP is a non-loopback IPv4 address of this host: a sandbox that reached it would reach
// the network beyond, while the test itself stays on this machine.
func externalIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// hostDevices are device nodes a job must never open. Those this host lacks are not attempted.
var hostDevices = []string{
	"/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda", "/dev/mem", "/dev/kmem", "/dev/port",
	"/dev/kmsg", "/dev/loop0", "/dev/fuse", "/dev/kvm", "/dev/hwrng", "/dev/net/tun",
	"/dev/nvidia0", "/dev/nvidiactl", "/dev/dri/card0", "/dev/video0", "/dev/snd/timer",
}

// TestEscapes: no FFmpeg command reads, writes or reaches anything of the host outside the work
// dir (files, devices, processes, the network), and the same commands aimed inside it work.
func TestEscapes(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	b := setupEscape(t)
	r := newRunner(t)
	parent := filepath.Dir(WorkDir(t))
	tag := fmt.Sprint(time.Now().UnixNano())
	// Parallel subtests finish before cleanups run, so this sees every attempt.
	t.Cleanup(func() {
		if n := b.hits.Load(); n != 0 {
			t.Errorf("host listeners saw %d connections from the sandbox", n)
		}
	})
	hostPasswd, _ := os.ReadFile("/etc/passwd")
	selfCmdline, _ := os.ReadFile("/proc/self/cmdline")
	selfCmdline, _, _ = bytes.Cut(selfCmdline, []byte{0}) // the test binary's host path

	copyOut := func(input string) []string {
		return FFmpegArgs("-f", "data", "-i", input, "-map", "0", "-c", "copy", "-fs", "65536", "-f", "data", "-y", "leak.bin")
	}
	type escape struct {
		name string
		args []string
		// mayRun: the command may succeed (it reads the sandbox's own system), as long as
		// nothing of the host comes out.
		mayRun bool
		// hostPaths must not exist on the host after the run.
		hostPaths []string
		// files are written into the work directory before the run.
		files map[string]string
		skip  string
	}
	tests := []escape{
		{name: "read /etc/passwd", args: copyOut("/etc/passwd"), mayRun: f.OwnSystem},
		{name: "read /etc/shadow", args: copyOut("/etc/shadow"), mayRun: f.OwnSystem},
		{name: "read file:/root", args: copyOut("file:/root/.bashrc"), mayRun: f.OwnSystem},
		{name: "read the user's file by absolute path", args: copyOut(b.hostSecret)},
		{name: "read the user's file by file: URL", args: copyOut("file:" + b.hostSecret)},
		{name: "read the user's file through concat:", args: copyOut("concat:" + b.hostSecret + "|" + b.hostSecret)},
		{name: "read the user's file by traversal", args: copyOut("../" + filepath.Base(b.hostDir) + "/secret.txt")},
		{name: "read the user's file through /proc/1/root", args: copyOut("/proc/1/root" + b.hostSecret)},
		{
			name: "read a file installed under /usr/local", args: copyOut(b.usrLocal),
			skip: map[bool]string{true: "only root can put a file under /usr/local"}[b.usrLocal == ""],
		},
		{name: "read host video", args: FFmpegArgs("-i", b.hostVideo, "-frames:v", "1", "-y", "leak.png")},
		{name: "movie filter on /etc/passwd", args: FFmpegArgs("-f", "lavfi", "-i", "movie=/etc/passwd", "-frames:v", "1", "-y", "leak.png")},
		{name: "movie source on host video", args: FFmpegArgs("-f", "lavfi", "-i", "movie="+b.hostVideo, "-frames:v", "1", "-y", "leak.png")},
		{name: "movie in -vf on host video", args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=1", "-vf", "movie="+b.hostVideo+"[m];[in][m]overlay", "-frames:v", "1", "-y", "leak.png")},
		{name: "host process in /proc", args: copyOut(fmt.Sprintf("/proc/%d/cmdline", os.Getpid()))},
		{name: "host process environment in /proc", args: copyOut(fmt.Sprintf("/proc/%d/environ", os.Getpid()))},
		{name: "host init in /proc", args: copyOut("/proc/1/cmdline"), mayRun: true},
		// A staged file whose content is a playlist: FFmpeg probes it as HLS and opens what it
		// names. The runner refuses such a file before the run; this is the wall behind it.
		{name: "HLS playlist in the work dir naming a host file", args: FFmpegArgs("-i", "in.mp4", "-c", "copy", "-y", "leak.mkv"),
			files: map[string]string{"in.mp4": "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n" + b.hostVideo + "\n#EXT-X-ENDLIST\n"}},
		{name: "HLS playlist in the work dir naming a URL", args: FFmpegArgs("-i", "in.mp4", "-c", "copy", "-y", "leak.mkv"),
			files: map[string]string{"in.mp4": "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n" + b.httpURL + "\n#EXT-X-ENDLIST\n"}},
		{name: "concat script in the work dir naming a host file", args: FFmpegArgs("-safe", "0", "-f", "concat", "-i", "l.txt", "-c", "copy", "-y", "leak.mkv"),
			files: map[string]string{"l.txt": "ffconcat version 1.0\nfile '" + b.hostVideo + "'\n"}},
		{name: "http to host loopback", args: FFmpegArgs("-rw_timeout", "2000000", "-i", b.httpURL, "-frames:v", "1", "-y", "leak.png")},
		{name: "tcp to host loopback", args: copyOut("tcp://" + b.tcpAddr + "?timeout=2000000")},
		{
			name: "tcp to the host's external address", args: copyOut("tcp://" + b.extAddr + "?timeout=2000000"),
			skip: map[bool]string{true: "this host has no non-loopback IPv4 address"}[b.extAddr == ""],
		},
		{
			name:      "write to host /tmp",
			args:      FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-y", "/tmp/sandboxtest-out-"+tag+".mp4"),
			hostPaths: []string{"/tmp/sandboxtest-out-" + tag + ".mp4"},
		},
		// The fresh /dev is read-only, and its /dev/shm holds 1 MiB: neither is a place to
		// write outside /work and the caps on it.
		{
			name: "write to /dev",
			args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-f", "rawvideo", "-y", "/dev/sandboxtest-"+tag+".yuv"),
		},
		{
			name: "fill /dev/shm",
			args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=1:size=640x480", "-f", "rawvideo", "-y", "/dev/shm/sandboxtest-"+tag+".yuv"),
		},
		{
			name:      "write by traversal",
			args:      FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-y", "../escape-"+tag+".mp4"),
			hostPaths: []string{filepath.Join(parent, "escape-"+tag+".mp4")},
		},
		{
			name:      "write to host absolute path",
			args:      FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-y", filepath.Join(b.hostDir, "abs-"+tag+".mp4")),
			hostPaths: []string{filepath.Join(b.hostDir, "abs-"+tag+".mp4")},
		},
	}
	// A device this host lacks cannot be opened through the sandbox either: there is no attempt
	// to make, and it is named in the log rather than run as a test that cannot fail.
	var absent []string
	for _, dev := range hostDevices {
		if _, err := os.Stat(dev); err != nil {
			absent = append(absent, dev)
			continue
		}
		tests = append(tests, escape{name: "device " + dev, args: copyOut("file:" + dev)})
	}
	if len(absent) > 0 {
		t.Logf("devices this host lacks, not attempted: %s", strings.Join(absent, " "))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.skip != "" {
				testenv.Unavailable(t, tt.skip, nil)
			}
			dir := WorkDir(t)
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			res := run(t, r, sandbox.Spec{Dir: dir, Args: tt.args, Timeout: 30 * time.Second})

			if res.TimedOut {
				t.Fatalf("timed out; stderr: %s", res.StderrTail)
			}
			for _, p := range tt.hostPaths {
				if _, err := os.Stat(p); err == nil {
					os.Remove(p)
					t.Errorf("%s was written on the host", p)
				}
			}
			if tt.hostPaths == nil && !tt.mayRun && res.ExitCode == 0 {
				t.Errorf("ffmpeg succeeded; stderr: %s", res.StderrTail)
			}
			assertNoLeak(t, dir, hostPasswd, selfCmdline)
		})
	}

	// The same commands against files inside the work dir succeed, so the failures above are
	// the wall and not a malformed command.
	t.Run("controls", func(t *testing.T) {
		t.Parallel()
		dir := WorkDir(t)
		for name, src := range map[string]string{"secret.txt": b.hostSecret, "host.mp4": b.hostVideo} {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		controls := []struct {
			name string
			args []string
			out  string
		}{
			{"data copy", FFmpegArgs("-f", "data", "-i", "secret.txt", "-map", "0", "-c", "copy", "-f", "data", "-y", "copy.bin"), "copy.bin"},
			{"file: URL", FFmpegArgs("-f", "data", "-i", "file:secret.txt", "-map", "0", "-c", "copy", "-f", "data", "-y", "copy2.bin"), "copy2.bin"},
			{"movie source", FFmpegArgs("-f", "lavfi", "-i", "movie=host.mp4", "-frames:v", "1", "-y", "frame.png"), "frame.png"},
			{"read /dev/zero", copyOutTo("file:/dev/zero", "zero.bin"), "zero.bin"},
			{"read /dev/urandom", copyOutTo("file:/dev/urandom", "random.bin"), "random.bin"},
		}
		for _, tt := range controls {
			res := run(t, r, sandbox.Spec{Dir: dir, Args: tt.args})
			if res.ExitCode != 0 {
				t.Errorf("%s: exit %d: %s", tt.name, res.ExitCode, res.StderrTail)
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, tt.out)); err != nil || fi.Size() == 0 {
				t.Errorf("%s: no output: %v", tt.name, err)
			}
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "copy.bin")); !bytes.Contains(data, []byte("host-secret-canary")) {
			t.Error("the data-copy command does not copy file contents; the escape tests would prove nothing")
		}
	})
}

func copyOutTo(input, out string) []string {
	return FFmpegArgs("-f", "data", "-i", input, "-map", "0", "-c", "copy", "-fs", "65536", "-f", "data", "-y", out)
}

// assertNoLeak fails when anything in dir carries host data.
func assertNoLeak(t *testing.T, dir string, hostPasswd, selfCmdline []byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(data) == 0 {
			continue
		}
		if bytes.Contains(data, []byte("host-secret-canary")) {
			t.Errorf("%s holds the host canary: a host file leaked into the work dir", e.Name())
		}
		if len(hostPasswd) > 0 && bytes.Equal(data, hostPasswd) {
			t.Errorf("%s is the host's /etc/passwd", e.Name())
		}
		if len(selfCmdline) > 0 && bytes.Contains(data, selfCmdline) {
			t.Errorf("%s holds this test process's command line: the host's /proc leaked", e.Name())
		}
		if e.Name() == "leak.png" {
			t.Errorf("leak.png was written: a host file was decoded")
		}
	}
}

// Pool is a runner that keeps sandboxes started ahead (sandbox.Pool, dockersandbox.Pool).
type Pool interface {
	sandbox.Runner
	WaitFull(ctx context.Context) error
}

// WarmOnly runs each spec in a sandbox of p started ahead: it waits for p to be full before each
// run, so that a suite holds the warm path, not a cold run the pool fell back to.
func WarmOnly(p Pool) sandbox.Runner { return warmOnly{p} }

type warmOnly struct{ Pool }

func (w warmOnly) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if err := w.WaitFull(ctx); err != nil {
		return sandbox.Result{}, err
	}
	return w.Pool.Run(ctx, spec)
}
