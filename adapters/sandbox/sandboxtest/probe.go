package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// probePackage is the program the suite runs inside a sandbox in place of a compromised
// FFmpeg; see its doc comment.
const probePackage = "github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest/internal/probe"

// WantSyscalls is what the probe (probe syscalls) must see in a sandbox with bubblewrap's
// system call filter: the result of each call it attempts, OK or an errno's name. Calls of the
// i386 ABI may also read ABSENT, on a kernel without that ABI.
var WantSyscalls = map[string]string{
	// Controls: what FFmpeg needs keeps working, so the denials below are the filter's.
	"getpid":             "OK",
	"personality(query)": "OK",
	"fork and exec":      "OK",
	"fallocate, mode 0":  "OK",

	"ptrace":                   "EPERM",
	"process_vm_readv":         "EPERM",
	"pidfd_getfd":              "EPERM",
	"process_madvise":          "EPERM",
	"unshare":                  "EPERM",
	"setns":                    "EPERM",
	"clone(CLONE_NEWUSER)":     "EPERM",
	"clone(CLONE_NEWNS)":       "EPERM",
	"clone3":                   "ENOSYS", // so that glibc falls back to clone, whose flags a filter can read
	"mount":                    "EPERM",
	"umount2":                  "EPERM",
	"pivot_root":               "EPERM",
	"fsopen":                   "EPERM",
	"open_tree":                "EPERM",
	"bpf":                      "EPERM",
	"seccomp(NEW_LISTENER)":    "EPERM",
	"perf_event_open":          "EPERM",
	"userfaultfd":              "EPERM",
	"io_uring_setup":           "EPERM",
	"io_uring_enter":           "EPERM",
	"io_uring_register":        "EPERM",
	"keyctl":                   "EPERM",
	"add_key":                  "EPERM",
	"request_key":              "EPERM",
	"kexec_load":               "EPERM",
	"kexec_file_load":          "EPERM",
	"init_module":              "EPERM",
	"finit_module":             "EPERM",
	"delete_module":            "EPERM",
	"personality(PER_LINUX32)": "EPERM",
	"socket(AF_UNIX)":          "EAFNOSUPPORT", // could carry descriptors of unlinked files
	"socketpair(AF_UNIX)":      "EAFNOSUPPORT",
	"fallocate(KEEP_SIZE)":     "ENOTSUP", // EOPNOTSUPP, by its other name: disk past the length, which RLIMIT_FSIZE does not hold
	"ioctl(FS_IOC_RESVSP64)":   "ENOTSUP", // the same reservation through XFS's ioctl, served on every filesystem
	"socket(AF_INET)":          "EAFNOSUPPORT",
	"socket(AF_INET6)":         "EAFNOSUPPORT",
	"socket(AF_NETLINK)":       "EAFNOSUPPORT",
	"socket(AF_PACKET)":        "EAFNOSUPPORT",
	"socketpair(AF_INET)":      "EAFNOSUPPORT",
	"x32 getpid":               "ENOSYS",
	"i386 getpid":              "ENOSYS",
	"i386 ptrace":              "ENOSYS",
	"i386 unshare":             "ENOSYS",
	"i386 socket(AF_INET)":     "ENOSYS",
}

// BuildProbe builds the probe for this machine into a fresh directory and returns its path:
// a static program (CGO_ENABLED=0), so it runs in any sandbox. It needs the go command, and
// amd64, the architecture the filter is written for.
func BuildProbe(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		testenv.Unavailable(t, "an amd64 machine (the system call probe is amd64's)", runtime.GOARCH)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "the go command, to build the sandbox probe", err)
	}
	out := filepath.Join(t.TempDir(), "probe")
	build := exec.Command(goCmd, "build", "-o", out, probePackage)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v: %s", err, msg)
	}
	return out
}

