package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mediajobs/mediajobs/adapters/sandbox/workcap"
	"github.com/mediajobs/mediajobs/adapters/workdir"
)

// Pool is a Runner that keeps sandboxes started ahead: namespaces made, mounts done, the
// memory cgroup joined, and a launcher inside waiting on a pipe for its one command. Each is
// used by exactly one run and then torn down, never reused. Run keeps Runner's contract: the
// staged files of Spec.Dir are hard-linked into the warm sandbox's own empty work directory
// before the command is released, and what the run made there is moved back into Spec.Dir
// after it, so the caller finds its outputs where a cold run leaves them, and runs on the same
// directory at once (a probe beside the job) each see every staged file. Where no warm sandbox
// is ready, or the work directory is on another filesystem than the pool's or holds a
// directory, the run is a cold one (Sandbox.Run). The caps are those of a cold run: the same bwrap options and
// seccomp filters, a memory cgroup set to the run's limit before release, the rlimits set by
// the launcher as prlimit sets them, the caps' watcher, the deadline.
type Pool struct {
	sb       *Sandbox
	launcher string // the launcher binary's copy in root, bound read-only
	root     string
	ahead    *Ahead[*warm]
	// dirs makes the warm sandboxes' work directories, and keeps those of ended ones for the
	// next (workdir: each made directory costs CPU on ext4 without a journal).
	dirs *workdir.Dirs
}

var _ Runner = (*Pool)(nil)

// PoolConfig sizes a pool.
type PoolConfig struct {
	// Size is how many sandboxes are kept started: the worker's concurrency.
	Size int
	// Root holds the warm sandboxes' work directories; it must be on the filesystem of the
	// runs' work directories (a rename moves the staged files in) and reachable by
	// Config.HostUID.
	Root string
	// Launcher is the binary that acts as the launcher when started with LauncherArg
	// (RunLauncher); default this process's executable.
	Launcher string
	// RefillDelay is how long after a warm run the pool waits to start its refill, unless
	// Refill says sooner: a refill is a bubblewrap start, milliseconds of CPU, which would
	// otherwise take them from the end of the job the run belongs to (reading, uploading and
	// reporting its outputs). Zero refills at once.
	RefillDelay time.Duration
}

// NewPool starts a pool over sb and fills it in the background until Close.
func NewPool(sb *Sandbox, cfg PoolConfig) (*Pool, error) {
	if cfg.Size < 1 {
		return nil, fmt.Errorf("sandbox: pool size %d is not positive", cfg.Size)
	}
	if sb.cfg.GPU != nil {
		return nil, errors.New("sandbox: a GPU sandbox is not pooled")
	}
	if cfg.Launcher == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: find the launcher: %w", err)
		}
		cfg.Launcher = exe
	}
	if err := PoolRoot(cfg.Root); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// bubblewrap runs as Config.HostUID, which may not reach the launcher where it lies (a
	// binary under /root): a copy in the pool's root, which it reaches, is what it binds.
	launcher := filepath.Join(cfg.Root, "launcher")
	if err := copyExecutable(cfg.Launcher, launcher); err != nil {
		return nil, fmt.Errorf("sandbox: copy the launcher: %w", err)
	}
	p := &Pool{sb: sb, launcher: launcher, root: cfg.Root, dirs: workdir.New(cfg.Root, cfg.Size)}
	p.ahead = NewAhead(cfg.Size, cfg.RefillDelay, p.start, (*warm).teardown, func(err error) {
		sb.cfg.Log.Warn("sandbox: a warm sandbox could not be started; runs start cold", "err", err)
	})
	return p, nil
}

// Close tears down the sandboxes still waiting and stops refilling.
func (p *Pool) Close() {
	p.ahead.Close()
	_ = p.dirs.Close()
	_ = os.Remove(p.launcher)
}

