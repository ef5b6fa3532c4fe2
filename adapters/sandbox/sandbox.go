package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mediajobs/mediajobs/adapters/sandbox/workcap"
)

// Programs the default sandbox agrees to run. Nothing else is reachable through Run.
const (
	FFmpeg  = "/usr/bin/ffmpeg"
	FFprobe = "/usr/bin/ffprobe"
)

// WorkDir is where Spec.Dir appears inside the sandbox; the program starts there, so a command
// that names staged files by bare name finds them.
const WorkDir = "/work"

// StderrTailBytes is the most of the program's stderr a Result keeps (the spec's "~2 KB").
const StderrTailBytes = 2048

// Default limits, applied field by field where a Limits field is zero.
const (
	DefaultTimeout       = 120 * time.Second
	DefaultFileSizeBytes = 8 << 30
	DefaultMemoryBytes   = 4 << 30
	DefaultProcesses     = 256
	DefaultOpenFiles     = 1024
	// The per-job caps on the work directory: the Free plan's bytes (Pro's are 20 GiB, passed
	// by the runner), and the files of either plan.
	DefaultJobBytes = 4 << 30
	DefaultJobFiles = 1000
)

// Names of the per-job caps, as Exceeded.Limit reports them.
const (
	LimitJobBytes = workcap.JobBytes
	LimitJobFiles = workcap.JobFiles
	// LimitMemory is Limits.MemoryBytes, reported where a memory cgroup enforces it (see the
	// package documentation).
	LimitMemory = workcap.Memory
)

// Exceeded says which per-job cap stopped a run: Limit (LimitJobBytes, LimitJobFiles or
// LimitMemory), Max (the cap) and Seen (the usage measured when the run was stopped). Its
// Message names the limit and its value, for the job's error.
type Exceeded = workcap.Exceeded

// Runner is what the job runner needs of a sandbox. The bubblewrap Sandbox and the Docker
// adapter implement it; sandboxtest.TestRunner holds every implementation to the same behaviour.
type Runner interface {
	// Run runs spec.Program in the sandbox and waits for it (see Sandbox.Run).
	Run(ctx context.Context, spec Spec) (Result, error)
	// Available reports whether this sandbox can run here, naming the obstacle when not.
	Available(ctx context.Context) error
}

// GPUChecker is implemented by sandboxes that can pass a GPU through; a GPU worker calls it at
// start.
type GPUChecker interface {
	CheckGPU(ctx context.Context) error
}

var (
	_ Runner     = (*Sandbox)(nil)
	_ GPUChecker = (*Sandbox)(nil)
)

const (
	// nobody: the identity inside the sandbox, and on the host when the caller is root.
	nobody = 65534
	// tmpBytes caps the private /tmp, which lives in memory.
	tmpBytes = 64 << 20
	// shmBytes caps /dev/shm, the one writable place under the read-only /dev.
	shmBytes = 1 << 20
	// Descriptors handed to bwrap through ExtraFiles (fd 3 onwards); after them come those of
	// the run's options (runOpts). bwrap closes each after use, so none reaches the program.
	statusFD = 3
	workFD   = 4
	// cgroupAddressSlack is how far RLIMIT_AS stays above Limits.MemoryBytes where a memory
	// cgroup enforces the limit: the cgroup counts what the job holds, and the address space
	// it merely reserves (thread stacks, malloc arenas, mapped libraries) must not make the
	// rlimit the limit that hits first, with a less clear error.
	cgroupAddressSlack = 4 << 30
)

var (
	// ErrProgramNotAllowed is returned when Spec.Program is not on the sandbox's allowlist.
	ErrProgramNotAllowed = errors.New("sandbox: program not allowed")
	// ErrSetup is returned when the sandbox cannot be started for this run.
	ErrSetup = errors.New("sandbox: setup failed")
	// ErrUnavailable is returned by Available when bubblewrap cannot build a sandbox here.
	ErrUnavailable = errors.New("sandbox: bubblewrap unavailable")
)