// RunProbe copies the probe into a fresh work dir and runs it there through r, a runner that
// may run /usr/bin/sh, with args.
func RunProbe(t *testing.T, r sandbox.Runner, probe string, limits sandbox.Limits, args ...string) (sandbox.Result, []byte) {
	t.Helper()
	dir := WorkDir(t)
	data, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := r.Run(context.Background(), sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Timeout: time.Minute, Limits: limits, Stdout: &out,
		Args: append([]string{"-c", `exec ./probe "$@"`, "probe"}, args...)})
	if err != nil {
		t.Fatalf("run the probe: %v", err)
	}
	return res, out.Bytes()
}

// SyscallProbe runs "probe syscalls" through r and returns what each call gave.
func SyscallProbe(t *testing.T, r sandbox.Runner, probe string) map[string]string {
	t.Helper()
	res, out := RunProbe(t, r, probe, sandbox.Limits{}, "syscalls")
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("probe syscalls: exit %d, TimedOut %v: %s", res.ExitCode, res.TimedOut, res.StderrTail)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if name, result, ok := strings.Cut(sc.Text(), "\t"); ok {
			got[name] = result
		}
	}
	return got
}

// TestSyscallFilter: the system calls WantSyscalls lists are denied with the errno it names, and
// the probe attempts no other. It runs where Features.SyscallFilter claims the filter.
func TestSyscallFilter(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	got := SyscallProbe(t, f.Shell(t), BuildProbe(t))

	var absent []string
	for _, name := range sortedKeys(WantSyscalls) {
		want, result := WantSyscalls[name], got[name]
		switch {
		case strings.HasPrefix(name, "i386 ") && result == "ABSENT":
			absent = append(absent, name)
		case result != want:
			t.Errorf("%s: got %q, want %s", name, result, want)
		}
	}
	for name := range got {
		if _, ok := WantSyscalls[name]; !ok {
			t.Errorf("the probe attempted %q, which WantSyscalls does not list", name)
		}
	}
	if len(absent) > 0 {
		t.Logf("this kernel has no i386 ABI (int 0x80 faults), so nothing of it is to deny: %s", strings.Join(absent, ", "))
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestMemoryLimit: a run stopped by its memory limit is reported as LimitExceeded memory, not as
// FFmpeg's own failure, and the sandbox carries on. It runs where Features.MemoryLimit claims
// that. FFmpeg's reverse filter on an endless source holds every frame until its input ends,
// which this one never does, so its memory grows until the limit.
func TestMemoryLimit(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	const limit = 256 << 20
	res := run(t, newRunner(t), sandbox.Spec{Timeout: 2 * time.Minute, Limits: sandbox.Limits{MemoryBytes: limit},
		Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=size=1280x720:rate=100", "-vf", "reverse", "-f", "null", "-")})

	if res.LimitExceeded == nil || res.LimitExceeded.Limit != sandbox.LimitMemory || res.LimitExceeded.Max != limit {
		t.Fatalf("LimitExceeded = %+v, want memory at %d; TimedOut = %v, exit %d, stderr: %s", res.LimitExceeded, limit, res.TimedOut, res.ExitCode, res.StderrTail)
	}
	if msg := res.LimitExceeded.Message(); !strings.Contains(msg, "memory limit") || !strings.Contains(msg, "memory=268435456") {
		t.Errorf("Message() = %q, want it to say the memory limit was hit, and name memory=268435456", msg)
	}
	if res.TimedOut || res.ExitCode == 0 {
		t.Errorf("TimedOut = %v, ExitCode = %d; want a killed run", res.TimedOut, res.ExitCode)
	}
	t.Logf("memory limit %d: stopped after %v, %d bytes at most, exit %d", limit, res.Wall, res.LimitExceeded.Seen, res.ExitCode)

	// The sandbox, and the process that runs it, carry on.
	after := run(t, newRunner(t), sandbox.Spec{Args: FFmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-f", "null", "-")})
	if after.ExitCode != 0 {
		t.Errorf("a run after the memory limit hit exited %d: %s", after.ExitCode, after.StderrTail)
	}
}