// WaitFull waits until every sandbox of the pool is started and waiting, or ctx ends.
func (p *Pool) WaitFull(ctx context.Context) error { return p.ahead.WaitFull(ctx) }

// Ready is how many sandboxes are started and waiting.
func (p *Pool) Ready() int { return p.ahead.Ready() }

// WarmRuns is how many runs a warm sandbox took (the others started cold).
func (p *Pool) WarmRuns() int64 { return p.ahead.WarmRuns() }

// Available is the sandbox's.
func (p *Pool) Available(ctx context.Context) error { return p.sb.Available(ctx) }

// warm is one started sandbox, waiting for its command.
type warm struct {
	dir  string
	dirs *workdir.Dirs
	// dirUsers counts who needs dir: the sandbox until it has ended, and a run from staging
	// its files until it has moved them back. The last to let go gives it back (dropDir).
	dirUsers atomic.Int32
	cmd      *exec.Cmd
	command  *os.File // the host's end of the launcher's command pipe
	// hold is the host's end of the launcher's hold pipe: after its end marks the launcher
	// waits for it to close before it exits, and with it the sandbox's namespaces go. Nil once
	// released (releaseHold), under mu.
	hold    *os.File
	status  *statusReader
	statusC chan bwrapStatus
	job     *jobCgroup
	// ends passes the output on and finds the launcher's end marks in it (Launch.End).
	ends   *EndMarks
	waited chan error
	// pidfd holds the PID namespace's first process (bwrap's child), -1 where it could not be
	// had; ended is set once bwrap has been waited for, after which nothing is signalled. mu
	// guards both, and hold.
	mu    sync.Mutex
	pidfd int
	ended bool
}

// start starts one sandbox whose launcher waits for its command.
func (p *Pool) start() (_ *warm, err error) {
	sb := p.sb
	dir, err := p.dirs.Make("warm-")
	if err != nil {
		return nil, err
	}
	w := &warm{dir: dir, dirs: p.dirs, status: newStatusReader(), statusC: make(chan bwrapStatus, 1), waited: make(chan error, 1), ends: NewEndMarks(), pidfd: -1}
	w.dirUsers.Store(1) // the sandbox
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
		if err != nil {
			w.teardown()
		}
	}()
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, sb.cfg.HostUID, sb.cfg.HostGID); err != nil {
			return nil, err
		}
	}
	work, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	closers = append(closers, work)
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	closers = append(closers, statusW)
	commandR, commandW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		return nil, err
	}
	w.command = commandW
	closers = append(closers, commandR)
	extra := []*os.File{statusW, work}
	nextFD := func(f *os.File) int {
		extra = append(extra, f)
		return 2 + len(extra)
	}
	var opts runOpts
	if !sb.cfg.noSyscallFilter {
		filters, err := filterFiles()
		if err != nil {
			statusR.Close()
			return nil, err
		}
		for _, f := range filters {
			closers = append(closers, f) // bwrap has its own copy once started
			opts.seccompFDs = append(opts.seccompFDs, nextFD(f))
		}
	}
	if w.job, err = sb.newJobCgroup(Limits{}.withDefaults(DefaultTimeout)); err != nil {
		statusR.Close()
		return nil, err
	}
	var blockW *os.File
	if w.job != nil {
		blockR, bw, err := os.Pipe()
		if err != nil {
			statusR.Close()
			return nil, err
		}
		blockW = bw
		closers = append(closers, blockR, blockW)
		opts.blockFD, opts.memoryCgroup = nextFD(blockR), true
	}
	commandFD := nextFD(commandR)
	readyR, readyW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		return nil, err
	}
	defer readyR.Close()
	closers = append(closers, readyW)
	readyFD := nextFD(readyW)
	holdR, holdW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		return nil, err
	}
	w.hold = holdW
	closers = append(closers, holdR)
	holdFD := nextFD(holdR)
	opts.launcher = p.launcher
	// The Go launcher (a worker binary acting as its own) starts with one P: with more, the
	// runtime's start costs it 2 ms of CPU instead of 1, at every sandbox. It takes the
	// variable out of the program's environment.
	args := append(sb.bwrapOptions(opts), "--setenv", launcherProcsEnv, "1", "--", launcherPath, LauncherArg, strconv.Itoa(commandFD)+","+strconv.Itoa(readyFD)+","+strconv.Itoa(holdFD))
	args = append(args, sb.cfg.Programs...)
	w.cmd = exec.Command(sb.cfg.Bwrap, args...)
	w.cmd.Env = []string{}
	w.cmd.Dir = "/"
	w.cmd.Stdout = w.ends.Stdout()
	w.cmd.Stderr = w.ends.Stderr()
	w.cmd.ExtraFiles = extra
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		w.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(sb.cfg.HostUID), Gid: uint32(sb.cfg.HostGID), Groups: []uint32{}}
	}
	w.cmd.WaitDelay = 5 * time.Second
	if err := closeInheritedOnExec(); err != nil {
		statusR.Close()
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		statusR.Close()
		w.cmd = nil
		return nil, fmt.Errorf("start bwrap: %w", err)
	}
	go func() { w.statusC <- w.status.read(statusR); statusR.Close() }()
	go func() { w.waited <- w.cmd.Wait() }()
	if w.job != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		pid, err := w.job.join(ctx, w.status)
		cancel()
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("join the memory cgroup: pid %d: %v", pid, err)
		}
		blockW.Close()
	}
	if pid := w.status.childPID(30 * time.Second); pid > 0 {
		w.pidfd = childPidfd(pid, w.cmd.Process.Pid)
	}
	// The sandbox is ready once its launcher has started and waits for its command: a run
	// that took it earlier would wait for the launcher's own start (a few milliseconds).
	readyW.Close()
	_ = readyR.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(readyR, make([]byte, 1)); err != nil {
		return nil, fmt.Errorf("the launcher did not start: %w", err)
	}
	return w, nil
}

