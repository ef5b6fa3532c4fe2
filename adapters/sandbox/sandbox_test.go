package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

type testBundle struct {
	sb  *Sandbox
	dir string // the work dir handed to Run
}

// setup returns the production sandbox and a fresh work dir, or skips when bwrap cannot run here.
func setup(t *testing.T) testBundle {
	t.Helper()
	return setupWith(t, Config{})
}

func setupWith(t *testing.T, cfg Config) testBundle {
	t.Helper()
	sb, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	if _, err := os.Stat(FFmpeg); err != nil {
		testenv.Missing(t, "ffmpeg (scripts/deps.sh installs it)", err)
	}
	return testBundle{sb: sb, dir: workDir(t)}
}

// workDir makes a work dir whose parents the sandbox's host uid can traverse, as the runner's
// work root must be (t.TempDir's parent is 0700).
func workDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (b testBundle) run(t *testing.T, spec Spec) Result {
	t.Helper()
	if spec.Dir == "" {
		spec.Dir = b.dir
	}
	if spec.Program == "" {
		spec.Program = FFmpeg
	}
	if spec.Timeout == 0 {
		spec.Timeout = time.Minute
	}
	res, err := b.sb.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", spec.Args, err)
	}
	return res
}

func ffmpegArgs(args ...string) []string {
	return append([]string{"-hide_banner", "-nostdin", "-loglevel", "error"}, args...)
}

func TestRunProgramNotAllowed(t *testing.T) {
	t.Parallel()
	sb, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"/usr/bin/sh", "/usr/bin/../bin/ffmpeg", "ffmpeg", "/usr/bin/ffmpeg ", ""} {
		_, err := sb.Run(context.Background(), Spec{Dir: t.TempDir(), Program: prog})
		if !errors.Is(err, ErrProgramNotAllowed) {
			t.Errorf("Run(%q) error = %v, want ErrProgramNotAllowed", prog, err)
		}
	}
}

func TestNewRejectsProgramsOutsideUsr(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Programs: []string{"/bin/sh"}},
		{Programs: []string{"/usr/../tmp/x"}},
		{Programs: []string{"usr/bin/ffmpeg"}},
		{Prlimit: "/opt/prlimit"},
		{ReadOnlyPaths: []string{"relative"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error, want one", cfg)
		}
	}
}

