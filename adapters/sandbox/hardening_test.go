package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// available returns a sandbox for cfg, or ends the test when bwrap or FFmpeg cannot run here.
func available(t testing.TB, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Available(context.Background()); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	if _, err := os.Stat(sandbox.FFmpeg); err != nil {
		testenv.Missing(t, "ffmpeg (scripts/deps.sh installs it)", err)
	}
	return sb
}

var shellPrograms = []string{sandbox.FFmpeg, "/usr/bin/sh"}

// TestSyscallFilterIsWhatDenies runs the suite's probe with the filter and without it: the
// calls the probe makes with arguments that tell (unshare of nothing succeeds, clone3 without
// arguments is EINVAL) are denied by the filter and by nothing else of the sandbox.
func TestSyscallFilterIsWhatDenies(t *testing.T) {
	t.Parallel()
	filtered := available(t, sandbox.Config{Programs: shellPrograms})
	unfiltered := available(t, sandbox.WithoutSyscallFilter(sandbox.Config{Programs: shellPrograms}))
	probe := sandboxtest.BuildProbe(t)

	with, without := sandboxtest.SyscallProbe(t, filtered, probe), sandboxtest.SyscallProbe(t, unfiltered, probe)

	var log strings.Builder
	for name, want := range sandboxtest.WantSyscalls {
		log.WriteString(name + ": " + without[name] + " without the filter, " + with[name] + " with it\n")
		if want == "OK" && (with[name] != "OK" || without[name] != "OK") {
			t.Errorf("control %s: %s with the filter, %s without; want OK both ways", name, with[name], without[name])
		}
	}
	t.Logf("what each call gives:\n%s", log.String())
	for _, name := range []string{"ptrace", "unshare", "clone3", "personality(PER_LINUX32)", "socket(AF_INET)", "socket(AF_NETLINK)"} {
		if without[name] == sandboxtest.WantSyscalls[name] {
			t.Errorf("%s gives %s without the filter too: the probe does not show the filter at work", name, without[name])
		}
	}
}