// kill ends the sandbox: bwrap's group and its namespaced child, the pid namespace's init.
// Once bwrap has been waited for, it does nothing: a PID signalled then could be another
// process's.
func (w *warm) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	if w.pidfd >= 0 {
		_ = unix.PidfdSendSignal(w.pidfd, unix.SIGKILL, nil, 0)
	} else if pid := w.status.childPID(2 * time.Second); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL) // bwrap, its parent, has not reaped it yet
	}
	if w.cmd != nil && w.cmd.Process != nil {
		_ = w.cmd.Process.Signal(syscall.SIGKILL) // through a pidfd of Go's own
	}
}

// reaped marks bwrap as waited for and ends the PID namespace's first process (killFirst; bwrap,
// killed, may exit before its child), then releases the pidfd and the hold, which
// nothing reads any more: a run that ended without its marks (a deadline, a cap, a launcher
// killed) is settled here, not by end.
func (w *warm) reaped() {
	w.mu.Lock()
	fd := w.pidfd
	w.pidfd, w.ended = -1, true
	w.mu.Unlock()
	killFirst(fd)
	w.releaseHold()
}

// releaseHold closes the host's end of the hold pipe, once: a launcher past its end marks exits.
func (w *warm) releaseHold() {
	w.mu.Lock()
	h := w.hold
	w.hold = nil
	w.mu.Unlock()
	if h != nil {
		h.Close()
	}
}

// alive reports whether the sandbox still waits for its command: neither bwrap nor the PID
// namespace's first process has exited (killed while it waited).
func (w *warm) alive() bool {
	select {
	case err := <-w.waited:
		w.waited <- err // for end
		return false
	default:
	}
	w.mu.Lock()
	fd := -1
	if w.pidfd >= 0 {
		fd, _ = unix.FcntlInt(uintptr(w.pidfd), unix.F_DUPFD_CLOEXEC, 0)
	}
	w.mu.Unlock()
	if fd < 0 {
		return true
	}
	defer unix.Close(fd)
	return !PidfdExited(fd, 0)
}