// processesWith lists pids whose command line contains marker.
func processesWith(t *testing.T, marker string) []string {
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

func TestRunFileSizeLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const limit = 1 << 20

	// Raw video at 640x480 is about 900 KB a frame: 30 s of it is far past the limit.
	res := b.run(t, Spec{
		Args:   ffmpegArgs("-f", "lavfi", "-i", "testsrc=size=640x480:duration=30", "-c:v", "rawvideo", "-f", "nut", "-y", "big.nut"),
		Limits: Limits{FileSizeBytes: limit},
	})

	if want := 128 + int(syscall.SIGXFSZ); res.ExitCode != want {
		t.Errorf("ExitCode = %d, want %d (SIGXFSZ); stderr: %s", res.ExitCode, want, res.StderrTail)
	}
	fi, err := os.Stat(filepath.Join(b.dir, "big.nut"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > limit {
		t.Errorf("big.nut is %d bytes, over the %d limit", fi.Size(), limit)
	}
}

func TestRunCPULimit(t *testing.T) {
	t.Parallel()
	b := setup(t)

	res := b.run(t, Spec{
		Args:    ffmpegArgs("-f", "lavfi", "-i", "testsrc2=size=1280x720", "-t", "3600", "-c:v", "libx264", "-preset", "slow", "-f", "null", "-"),
		Timeout: 2 * time.Minute,
		Limits:  Limits{CPUSeconds: 1},
	})

	if res.TimedOut {
		t.Fatal("TimedOut: the CPU limit did not stop the run")
	}
	xcpu, kill := 128+int(syscall.SIGXCPU), 128+int(syscall.SIGKILL)
	if res.ExitCode != xcpu && res.ExitCode != kill {
		t.Errorf("ExitCode = %d, want %d (SIGXCPU) or %d (SIGKILL)", res.ExitCode, xcpu, kill)
	}
}

// sandboxShell is a test-only sandbox that may run a shell. It is the same wall Run uses for
// FFmpeg, so it shows what the sandbox holds if FFmpeg itself were made to run arbitrary code.
func sandboxShell(t *testing.T) testBundle {
	t.Helper()
	return setupWith(t, Config{Programs: []string{"/usr/bin/sh", "/usr/bin/env", "/usr/bin/id"}})
}

func TestSandboxEnvironmentIsClean(t *testing.T) {
	t.Parallel()
	b := sandboxShell(t)

	var out bytes.Buffer
	res := b.run(t, Spec{Program: "/usr/bin/env", Stdout: &out})
	if res.ExitCode != 0 {
		t.Fatalf("env exited %d: %s", res.ExitCode, res.StderrTail)
	}
	want := []string{
		"HOME=/tmp", "LANG=C.UTF-8", "MALLOC_ARENA_MAX=4", "PATH=/usr/bin", "PWD=/work", "TMPDIR=/tmp", "XDG_CACHE_HOME=/tmp",
	}
	got := strings.Fields(out.String())
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("environment inside (-want +got):\n%s", diff)
	}

	out.Reset()
	b.run(t, Spec{Program: "/usr/bin/id", Stdout: &out})
	if diff := cmp.Diff("uid=65534 gid=65534 groups=65534", strings.TrimSpace(out.String())); diff != "" {
		t.Errorf("identity inside (-want +got):\n%s", diff)
	}
}

// TestSandboxHoldsArbitraryCode runs shell probes inside the sandbox: each script exits 0 only
// when the wall holds.
func TestSandboxHoldsArbitraryCode(t *testing.T) {
	t.Parallel()
	b := sandboxShell(t)
	hostDir := workDir(t)
	secret := filepath.Join(hostDir, "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		script string
	}{
		{"no host secret", "test ! -e " + secret},
		{"no passwd or shadow", "test ! -e /etc/passwd && test ! -e /etc/shadow"},
		{"no home or root", "test ! -e /home && test ! -e /root"},
		{"no sys", "test ! -e /sys"},
		{"dev holds only the basic nodes", `test "$(ls /dev | tr '\n' ' ')" = "core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero "`},
		{"var holds only the font cache", `test "$(ls /var)" = cache && test "$(ls /var/cache)" = fontconfig`},
		{"etc holds only the allowed entries", `test "$(ls /etc | tr '\n' ' ')" = "alternatives fonts ld.so.cache "`},
		{"usr is read-only", "! touch /usr/x 2>/dev/null"},
		{"root is read-only", "! touch /x 2>/dev/null"},
		{"work dir is writable", "touch /work/ok"},
		{"only loopback", `test "$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')" = lo`},
		{"no capabilities", `grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/self/status`},
		{"no nested user namespaces", "! unshare -U true 2>/dev/null"},
		{"own pid namespace", `test "$(ls /proc | grep -c '^[0-9]')" -le 5`},
		{"no inherited descriptors", `test "$(ls /proc/self/fd | tr '\n' ' ')" = "0 1 2 3 "`},
		{"process limit holds", "! (for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1 & done; wait) 2>/dev/null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.run(t, Spec{Program: "/usr/bin/sh", Args: []string{"-c", tt.script}, Dir: workDir(t), Limits: Limits{Processes: 8}})
			if res.ExitCode != 0 {
				t.Errorf("probe %q failed (exit %d): %s", tt.script, res.ExitCode, res.StderrTail)
			}
		})
	}
}

// A cancel can come at any moment of bwrap's own setup. Killed before the namespaced child set
// up --die-with-parent, a naive kill of bwrap's group would leave that child running the program,
// orphaned. Cancel at many moments of the start and check nothing of the run survives.
func TestEarlyCancelLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// bwrap clones its child within its first few milliseconds: sweep that window finely.
	for i := range 160 {
		marker := fmt.Sprintf("sandbox-early-cancel-%d-%d", time.Now().UnixNano(), i)
		ctx, cancel := context.WithCancel(context.Background())
		delay := time.Duration(i) * 50 * time.Microsecond
		go func() {
			time.Sleep(delay) // the moment of bwrap's start this round cancels at: the subject of the test
			cancel()
		}()
		_, _ = b.sb.Run(ctx, Spec{Dir: b.dir, Program: FFmpeg,
			Args: ffmpegArgs("-f", "lavfi", "-i", "testsrc", "-t", "3600", "-metadata", "title="+marker, "-f", "null", "-")})
		cancel()
		deadline := time.Now().Add(5 * time.Second)
		for {
			pids := processesWith(t, marker)
			if len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cancel after %v left processes running: %v", delay, pids)
			}
			time.Sleep(20 * time.Millisecond) // the poll interval of a wait for the processes to go
		}
	}
}

func TestReachable(t *testing.T) {
	t.Parallel()
	sb, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir() // its parent is 0700
	open, closed := filepath.Join(base, "open"), filepath.Join(base, "closed", "inner")
	if err := os.MkdirAll(open, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(closed, 0o711); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(base), base, open} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Dir(closed), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sb.Reachable(open); err != nil {
		t.Errorf("Reachable(%s) = %v", open, err)
	}
	err = sb.Reachable(closed)
	if os.Geteuid() != 0 {
		if err != nil {
			t.Errorf("not root: Reachable(%s) = %v, want nil", closed, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), filepath.Dir(closed)) {
		t.Errorf("Reachable(%s) = %v, want an error naming %s", closed, err, filepath.Dir(closed))
	}
}