// Config describes the sandbox, not one run. The zero value is the production setting.
type Config struct {
	// Bwrap and Prlimit are absolute paths of the tools; default /usr/bin/bwrap, /usr/bin/prlimit.
	Bwrap   string
	Prlimit string
	// Programs is the allowlist of absolute paths Run accepts; default FFmpeg and FFprobe.
	// They must live under /usr, the only part of the host system mounted inside.
	Programs []string
	// ReadOnlyPaths are extra host paths mounted read-only at the same place when they exist
	// (for example a GPU driver's files).
	ReadOnlyPaths []string
	// HostUID and HostGID are the host identity bubblewrap runs as when the caller is root;
	// default 65534. Root would make the sandbox user host root outside its namespace and would
	// let it bypass RLIMIT_NPROC, so the sandbox never runs as root.
	HostUID, HostGID int
	// GPU, from FindGPU, passes the NVIDIA device nodes and driver libraries through; nil is a
	// CPU sandbox, whose /dev holds only bubblewrap's null, zero, full, random, urandom and tty.
	GPU *GPU
	// Log receives the one line, per process, that says how memory is limited (a memory
	// cgroup, or RLIMIT_AS alone and why); default slog.Default().
	Log *slog.Logger

	// Tests and benchmarks only, to measure and compare: no system call filter; no memory
	// cgroup (RLIMIT_AS alone, the fallback).
	noSyscallFilter, noMemoryCgroup bool
}

// Sandbox runs allowlisted programs under bubblewrap. It is safe for concurrent use.
type Sandbox struct {
	cfg Config
	// coverUsrLocal: nothing the sandbox uses is under /usr/local, which it then covers.
	coverUsrLocal bool
}

// The memory cgroups are found once per process, the first time a sandbox runs something.
var (
	memoryCgroupOnce   sync.Once
	memoryCgroupParent *cgroupParent
	memoryCgroupErr    error
)

// Spec is one run.
type Spec struct {
	// Dir is the host work directory: the only writable path, mounted at WorkDir. When the
	// caller is root, Run hands the tree to Config.HostUID so the sandbox can write it. Files in
	// it afterwards are untrusted: open them without following symlinks.
	Dir string
	// Program is an absolute path on the allowlist, e.g. FFmpeg.
	Program string
	Args    []string
	// Timeout is the wall-clock deadline; default DefaultTimeout.
	Timeout time.Duration
	Limits  Limits
	// Stdout receives the program's standard output (e.g. -progress pipe:1); nil discards it.
	Stdout io.Writer
	// Stderr receives the program's standard error besides Result.StderrTail (an analysis job
	// reads what FFmpeg's filters print there); nil leaves only the tail. Its errors are
	// ignored: the writer caps what it keeps itself.
	Stderr io.Writer
}

// Limits are rlimits applied to the program, and caps on the whole job; a zero field takes its
// default.
type Limits struct {
	CPUSeconds    int64 // RLIMIT_CPU; default Timeout × CPUs
	FileSizeBytes int64 // RLIMIT_FSIZE, per file written
	// MemoryBytes is the memory the job may hold: a memory cgroup's limit where the worker
	// can make one, and RLIMIT_AS alone where it cannot (see the package documentation).
	MemoryBytes int64
	Processes   int64 // RLIMIT_NPROC, threads included, counted per sandbox
	OpenFiles   int64 // RLIMIT_NOFILE

	// JobBytes caps the bytes the run adds to the work directory, all files together (each
	// counted as the larger of its length and the disk it holds). The staged inputs, there
	// before the run, are not counted.
	JobBytes int64
	// JobFiles caps the entries (files, directories, links) the run adds to the work directory.
	JobFiles int
}

// Result is the outcome of a run that started. A non-zero exit is a Result, not an error.
type Result struct {
	// ExitCode is the program's exit status; 128+N when signal N killed it (SIGXCPU when the
	// CPU limit hits, SIGXFSZ for the file-size limit); -1 when the deadline killed it.
	ExitCode int
	TimedOut bool
	// Wall is the time the sandbox ran, excluding Run's preparation.
	Wall time.Duration
	// StderrTail is at most StderrTailBytes of the end of stderr, starting on a UTF-8 boundary.
	StderrTail []byte
	// LimitExceeded names the per-job cap (JobBytes, JobFiles, MemoryBytes) that stopped the
	// run, or is nil. The sandbox was killed as soon as the cap was passed (ExitCode is then
	// 137, SIGKILL, or 153, SIGXFSZ, when the file-size limit set to the byte cap stopped the
	// write first); what the run wrote stays in the work directory for the caller to remove.
	// MemoryBytes is reported only where a memory cgroup enforces it: under RLIMIT_AS alone an
	// allocation fails inside the program, which exits as it sees fit.
	LimitExceeded *Exceeded
}