// teardown ends the sandbox and lets go of its work directory.
func (w *warm) teardown() {
	w.end()
	w.dropDir()
}

// dropDir lets go of w.dir; the last of its users gives it back to the pool's directories,
// which empty it. A run's files leave it before, and the sandbox has ended: no process of a
// job that ran there is left to write to it when the next sandbox takes it.
func (w *warm) dropDir() {
	if w.dirUsers.Add(-1) == 0 {
		_ = w.dirs.Remove(w.dir)
	}
}

// end ends the sandbox and its memory cgroup, leaving its work directory.
func (w *warm) end() {
	if w.command != nil {
		w.command.Close() // the launcher reads no command and exits
	}
	w.releaseHold()
	if w.cmd != nil {
		w.kill()
		<-w.waited
	}
	w.reaped()
	if w.job != nil {
		_, _, _ = w.job.finish()
	}
}

// StagingDeclined reports whether err, from LinkEntries into warmDir, is about the staged files
// (a directory among them, another filesystem) and left warmDir empty: the warm sandbox is then
// as it was, and may take another run. Otherwise (its own directory failed) it is torn down.
func StagingDeclined(err error, warmDir string) bool {
	if !errors.Is(err, errNotLinkable) && !errors.Is(err, syscall.EXDEV) {
		return false
	}
	entries, rerr := os.ReadDir(warmDir)
	return rerr == nil && len(entries) == 0
}

// errNotLinkable is LinkEntries' error for an entry that is not a file to link.
var errNotLinkable = errors.New("not a file to link")

// Run runs spec in a warm sandbox, or a cold one where none is ready.
//
// The sandbox it took is replaced once the run has returned, not while it runs: a start beside
// the program's own (bubblewrap making namespaces and mounts, the launcher starting) slowed
// the program's start by what the warm sandbox saved. Measured on 2 vCPUs (AMD EPYC),
// `ffmpeg -version` from the pool took 153 ms (median of 8) with the refill beside it and 128
// ms after it, against 145 ms cold. A worker's next run on the same slot mostly comes after
// this one ends, so a pool sized by the worker's concurrency still has a sandbox ready when
// jobs are spaced; under a backlog of jobs shorter than a start, no refill keeps up either way.
func (p *Pool) Run(ctx context.Context, spec Spec) (Result, error) {
	if !slices.Contains(p.sb.cfg.Programs, spec.Program) {
		return Result{}, fmt.Errorf("%w: %q", ErrProgramNotAllowed, spec.Program)
	}
	return p.ahead.Run(func(w *warm) (Result, error, bool) { return p.runWarm(ctx, w, spec) },
		func() (Result, error) { return p.sb.run(ctx, spec) })
}

// Refill asks the pool to come back to its size now: after a cold run, whose pool may be empty
// because a start failed, and when the job whose runs took sandboxes is over
// (PoolConfig.RefillDelay).
func (p *Pool) Refill() { p.ahead.Refill() }