// TestMemoryLimit runs jobs that allocate without end: under a memory cgroup the run reports
// the limit; under RLIMIT_AS alone an allocation fails and the program exits as it sees fit.
// Either way only the job suffers.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	probe := sandboxtest.BuildProbe(t)
	tests := []struct {
		name   string
		cfg    sandbox.Config
		cgroup bool
		limit  int64
		args   []string // FFmpeg's; the probe's "grow" when nil
		want   func(t *testing.T, res sandbox.Result, limit int64)
	}{
		{
			name: "probe under a memory cgroup", cfg: sandbox.Config{Programs: shellPrograms}, cgroup: true, limit: 256 << 20,
			want: func(t *testing.T, res sandbox.Result, limit int64) {
				if res.LimitExceeded == nil || res.LimitExceeded.Limit != sandbox.LimitMemory || res.LimitExceeded.Max != limit {
					t.Fatalf("LimitExceeded = %+v, want memory at %d; exit %d, stderr: %s", res.LimitExceeded, limit, res.ExitCode, res.StderrTail)
				}
				if want := 128 + int(syscall.SIGKILL); res.ExitCode != want {
					t.Errorf("ExitCode = %d, want %d (the kernel's kill)", res.ExitCode, want)
				}
				if msg := res.LimitExceeded.Message(); !strings.Contains(msg, "memory limit of 268435456 bytes") {
					t.Errorf("Message() = %q, want it to say the memory limit was hit", msg)
				}
			},
		},
		{
			// The Go runtime reserves some 700 MiB of address space as it starts.
			name: "probe under RLIMIT_AS alone", cfg: sandbox.WithoutMemoryCgroup(sandbox.Config{Programs: shellPrograms}), limit: 1 << 30,
			want: func(t *testing.T, res sandbox.Result, _ int64) {
				if res.LimitExceeded != nil || res.ExitCode != 3 || !bytes.Contains(res.StderrTail, []byte("cannot allocate memory")) {
					t.Errorf("LimitExceeded = %+v, ExitCode = %d, stderr %q; want the probe's own failure to allocate (exit 3)", res.LimitExceeded, res.ExitCode, res.StderrTail)
				}
			},
		},
		{
			// The page cache of what a job writes counts against its cgroup, but the kernel
			// reclaims it: writing more than the limit is no reason to kill a job.
			name: "writing four times its memory to disk under a memory cgroup", cfg: sandbox.Config{}, cgroup: true, limit: 128 << 20,
			args: []string{"-hide_banner", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=640x480:rate=25:duration=40",
				"-c:v", "rawvideo", "-f", "nut", "-y", "big.nut"},
			want: func(t *testing.T, res sandbox.Result, _ int64) {
				if res.ExitCode != 0 || res.LimitExceeded != nil {
					t.Errorf("ExitCode = %d, LimitExceeded = %+v; want a run that writes 460 MB under 128 MiB: %s", res.ExitCode, res.LimitExceeded, res.StderrTail)
				}
			},
		},
		{
			name: "4K x264 under RLIMIT_AS alone", cfg: sandbox.WithoutMemoryCgroup(sandbox.Config{}), limit: 96 << 20,
			args: []string{"-hide_banner", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=3840x2160:duration=2", "-c:v", "libx264", "-f", "null", "-"},
			want: func(t *testing.T, res sandbox.Result, _ int64) {
				if res.ExitCode == 0 {
					t.Error("a 4K x264 encode succeeded within 96 MiB of address space; the limit is not applied")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb := available(t, tt.cfg)
			if tt.cgroup {
				if err := sb.MemoryCgroups(); err != nil {
					testenv.Unavailable(t, "a memory cgroup per run", err)
				}
			}
			oomBefore := ownOOMKills(t)

			var res sandbox.Result
			if tt.args == nil {
				res, _ = sandboxtest.RunProbe(t, sb, probe, sandbox.Limits{MemoryBytes: tt.limit}, "grow")
			} else {
				var err error
				res, err = sb.Run(context.Background(), sandbox.Spec{Dir: sandboxtest.WorkDir(t), Program: sandbox.FFmpeg, Args: tt.args, Limits: sandbox.Limits{MemoryBytes: tt.limit}})
				if err != nil {
					t.Fatal(err)
				}
			}
			tt.want(t, res, tt.limit)

			// The kernel killed nothing outside the job, and the process running the tests
			// still allocates, and runs sandboxes.
			if after := ownOOMKills(t); after != oomBefore {
				t.Errorf("OOM kills in this process's memory cgroup went from %d to %d", oomBefore, after)
			}
			ballast := make([]byte, 64<<20)
			for i := range ballast {
				ballast[i] = 1
			}
			if ok, err := sb.Run(context.Background(), sandbox.Spec{Dir: sandboxtest.WorkDir(t), Program: sandbox.FFmpeg,
				Args: []string{"-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=0.1", "-f", "null", "-"}}); err != nil || ok.ExitCode != 0 {
				t.Errorf("a run after the memory limit: %v, exit %d: %s", err, ok.ExitCode, ok.StderrTail)
			}
		})
	}
}

// ownOOMKills is the OOM kill count of the cgroup job cgroups are made in, its own and not its
// children's; 0 where there is none.
func ownOOMKills(t *testing.T) int64 {
	t.Helper()
	dir := sandbox.MemoryCgroupDir()
	if dir == "" {
		return 0
	}
	file := "memory.oom_control" // v1 counts each cgroup's own kills
	if sandbox.MemoryCgroupV2() {
		file = "memory.events.local"
	}
	data, _ := os.ReadFile(filepath.Join(dir, file))
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == "oom_kill" {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// The host's cap watcher (root, on the worker) never walks out of the work directory, however
// the job swaps a directory it is walking for a symlink to a host tree (renameat2's
// RENAME_EXCHANGE, in a loop): it would count the host's files against the job's cap, a kill
// or none telling the job whether a host path exists and how large it is, and watch the host's
// tree. The host tree here holds a 300 MB sparse file; the cap is 100 MB.
func TestCapWatcherStaysInTheWorkDirectory(t *testing.T) {
	t.Parallel()
	sb := available(t, sandbox.Config{Programs: []string{"/usr/bin/sh", "/usr/bin/perl"}})
	host := t.TempDir()
	if err := os.Mkdir(filepath.Join(host, "bait"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(host, "bait", "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(300 << 20) // 300 MB long, no disk
	f.Close()
	if err := os.Chmod(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	// 316 is renameat2, 2 its RENAME_EXCHANGE; AT_FDCWD is -100.
	swap := `mkdir "a"; mkdir "a/bait"; symlink("` + host + `", "b") or die; my $end = time + 3;
my ($x, $y) = ("a", "b"); my $n = 0; while (time < $end) { syscall(316, -100, $x, -100, $y, 2) == 0 or die "exchange: $!"; $n++ } print "swaps $n\n";`
	pool := newPool(t, sb, 1)
	if err := pool.WaitFull(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]sandbox.Runner{"cold": sb, "warm": sandboxtest.WarmOnly(pool)} {
		t.Run(name, func(t *testing.T) {
			dir := sandboxtest.WorkDir(t)
			if err := os.WriteFile(filepath.Join(dir, "swap.pl"), []byte(swap), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			res, err := r.Run(context.Background(), sandbox.Spec{Dir: dir, Program: "/usr/bin/sh", Stdout: &out,
				Args: []string{"-c", "perl swap.pl"}, Limits: sandbox.Limits{JobBytes: 100 << 20}})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.LimitExceeded != nil {
				t.Fatalf("the watcher counted %d bytes against the job's cap: it walked %s through the job's symlink (%s)", res.LimitExceeded.Seen, host, out.String())
			}
			if res.ExitCode != 0 || !strings.HasPrefix(out.String(), "swaps ") {
				t.Fatalf("the job did not swap: exit %d, %q %s", res.ExitCode, out.String(), res.StderrTail)
			}
		})
	}
}