// New returns a Sandbox for cfg with defaults filled in.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Bwrap == "" {
		cfg.Bwrap = "/usr/bin/bwrap"
	}
	if cfg.Prlimit == "" {
		cfg.Prlimit = "/usr/bin/prlimit"
	}
	if len(cfg.Programs) == 0 {
		cfg.Programs = []string{FFmpeg, FFprobe}
	}
	if cfg.HostUID == 0 {
		cfg.HostUID = nobody
	}
	if cfg.HostGID == 0 {
		cfg.HostGID = nobody
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	for _, p := range []string{cfg.Bwrap, cfg.Prlimit} {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: tool path %q is not absolute", p)
		}
	}
	if !isUnder(cfg.Prlimit, "/usr") {
		return nil, fmt.Errorf("sandbox: prlimit %q must live under /usr to be reachable inside", cfg.Prlimit)
	}
	cfg.Programs = slices.Clone(cfg.Programs)
	for _, p := range cfg.Programs {
		if filepath.Clean(p) != p || !isUnder(p, "/usr") {
			return nil, fmt.Errorf("sandbox: program %q must be a clean absolute path under /usr", p)
		}
	}
	cfg.ReadOnlyPaths = slices.Clone(cfg.ReadOnlyPaths)
	for _, p := range cfg.ReadOnlyPaths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return nil, fmt.Errorf("sandbox: read-only path %q must be a clean absolute path", p)
		}
	}
	if cfg.GPU != nil {
		gpu, err := cfg.GPU.checked()
		if err != nil {
			return nil, err
		}
		cfg.GPU = gpu
	}
	return &Sandbox{cfg: cfg, coverUsrLocal: !usesUsrLocal(cfg)}, nil
}

// Run runs s.Program in the default sandbox.
func Run(ctx context.Context, s Spec) (Result, error) {
	sb, err := New(Config{})
	if err != nil {
		return Result{}, err
	}
	return sb.Run(ctx, s)
}

// Available reports whether the default sandbox can be built here.
func Available() error {
	sb, err := New(Config{})
	if err != nil {
		return err
	}
	return sb.Available(context.Background())
}

// MemoryCgroups reports whether runs get a memory cgroup of their own, finding out the first
// time it is asked in this process: nil when they do, or why not, when RLIMIT_AS alone limits
// their memory.
func (sb *Sandbox) MemoryCgroups() error {
	if sb.cfg.noMemoryCgroup {
		return errors.New("sandbox: memory cgroups turned off")
	}
	_, err := sb.memoryCgroup()
	return err
}

// memoryCgroup is where runs' memory cgroups are made, found and logged once per process.
func (sb *Sandbox) memoryCgroup() (*cgroupParent, error) {
	memoryCgroupOnce.Do(func() {
		memoryCgroupParent, memoryCgroupErr = findMemoryCgroup(os.Getpid())
		if memoryCgroupErr != nil {
			memoryCgroupErr = fmt.Errorf("sandbox: no memory cgroup per run, memory limited by RLIMIT_AS alone: %w", memoryCgroupErr)
			sb.cfg.Log.Warn(memoryCgroupErr.Error())
			return
		}
		version := "v1"
		if memoryCgroupParent.v2 {
			version = "v2"
		}
		sb.cfg.Log.Info("sandbox: each run's memory is limited by a cgroup of its own", "cgroup", memoryCgroupParent.dir, "version", version)
	})
	return memoryCgroupParent, memoryCgroupErr
}

// Run runs spec.Program with spec.Args inside the sandbox and waits for it, killing the whole
// sandbox at the deadline or when ctx ends. The error is non-nil only when the program could not
// be run (bad spec, bubblewrap failure) or ctx ended; Result then says what is known.
func (sb *Sandbox) Run(ctx context.Context, spec Spec) (Result, error) {
	if !slices.Contains(sb.cfg.Programs, spec.Program) {
		return Result{}, fmt.Errorf("%w: %q", ErrProgramNotAllowed, spec.Program)
	}
	return sb.run(ctx, spec)
}