// runWarm runs spec in w; cold is true when w could not take it (nothing ran, spec.Dir is as
// it was) and the run should start cold.
func (p *Pool) runWarm(ctx context.Context, w *warm, spec Spec) (res Result, err error, cold bool) {
	sb := p.sb
	if !filepath.IsAbs(spec.Dir) {
		w.teardown()
		return Result{}, fmt.Errorf("sandbox: work dir %q is not absolute", spec.Dir), false
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	lim := spec.Limits.withDefaults(spec.Timeout)
	end := NewEndMark()
	command, err := Launch{Program: spec.Program, Args: spec.Args, Rlimits: sb.rlimits(lim, w.job != nil), End: end}.Encode()
	if err != nil {
		p.ahead.GiveBack(w)
		return Result{}, nil, true // the launcher would not read it whole
	}
	if os.Geteuid() == 0 {
		if err := ChownTree(spec.Dir, sb.cfg.HostUID, sb.cfg.HostGID); err != nil {
			p.ahead.GiveBack(w)
			return Result{}, fmt.Errorf("sandbox: hand work dir to uid %d: %w", sb.cfg.HostUID, err), false
		}
	}
	if !w.alive() {
		w.teardown()
		return Result{}, nil, true
	}
	staged, lerr := LinkEntries(spec.Dir, w.dir)
	if lerr != nil {
		if StagingDeclined(lerr, w.dir) {
			p.ahead.GiveBack(w) // unused: another run may link its files in
		} else {
			w.teardown()
		}
		return Result{}, nil, true
	}
	// From here the staged files are linked into w.dir, and what the run made there goes back
	// to spec.Dir whatever happens. Every way out below ends the sandbox (teardown), or finds
	// it ended (bwrap exited), or leaves that to the refill (finishEarly).
	w.dirUsers.Add(1)
	defer func() {
		if merr := ReturnEntries(w.dir, spec.Dir, staged); merr != nil && err == nil {
			err = fmt.Errorf("sandbox: move the run's files back: %w", merr)
		}
		w.dropDir()
	}()
	if w.job != nil {
		if err := w.job.setLimit(lim.MemoryBytes); err != nil {
			w.teardown()
			return Result{}, fmt.Errorf("%w: %v", ErrSetup, err), false
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	killCtx, kill := context.WithCancel(runCtx)
	defer kill()
	watcher, err := WatchCaps(w.dir, lim, kill)
	if err != nil {
		w.command.Close()
		w.teardown()
		return Result{}, fmt.Errorf("%w: %v", ErrSetup, err), false
	}
	if pid := w.status.childPID(0); pid > 0 {
		_ = watcher.Follow(pid) // the sandbox was alive just now; if it has ended, nothing in it holds a file
	}
	stderr := NewTailWriter(StderrTailBytes)
	w.ends.Set(spec.Stdout, StderrWriter(stderr, spec.Stderr))
	ended := w.ends.Expect(end)
	if err := ctx.Err(); err != nil {
		_, _ = watcher.Close()
		w.teardown()
		return Result{}, fmt.Errorf("sandbox: %w", err), false
	}
	start := time.Now()
	_, werr := w.command.Write(command)
	w.command.Close()
	w.command = nil
	if werr != nil {
		// The launcher ran nothing (it died meanwhile, or has no whole command): cold.
		_, _ = watcher.Close()
		w.teardown()
		return Result{}, nil, true
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-killCtx.Done():
			w.kill()
		case <-stopped:
		}
	}()
	var waitErr error
	select {
	case <-ended:
		// The program has exited and its output is all read: the run's result is known. The
		// sandbox's teardown goes on in the background.
		close(stopped)
		return p.finishEarly(ctx, runCtx, w, start, stderr, lim, watcher)
	case waitErr = <-w.waited:
	}
	close(stopped)
	w.reaped()
	w.dropDir() // bwrap has exited, and with it the sandbox
	w.ends.Flush()
	res = Result{Wall: time.Since(start), StderrTail: stderr.Bytes(), ExitCode: -1}
	if w.cmd.ProcessState != nil {
		res.ExitCode = w.cmd.ProcessState.ExitCode()
	}
	if st := <-w.statusC; st.exitCode != nil {
		res.ExitCode = *st.exitCode
	}
	var oomKilled bool
	var peak int64
	if w.job != nil {
		if oomKilled, peak, err = w.job.finish(); err != nil {
			sb.cfg.Log.Warn("sandbox: memory cgroup left behind", "err", err)
		}
	}
	res, err = conclude(ctx, runCtx, res, lim, watcher, oomKilled, peak, waitErr)
	return res, err, false
}

// finishEarly settles a run whose launcher reported the program's exit: its memory cgroup's
// counters are read, and the teardown (bubblewrap's exit, the namespaces, the cgroup) goes on
// in the background (Close waits for it). The work directory can be handed back at once: the
// launcher writes its marks only once every process the program left behind is gone
// (killLeftovers), and the program can neither forge the marks nor make the launcher write them
// early; killing the launcher withholds them, and the run then ends on bubblewrap's exit.
func (p *Pool) finishEarly(ctx, runCtx context.Context, w *warm, start time.Time, stderr *TailWriter, lim Limits, watcher *workcap.Watcher) (Result, error, bool) {
	res := Result{Wall: time.Since(start), StderrTail: stderr.Bytes(), ExitCode: w.ends.ExitCode()}
	var oomKilled bool
	var peak int64
	if w.job != nil {
		oomKilled, peak = w.job.counters()
	}
	w.ends.Set(nil, nil)
	// The launcher waits (its hold pipe) and the sandbox with it: its teardown, the kernel's
	// work of milliseconds, comes with the refill, once the job has reported.
	p.ahead.RetireLater(w.teardown)
	res, err := conclude(ctx, runCtx, res, lim, watcher, oomKilled, peak, nil)
	return res, err, false
}

// Staged is what LinkEntries linked into a warm sandbox's work directory: each name with its
// file's identity.
type Staged map[string]fileID

// LinkEntries hard-links every entry of from into to (one filesystem), and returns the
// links it made, by name, with their files' identities. Links, not moves: other runs on the
// same directory at the same time (the probe of an input beside the job's FFmpeg, the probes
// of its outputs) each see every staged file. A directory, which cannot be linked, or any
// other failure undoes the links and answers an error: the run then starts cold.
func LinkEntries(from, to string) (Staged, error) {
	entries, err := os.ReadDir(from)
	if err != nil {
		return nil, err
	}
	linked := Staged{}
	undo := func(err error) (Staged, error) {
		for name := range linked {
			_ = os.Remove(filepath.Join(to, name))
		}
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() {
			return undo(fmt.Errorf("%s is a directory: %w", e.Name(), errNotLinkable))
		}
		src, dst := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		if err := os.Link(src, dst); err != nil {
			return undo(err)
		}
		id, err := idOf(dst)
		if err != nil {
			return undo(err)
		}
		linked[e.Name()] = id
	}
	return linked, nil
}

// ReturnEntries moves into to what the run left in from: its new entries are renamed (which
// does not follow a symlink the run made), and the links LinkEntries made that still name the
// same file are removed. A staged name the run replaced with a file of its own is moved back
// over the staged one, as the run would have replaced it in place.
func ReturnEntries(from, to string, staged Staged) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		src := filepath.Join(from, e.Name())
		if id, ok := staged[e.Name()]; ok {
			if now, err := idOf(src); err == nil && now == id {
				errs = append(errs, os.Remove(src))
				continue
			}
		}
		errs = append(errs, os.Rename(src, filepath.Join(to, e.Name())))
	}
	return errors.Join(errs...)
}

// fileID is a file's identity on its filesystem.
type fileID struct{ dev, ino uint64 }

// idOf is the identity of the entry at path, not following a symlink.
func idOf(path string) (fileID, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), st.Ino}, nil
}

// NewEndMark is a run's end mark (Launch.End): random, unprintable, never in a program's output
// by chance, and unknown to the program.
func NewEndMark() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "\x00mediajobs-end-" + hex.EncodeToString(b[:]) + "\x00"
}

// EndMarks reads a launcher's two output streams: it passes them on to the writers Set names
// (nothing before), and finds in them the end marks of the run Expect names.
type EndMarks struct {
	out, err       endWriter
	stdout, stderr switchWriter
}

// NewEndMarks returns EndMarks that pass nothing on until Set.
func NewEndMarks() *EndMarks {
	m := &EndMarks{}
	m.out.next, m.err.next = &m.stdout, &m.stderr
	return m
}

// Stdout is where the launcher's stdout goes.
func (m *EndMarks) Stdout() io.Writer { return &m.out }

// Stderr is where the launcher's stderr goes.
func (m *EndMarks) Stderr() io.Writer { return &m.err }

// Set names where the run's output goes from now on; nil discards it.
func (m *EndMarks) Set(stdout, stderr io.Writer) {
	m.stdout.set(stdout)
	m.stderr.set(stderr)
}