// Available runs /usr/bin/true through the same mounts and limits Run uses, so a failure names
// the real obstacle (no bwrap, user namespaces disabled, a missing mount source).
func (sb *Sandbox) Available(ctx context.Context) error {
	if _, err := os.Stat(sb.cfg.Bwrap); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := os.Stat(sb.cfg.Prlimit); err != nil {
		return fmt.Errorf("%w: %v (install util-linux)", ErrUnavailable, err)
	}
	dir, err := os.MkdirTemp("", "sandbox-probe-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer os.RemoveAll(dir)
	res, err := sb.run(ctx, Spec{Dir: dir, Program: "/usr/bin/true", Timeout: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("%w: %v (are unprivileged user namespaces enabled? see user.max_user_namespaces and AppArmor's restrict_unprivileged_userns)", ErrUnavailable, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%w: probe exited %d: %s", ErrUnavailable, res.ExitCode, bytes.TrimSpace(res.StderrTail))
	}
	return nil
}

func (sb *Sandbox) run(ctx context.Context, spec Spec) (Result, error) {
	if !filepath.IsAbs(spec.Dir) {
		return Result{}, fmt.Errorf("sandbox: work dir %q is not absolute", spec.Dir)
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	lim := spec.Limits.withDefaults(spec.Timeout)

	asRoot := os.Geteuid() == 0
	if asRoot {
		if err := searchable(filepath.Dir(spec.Dir), sb.cfg.HostUID, sb.cfg.HostGID); err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		if err := ChownTree(spec.Dir, sb.cfg.HostUID, sb.cfg.HostGID); err != nil {
			return Result{}, fmt.Errorf("sandbox: hand work dir to uid %d: %w", sb.cfg.HostUID, err)
		}
	}
	// Binding an open descriptor, not a path, lets an unprivileged bwrap mount a directory whose
	// parents it could not traverse, and pins the directory that was checked.
	work, err := os.Open(spec.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: open work dir: %w", err)
	}
	defer work.Close()
	if st, err := work.Stat(); err != nil || !st.IsDir() {
		return Result{}, fmt.Errorf("sandbox: work dir %q is not a directory", spec.Dir)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: status pipe: %w", err)
	}
	defer statusR.Close()
	// childEnds are the descriptors only bwrap keeps: closed here once it has started, or on
	// the way out if it never does.
	childEnds := []*os.File{statusW}
	closeChildEnds := func() {
		for _, f := range childEnds {
			f.Close()
		}
		childEnds = nil
	}
	defer closeChildEnds()
	extra := []*os.File{statusW, work}
	nextFD := func(f *os.File) int {
		extra, childEnds = append(extra, f), append(childEnds, f)
		return 2 + len(extra)
	}
	var opts runOpts
	if !sb.cfg.noSyscallFilter {
		filters, err := filterFiles()
		if err != nil {
			return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		for _, f := range filters {
			opts.seccompFDs = append(opts.seccompFDs, nextFD(f))
		}
	}
	job, err := sb.newJobCgroup(lim)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	var blockW *os.File
	if job != nil {
		// bwrap waits on this pipe until its namespaced child is in the job's cgroup: moved
		// there before it forks the program, every process of the run is counted.
		var blockR *os.File
		if blockR, blockW, err = os.Pipe(); err != nil {
			job.remove()
			return Result{}, fmt.Errorf("%w: block pipe: %v", ErrSetup, err)
		}
		defer blockW.Close()
		opts.blockFD, opts.memoryCgroup = nextFD(blockR), true
	}

	runCtx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	// killCtx ends when the run must: its deadline, the caller, or a cap passed.
	killCtx, kill := context.WithCancel(runCtx)
	defer kill()

	stderr := NewTailWriter(StderrTailBytes)
	cmd := exec.CommandContext(killCtx, sb.cfg.Bwrap, sb.args(spec, lim, opts)...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stdout = spec.Stdout
	cmd.Stderr = StderrWriter(stderr, spec.Stderr)
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// bwrap leads its own group so the deadline can kill it and anything still attached
		// to it; the namespaced children follow through --die-with-parent and the pid namespace.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
	if asRoot {
		cmd.SysProcAttr.Credential = &syscall.Credential{
			Uid: uint32(sb.cfg.HostUID), Gid: uint32(sb.cfg.HostGID), Groups: []uint32{},
		}
	}
	status := newStatusReader()
	cmd.Cancel = func() error {
		// The namespaced bwrap only follows its parent (--die-with-parent) once its setup has
		// run: killed before that, the parent would leave it orphaned, running the program. So
		// learn its pid first — bwrap reports it right after the clone — and kill it too: it is
		// the pid namespace's init, and every process of the namespace dies with it.
		if pid := status.childPID(2 * time.Second); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 5 * time.Second

	if err := closeInheritedOnExec(); err != nil {
		job.remove()
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	// The watcher measures the directory before the program starts, so staged inputs are not
	// counted, and kills the whole sandbox the moment a cap is passed.
	watcher, err := WatchCaps(spec.Dir, lim, kill)
	if err != nil {
		job.remove()
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		_, _ = watcher.Close()
		job.remove()
		return Result{}, fmt.Errorf("%w: start bwrap: %v", ErrSetup, err)
	}
	closeChildEnds()
	statusCh := make(chan bwrapStatus, 1)
	go func() { statusCh <- status.read(statusR) }()
	var joinErr error
	released := false
	if job != nil {
		pid, err := job.join(killCtx, status)
		switch {
		case err != nil:
			joinErr = err
			kill() // bwrap is still blocked: the program never starts outside the cgroup
		case pid > 0:
			blockW.Close()
			released = true
		}
	}
	// The PID namespace's first process, held by a pidfd now while bwrap is its parent, is
	// killed once bwrap has exited (killFirst).
	first := -1
	if pid := status.childPID(2 * time.Second); pid > 0 {
		first = childPidfd(pid, cmd.Process.Pid)
		// Its namespace may be gone already (a quick program): then nothing in it holds a file.
		_ = watcher.Follow(pid)
	}
	waitErr := cmd.Wait()
	killFirst(first)
	res := Result{Wall: time.Since(start), StderrTail: stderr.Bytes(), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	st := <-statusCh
	if st.exitCode != nil {
		res.ExitCode = *st.exitCode
	}
	if job != nil && !released && status.pid > 0 {
		// Stopped before its child was moved: the child, still blocked, must not outlive
		// the run and start the program when the pipe closes.
		_ = syscall.Kill(status.pid, syscall.SIGKILL)
	}
	var oomKilled bool
	var peak int64
	if job != nil {
		var err error
		if oomKilled, peak, err = job.finish(); err != nil {
			sb.cfg.Log.Warn("sandbox: memory cgroup left behind", "err", err)
		}
	}
	if joinErr != nil {
		_, _ = watcher.Close()
		return res, fmt.Errorf("%w: %v", ErrSetup, joinErr)
	}
	return conclude(ctx, runCtx, res, lim, watcher, oomKilled, peak, waitErr)
}

// conclude is how every run ends once its exit is known, cold or warm: the caps' verdict
// (Settle), then the memory cgroup's (a run that failed after the OOM killer acted passed its
// memory, peak the most it held), then a failure of the wait other than the program's exit.
func conclude(ctx, runCtx context.Context, res Result, lim Limits, watcher *workcap.Watcher, oomKilled bool, peak int64, waitErr error) (Result, error) {
	if res, settled, err := Settle(ctx, runCtx, res, lim, watcher, "sandbox"); settled {
		return res, err
	}
	if oomKilled && res.ExitCode != 0 {
		res.LimitExceeded = &Exceeded{Limit: LimitMemory, Max: lim.MemoryBytes, Seen: max(peak, lim.MemoryBytes)}
		return res, nil
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, fmt.Errorf("sandbox: wait: %w", waitErr)
	}
	return res, nil
}

// runOpts are what one run adds to the bwrap command line: the descriptors of the system call
// filters and of the pipe bwrap waits on (0 for none), and whether a memory cgroup holds the
// run's memory.
type runOpts struct {
	seccompFDs   []int
	blockFD      int
	memoryCgroup bool
	// launcher is the host path of a warm sandbox's launcher, bound read-only at launcherPath.
	launcher string
}

// newJobCgroup makes the run's memory cgroup; nil where memory cgroups cannot be had, and
// RLIMIT_AS alone limits the run.
func (sb *Sandbox) newJobCgroup(lim Limits) (*jobCgroup, error) {
	if sb.cfg.noMemoryCgroup {
		return nil, nil
	}
	parent, err := sb.memoryCgroup()
	if err != nil {
		return nil, nil // logged once
	}
	return parent.newJob(lim.MemoryBytes)
}

// args is the bwrap command line. Every mount is listed here; anything not listed does not exist
// inside: no /etc/passwd, /home, /root, /var (but the font cache), /sys, or host /tmp.
func (sb *Sandbox) args(spec Spec, lim Limits, opts runOpts) []string {
	a := append(sb.bwrapOptions(opts),
		"--",
		sb.cfg.Prlimit,
		"--cpu="+strconv.FormatInt(lim.CPUSeconds, 10),
		"--fsize="+strconv.FormatInt(min(lim.FileSizeBytes, lim.JobBytes), 10),
		"--as="+sb.addressSpace(lim, opts.memoryCgroup),
		"--nproc="+strconv.FormatInt(lim.Processes, 10),
		"--nofile="+strconv.FormatInt(lim.OpenFiles, 10),
		"--core=0",
		"--",
		spec.Program,
	)
	return append(a, spec.Args...)
}

// bwrapOptions is the bwrap command line up to the program: namespaces, environment, mounts,
// and the run's descriptors (opts). A warm sandbox (Pool) adds its launcher's bind to it.
func (sb *Sandbox) bwrapOptions(opts runOpts) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--uid", strconv.Itoa(nobody), "--gid", strconv.Itoa(nobody),
		"--hostname", "sandbox",
		"--clearenv",
		"--setenv", "PATH", "/usr/bin",
		"--setenv", "HOME", "/tmp",
		"--setenv", "TMPDIR", "/tmp",
		"--setenv", "LANG", "C.UTF-8",
		"--setenv", "XDG_CACHE_HOME", "/tmp",
		// Few malloc arenas keep the address-space limit about memory, not reserved arenas.
		"--setenv", "MALLOC_ARENA_MAX", "4",
	}
	if dirs := sb.cfg.GPU.libraryPath(); dirs != "" {
		a = append(a, "--setenv", "LD_LIBRARY_PATH", dirs)
	}
	a = append(a, "--ro-bind", "/usr", "/usr")
	if sb.coverUsrLocal {
		// What the host installed by hand (a toolchain, scripts, the files of its tools) is
		// none of FFmpeg's: an empty read-only tmpfs covers it.
		a = append(a, emptyReadOnly(usrLocal)...)
	}
	a = append(a,
		"--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64",
		// ffmpeg's BLAS is chosen through alternatives; fontconfig needs its config and cache.
		"--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
		"--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
		"--ro-bind-try", "/etc/fonts", "/etc/fonts",
		"--ro-bind-try", "/var/cache/fontconfig", "/var/cache/fontconfig",
	)
	for _, p := range sb.cfg.ReadOnlyPaths {
		a = append(a, "--ro-bind-try", p, p)
	}
	for _, l := range sb.cfg.GPU.boundLibraries() {
		a = append(a, "--ro-bind", l.Source, l.Target)
	}
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
	)
	// Device nodes go over the fresh /dev, so nothing else of the host's /dev is there.
	for _, d := range sb.cfg.GPU.devices() {
		a = append(a, "--dev-bind", d.Source, d.Target)
	}
	a = append(a,
		// The fresh /dev is a tmpfs of its own: read-only, so that nothing is written outside
		// /work and /tmp (its pages count against no rlimit, and against no cgroup where there
		// is none), with a small /dev/shm for the shared memory a library may ask for.
		"--size", strconv.Itoa(shmBytes), "--tmpfs", "/dev/shm",
	)
	// No pseudo-terminals: bubblewrap's /dev/pts is a devpts of its own, writable, but the ptys
	// it hands out come from the host's one budget (kernel.pty.max), which a job opening
	// /dev/ptmx 3,000 times would take from every other sandbox and container. An empty
	// read-only tmpfs over it leaves /dev/ptmx (a link into it) pointing at nothing.
	a = append(a, emptyReadOnly("/dev/pts")...)
	a = append(a,
		"--remount-ro", "/dev",
		"--size", strconv.Itoa(tmpBytes), "--tmpfs", "/tmp",
		"--bind-fd", strconv.Itoa(workFD), WorkDir,
	)
	if opts.launcher != "" {
		a = append(a, "--ro-bind", opts.launcher, launcherPath)
	}
	a = append(a,
		"--remount-ro", "/",
		"--chdir", WorkDir,
		"--json-status-fd", strconv.Itoa(statusFD),
	)
	for _, fd := range opts.seccompFDs {
		a = append(a, "--add-seccomp-fd", strconv.Itoa(fd))
	}
	if opts.blockFD != 0 {
		a = append(a, "--block-fd", strconv.Itoa(opts.blockFD))
	}
	return a
}

// emptyReadOnly is bubblewrap's options that cover dir with an empty directory: a tmpfs of one
// page, its root mode 0555, mounted read-only.
func emptyReadOnly(dir string) []string {
	return []string{"--perms", "0555", "--size", "4096", "--tmpfs", dir, "--remount-ro", dir}
}

// usrLocal is where a host keeps what it installed outside its packages.
const usrLocal = "/usr/local"

// usesUsrLocal says whether a program, prlimit, a read-only path or a GPU library the sandbox
// is configured with lies under /usr/local, or leads there through a link (an FFmpeg built by
// hand with its libraries beside it, a driver installed there): the sandbox then leaves
// /usr/local as the host has it rather than cover it.
func usesUsrLocal(cfg Config) bool {
	paths := append(append([]string{cfg.Prlimit}, cfg.Programs...), cfg.ReadOnlyPaths...)
	if cfg.GPU != nil {
		for _, l := range cfg.GPU.Libraries {
			paths = append(paths, l.Source, l.Target)
		}
	}
	for _, p := range paths {
		if isUnder(p, usrLocal) {
			return true
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && isUnder(real, usrLocal) {
			return true
		}
	}
	return false
}

func (l Limits) withDefaults(timeout time.Duration) Limits {
	if l.CPUSeconds <= 0 {
		secs := int64((timeout + time.Second - 1) / time.Second)
		l.CPUSeconds = max(1, secs*int64(runtime.NumCPU()))
	}
	if l.FileSizeBytes <= 0 {
		l.FileSizeBytes = DefaultFileSizeBytes
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.Processes <= 0 {
		l.Processes = DefaultProcesses
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	if l.JobBytes <= 0 {
		l.JobBytes = DefaultJobBytes
	}
	if l.JobFiles <= 0 {
		l.JobFiles = DefaultJobFiles
	}
	return l
}

// addressSpace is the RLIMIT_AS value. A CUDA context reserves virtual address space for all
// of the GPU's and the host's memory at once (unified addressing), far past any useful limit,
// and fails to start under one; so a GPU sandbox leaves it unlimited, and the GPU's own memory
// bounds what an NVENC job can hold there (and a memory cgroup, where there is one, what it
// holds of the host's). Under a memory cgroup the rlimit is a backstop above the cgroup's
// limit (cgroupAddressSlack); alone, it is the limit.
func (sb *Sandbox) addressSpace(lim Limits, memoryCgroup bool) string {
	switch {
	case sb.cfg.GPU != nil:
		return "unlimited"
	case memoryCgroup:
		return strconv.FormatInt(lim.MemoryBytes+cgroupAddressSlack, 10)
	}
	return strconv.FormatInt(lim.MemoryBytes, 10)
}

// fsizeIsJobBytes tells whether the file-size rlimit is the job's byte cap: no single file can
// pass the cap without the job passing it, and the kernel stops that write exactly where the
// watcher would stop it a little later.
func (l Limits) fsizeIsJobBytes() bool { return l.JobBytes < l.FileSizeBytes }

// WatchCaps starts watching dir for the job caps of lim (bytes written, files made): it
// measures dir first, so staged inputs are not counted, and calls kill the moment a cap is
// passed. Every sandbox implementation runs its program under one.
func WatchCaps(dir string, lim Limits, kill func()) (*workcap.Watcher, error) {
	return workcap.Watch(dir, workcap.Caps{Bytes: lim.JobBytes, Files: int64(lim.JobFiles)}, kill)
}

// Settle closes the caps' watcher of a run that has ended and decides, the same way for every
// sandbox implementation, whether something other than the program ended it: the caller's
// context (an error), a cap (LimitExceeded), the watcher failing (an error) or the run's own
// deadline (TimedOut). settled is false when none did: the program exited by itself, and res
// stands as the caller measured it. A program killed by the file-size limit while that limit
// is the job's byte cap counts as passing the cap. name prefixes the errors.
func Settle(ctx, runCtx context.Context, res Result, lim Limits, w *workcap.Watcher, name string) (_ Result, settled bool, _ error) {
	if res.ExitCode == 128+int(syscall.SIGXFSZ) && lim.fsizeIsJobBytes() {
		w.PassedBytes()
	}
	exceeded, watchErr := w.Close()
	switch {
	case ctx.Err() != nil:
		return res, true, fmt.Errorf("%s: %w", name, ctx.Err())
	case exceeded != nil:
		res.LimitExceeded = exceeded
		return res, true, nil
	case watchErr != nil:
		return res, true, fmt.Errorf("%s: %w", name, watchErr)
	case runCtx.Err() != nil:
		res.TimedOut = true
		res.ExitCode = -1
		return res, true, nil
	}
	return res, false, nil
}

// WithDefaults fills the zero fields of l with the defaults for a run of timeout; other
// sandbox implementations apply the same limits through it.
func (l Limits) WithDefaults(timeout time.Duration) Limits { return l.withDefaults(timeout) }

// bwrapStatus is what --json-status-fd told us. bwrap reports the child pid before the mounts
// are made, so it cannot tell a mount failure from the program's own; Available checks the
// mounts once instead.
type bwrapStatus struct {
	exitCode *int
}

// statusReader reads --json-status-fd as bwrap writes it, telling the child's pid as soon as it
// is known, or that it never will be (bwrap ended before cloning).
type statusReader struct {
	known chan struct{} // closed once pid is set or the stream ended
	pid   int
}

func newStatusReader() *statusReader { return &statusReader{known: make(chan struct{})} }

// childPID waits up to d for the namespaced child's pid; 0 when there is none.
func (s *statusReader) childPID(d time.Duration) int {
	select {
	case <-s.known: // first, so that a pid already known is returned whatever d is
		return s.pid
	default:
	}
	select {
	case <-s.known:
		return s.pid
	case <-time.After(d):
		return 0
	}
}

// waitPID waits for the namespaced child's pid until ctx ends; 0 when there is none.
func (s *statusReader) waitPID(ctx context.Context) int {
	select {
	case <-s.known:
		return s.pid
	case <-ctx.Done():
		return 0
	}
}

func (s *statusReader) read(r io.Reader) bwrapStatus {
	var st bwrapStatus
	announced := false
	announce := func() {
		if !announced {
			announced = true
			close(s.known)
		}
	}
	defer announce()
	dec := json.NewDecoder(io.LimitReader(r, 64<<10))
	for {
		var msg struct {
			ChildPID *int `json:"child-pid"`
			ExitCode *int `json:"exit-code"`
		}
		if err := dec.Decode(&msg); err != nil {
			// Drain so bwrap never blocks writing status we no longer read.
			_, _ = io.Copy(io.Discard, r)
			return st
		}
		if msg.ChildPID != nil && *msg.ChildPID > 1 && !announced {
			s.pid = *msg.ChildPID
			announce()
		}
		if msg.ExitCode != nil {
			st.exitCode = msg.ExitCode
		}
	}
}

// ChownTree hands dir and everything in it to uid:gid, a run's work directory to the sandbox's
// user, never following a symbolic link out of dir. A process in a sandbox that has dir bound
// (a run beside another on the same directory) may swap a subdirectory for a link to a host
// path between the walk's listing and its descent: a walk by path names would then hand that
// host path's files to the sandbox's user. The walk goes through an os.Root, which resolves
// every name inside dir and refuses one that leads out of it.
func ChownTree(dir string, uid, gid int) error { return chownWalk(dir, uid, gid, nil) }

// chownWalk is ChownTree; visited, when set, hears each name once it is handed over (the tests
// swap a directory there, as a racing sandbox would).
func chownWalk(dir string, uid, gid int, visited func(name string)) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(name string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := root.Lchown(name, uid, gid); err != nil {
			return err
		}
		if visited != nil {
			visited(name)
		}
		return nil
	})
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec. Go opens its own
// descriptors that way, but descriptors this process inherited (from a shell, a supervisor)
// are not, and exec would hand them to bwrap, which passes them on into the sandbox: an
// inherited directory descriptor there would be a way out of the mount namespace.
//
// It is one system call, close_range with CLOSE_RANGE_CLOEXEC (Linux 5.11), where the kernel
// has it; elsewhere a walk of /proc/self/fd, which cost a worker a tenth of a millisecond of
// CPU at each sandbox start.
func closeInheritedOnExec() error {
	if rangeCloseOnExec() == nil {
		return nil
	}
	return walkCloseOnExec()
}

// rangeCloseOnExec is closeInheritedOnExec by close_range: ENOSYS before Linux 5.9, EINVAL
// before 5.11, which added CLOSE_RANGE_CLOEXEC.
func rangeCloseOnExec() error {
	return unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
}

// walkCloseOnExec is closeInheritedOnExec on a kernel without close_range.
func walkCloseOnExec() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list open descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The descriptor ReadDir used is already closed; setting the flag on a closed
		// descriptor fails harmlessly.
		syscall.CloseOnExec(fd)
	}
	return nil
}

// searchable checks that uid can walk down to dir: bwrap runs as that uid and must reach the
// work directory to mount it, so a 0700 parent owned by root would fail inside bwrap with a
// less helpful message.
// Reachable tells whether the sandbox can use work directories inside dir: when the caller is
// root, bubblewrap runs as Config.HostUID, which must be able to search dir and each of its
// parents (a checkout under /root, mode 0700, is not). It is always nil for other callers, who
// run bubblewrap as themselves.
func (sb *Sandbox) Reachable(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	return searchable(abs, sb.cfg.HostUID, sb.cfg.HostGID)
}

func searchable(dir string, uid, gid int) error {
	for {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("stat %s: no owner information", dir)
		}
		mode := fi.Mode().Perm()
		switch {
		case int(st.Uid) == uid && mode&0o100 != 0:
		case int(st.Uid) != uid && int(st.Gid) == gid && mode&0o010 != 0:
		case int(st.Uid) != uid && int(st.Gid) != gid && mode&0o001 != 0:
		default:
			return fmt.Errorf("work dir parent %s (mode %#o) is not searchable by uid %d; make it 0711", dir, mode, uid)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

func isUnder(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsAbs(path) && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}