// Expect arms both streams with the run's end mark, and returns a channel closed once both
// marks came: every byte the program wrote is then read, and its exit code known (ExitCode).
func (m *EndMarks) Expect(mark string) <-chan struct{} {
	ended := make(chan struct{})
	var left atomic.Int32
	left.Store(2)
	onEnd := func() {
		if left.Add(-1) == 0 {
			close(ended)
		}
	}
	m.out.expect(mark, false, onEnd)
	m.err.expect(mark, true, onEnd)
	return ended
}

// ExitCode is the program's exit code that followed the mark on stderr; -1 when there was none.
func (m *EndMarks) ExitCode() int { return m.err.exitCode() }

// Flush passes on what was held back, when the run ended without its marks.
func (m *EndMarks) Flush() {
	m.out.flush()
	m.err.flush()
}

// endWriter passes a stream on to next up to the launcher's end mark, which it takes out; on
// stderr the mark is followed by the exit code and a newline. Until a mark is expected it passes
// everything on; it holds back only the few bytes that could be the start of the mark.
type endWriter struct {
	mu       sync.Mutex
	next     io.Writer
	mark     []byte
	withCode bool
	held     []byte
	seen     bool
	code     []byte
	onEnd    func()
	closed   bool
}

// expect arms w with mark; onEnd is called once the mark (and its code) came.
func (e *endWriter) expect(mark string, withCode bool, onEnd func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mark, e.withCode, e.onEnd = []byte(mark), withCode, onEnd
}

func (e *endWriter) Write(b []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(b)
	switch {
	case e.mark == nil:
		_, _ = e.next.Write(b)
	case !e.seen:
		data := append(e.held, b...)
		if i := bytes.Index(data, e.mark); i >= 0 {
			_, _ = e.next.Write(data[:i])
			e.seen, e.held = true, nil
			e.afterMark(data[i+len(e.mark):])
			break
		}
		keep := min(len(data), len(e.mark)-1)
		_, _ = e.next.Write(data[:len(data)-keep])
		e.held = append([]byte(nil), data[len(data)-keep:]...)
	default:
		e.afterMark(b)
	}
	return n, nil
}

// afterMark reads what follows the mark: the exit code up to a newline, on stderr.
func (e *endWriter) afterMark(b []byte) {
	if e.closed {
		return
	}
	if e.withCode {
		e.code = append(e.code, b...)
		if len(e.code) > 16 || bytes.IndexByte(e.code, '\n') >= 0 {
			e.close()
		}
		return
	}
	e.close()
}

func (e *endWriter) close() {
	e.closed = true
	e.onEnd()
}

// exitCode is the code that followed the mark; -1 when it was not a number.
func (e *endWriter) exitCode() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	line, _, _ := bytes.Cut(e.code, []byte("\n"))
	n, err := strconv.Atoi(string(line))
	if err != nil {
		return -1
	}
	return n
}

// flush passes on what was held back, when the run ended without its mark.
func (e *endWriter) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.held) > 0 {
		_, _ = e.next.Write(e.held)
		e.held = nil
	}
}

// switchWriter writes to the writer set last; nothing before.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(b), nil
	}
	return s.w.Write(b)
}

// copyExecutable copies the file at from to to, mode 0755.
func copyExecutable(from, to string) error {
	_ = os.Remove(to)
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
