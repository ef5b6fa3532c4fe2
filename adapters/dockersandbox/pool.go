package dockersandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// LauncherLabel is the image label naming the path of the warm containers' launcher in the
// image (mediajobs-launcher, adapters/sandbox/native/launcher.c): DefaultImage carries it, and an
// image without it is not pooled.
const LauncherLabel = "io.mediajobs.launcher"

// ErrNoLauncher is returned by NewPool for an image without a launcher (LauncherLabel).
var ErrNoLauncher = errors.New("dockersandbox: the image has no launcher")

// Pool is a Runner that keeps containers started ahead, as sandbox.Pool keeps bubblewrap
// sandboxes: each is the container of a cold run (the same image, user, mounts, namespaces,
// capabilities and cgroup limits) but for two things. Its entrypoint is the image's launcher,
// waiting on the attached stdin for its one command; and an empty directory of the pool's own is
// bound as its work directory. Run hard-links the staged files of Spec.Dir in, sets the run's
// memory and process caps on the container where they differ from those it was made with,
// writes the command (the launcher checks the program against the allowlist, sets the rlimits a
// cold run's container has, and starts it), and moves what the run made back into Spec.Dir once
// every process of the container is gone. Each container runs once and is removed. Where no
// container is ready, or the staged files cannot be linked in (another filesystem, a
// directory), the run starts cold (Sandbox.Run).
//
// What a warm container takes off a run's path is the engine's create, attach and start (the
// overlay filesystem, runc's namespaces, cgroup and mounts): about three quarters of a cold run's
// fixed cost. Its removal happens after the run has returned, in the background.
type Pool struct {
	s        *Sandbox
	root     string
	launcher string
	programs []string
	ahead    *sandbox.Ahead[*warm]
	log      *slog.Logger
	mu       sync.Mutex
	made     shape // what the next containers are made with
}

// shape is what a warm container is made with: the memory and pids caps the engine sets, the
// last run's (a run that asks for others has them set before its command is written), and the
// ceilings of the rlimits that the launcher lowers to each run's: the highest any run asked for
// (a run that asks for more runs cold), so that the engine still bounds what a run could take
// if its launcher did not.
type shape struct {
	memory, pids       int64
	cpu, fsize, nofile int64
}

func shapeOf(lim sandbox.Limits) shape {
	return shape{memory: lim.MemoryBytes, pids: lim.Processes, cpu: lim.CPUSeconds, fsize: fileSizeLimit(lim), nofile: lim.OpenFiles}
}

// limits are the sandbox.Limits that containerConfig makes a container of this shape from.
func (s shape) limits() sandbox.Limits {
	return sandbox.Limits{MemoryBytes: s.memory, Processes: s.pids, CPUSeconds: s.cpu, FileSizeBytes: s.fsize, JobBytes: s.fsize, OpenFiles: s.nofile}
}

// holds reports whether a container of shape s may run a run of shape r: its rlimits' ceilings
// reach r's.
func (s shape) holds(r shape) bool {
	return r.cpu <= s.cpu && r.fsize <= s.fsize && r.nofile <= s.nofile
}

// note makes the next containers fit a run of shape r.
func (p *Pool) note(r shape) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.made = shape{memory: r.memory, pids: r.pids,
		cpu: max(p.made.cpu, r.cpu), fsize: max(p.made.fsize, r.fsize), nofile: max(p.made.nofile, r.nofile)}
}

var _ sandbox.Runner = (*Pool)(nil)

// PoolConfig sizes a pool.
type PoolConfig struct {
	// Size is how many containers are kept started.
	Size int
	// Root holds the warm containers' work directories; it must be on the filesystem of the
	// runs' work directories (the staged files are hard-linked in), and, for an engine that
	// mounts host paths into a worker's own container, at the same path on the host.
	Root string
	// RefillDelay is how long after a warm run the pool waits to start its refill unless Refill
	// says sooner (sandbox.PoolConfig.RefillDelay). Zero refills at once.
	RefillDelay time.Duration
	// Log receives the containers that could not be started; default slog.Default().
	Log *slog.Logger
}

// NewPool starts a pool over s and fills it in the background until Close. It answers
// ErrNoLauncher for an image without a launcher, and an error for a GPU sandbox (a GPU container
// is not pooled).
func NewPool(ctx context.Context, s *Sandbox, cfg PoolConfig) (*Pool, error) {
	if cfg.Size < 1 {
		return nil, fmt.Errorf("dockersandbox: pool size %d is not positive", cfg.Size)
	}
	if s.cfg.GPU != nil {
		return nil, errors.New("dockersandbox: a GPU sandbox is not pooled")
	}
	img, err := s.cli.ImageInspect(ctx, s.cfg.Image)
	if err != nil {
		return nil, fmt.Errorf("dockersandbox: inspect image %q: %w", s.cfg.Image, err)
	}
	var launcher string
	if img.Config != nil {
		launcher = img.Config.Labels[LauncherLabel]
	}
	if !filepath.IsAbs(launcher) || filepath.Clean(launcher) != launcher {
		return nil, fmt.Errorf("%w: image %q has no %s label naming it (make images builds one that has)", ErrNoLauncher, s.cfg.Image, LauncherLabel)
	}
	if err := sandbox.PoolRoot(cfg.Root); err != nil {
		return nil, fmt.Errorf("dockersandbox: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	programs := slices.Compact(slices.Sorted(maps.Values(s.cfg.Programs)))
	p := &Pool{s: s, root: cfg.Root, launcher: launcher, programs: programs, log: cfg.Log,
		made: shapeOf(sandbox.Limits{}.WithDefaults(sandbox.DefaultTimeout))}
	p.ahead = sandbox.NewAhead(cfg.Size, cfg.RefillDelay, p.start, (*warm).remove, func(err error) {
		cfg.Log.Warn("dockersandbox: a warm container could not be started; runs start cold", "err", err)
	})
	return p, nil
}

// Close removes the containers still waiting, and waits for the removal of those that ran.
func (p *Pool) Close() { p.ahead.Close() }

// WaitFull waits until every container of the pool is started and waiting, or ctx ends.
func (p *Pool) WaitFull(ctx context.Context) error { return p.ahead.WaitFull(ctx) }

// Ready is how many containers are started and waiting.
func (p *Pool) Ready() int { return p.ahead.Ready() }

// WarmRuns is how many runs a warm container took (the others started cold).
func (p *Pool) WarmRuns() int64 { return p.ahead.WarmRuns() }

// Refill asks the pool to come back to its size now (sandbox.Pool.Refill).
func (p *Pool) Refill() { p.ahead.Refill() }

// Available is the sandbox's.
func (p *Pool) Available(ctx context.Context) error { return p.s.Available(ctx) }

// warm is one started container whose launcher waits for its command.
type warm struct {
	s      *Sandbox
	log    *slog.Logger
	id     string
	dir    string
	shape  shape // what it was made with
	att    client.HijackedResponse
	ends   *sandbox.EndMarks
	copied chan struct{}
	wait   client.ContainerWaitResult
	// stopWait ends the wait for the container's exit.
	stopWait context.CancelFunc
	host     *hostKill
}

// start makes, attaches to and starts one container.
func (p *Pool) start() (_ *warm, err error) {
	s := p.s
	dir, err := os.MkdirTemp(p.root, "warm-")
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	made := p.made
	p.mu.Unlock()
	w := &warm{s: s, log: p.log, dir: dir, shape: made, ends: sandbox.NewEndMarks(), copied: make(chan struct{}), host: &hostKill{fd: -1}}
	defer func() {
		if err != nil {
			w.remove()
		}
	}()
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	if os.Geteuid() == 0 {
		user = fmt.Sprintf("%d:%d", nobody, nobody)
		if err := os.Chown(dir, nobody, nobody); err != nil {
			return nil, err
		}
	}
	// The container's rlimits are the shape's ceilings, which the launcher lowers to the run's
	// (an unprivileged process can lower a hard limit, not raise it).
	cfg, host := s.containerConfig(sandbox.Spec{Dir: dir}, "", w.shape.limits(), user)
	// The launcher, a Go program, starts on one P and takes GOMAXPROCS out of the program's
	// environment (sandbox.Pool does the same).
	cfg.Entrypoint = append([]string{p.launcher, sandbox.LauncherArg, "0"}, p.programs...)
	cfg.Cmd = nil
	cfg.Env = append(cfg.Env, "GOMAXPROCS=1")
	cfg.AttachStdin, cfg.OpenStdin, cfg.StdinOnce = true, true, true
	// A worker that dies (killed, or stopped past its grace) closes the attach stream: the
	// engine then closes the launcher's stdin, the launcher exits without a command, and the
	// engine removes the container, so none outlives its worker.
	host.AutoRemove = true
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	created, err := s.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	w.id = created.ID
	att, err := s.cli.ContainerAttach(ctx, w.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	w.att = att.HijackedResponse
	go func() {
		defer close(w.copied)
		_, _ = stdcopy.StdCopy(w.ends.Stdout(), w.ends.Stderr(), w.att.Reader)
	}()
	waitCtx, stopWait := context.WithCancel(context.Background())
	w.stopWait = stopWait
	w.wait = s.cli.ContainerWait(waitCtx, w.id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := s.cli.ContainerStart(ctx, w.id, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("start container: %w", err)
	}
	w.host.fd, w.host.pid = s.hostPidfd(ctx, w.id)
	return w, nil
}

// kill kills the container: its first process from this host where it can, and through the
// engine.
func (w *warm) kill() {
	w.host.kill()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		_, _ = w.s.cli.ContainerKill(ctx, w.id, client.ContainerKillOptions{Signal: "KILL"})
	}()
}

// remove removes the container (killing what still runs) and its work directory; a container
// the engine did not remove is logged (the worker's next start removes it with its leftovers),
// and its directory kept.
func (w *warm) remove() {
	if err := w.removeContainer(); err != nil {
		w.log.Warn("dockersandbox: a used container could not be removed", "container", w.id, "err", err)
		return
	}
	_ = os.RemoveAll(w.dir)
}

// removeContainer ends the container and waits until the engine has removed it: once it has
// returned without an error no process of the container runs any more. A started container is
// removed by the engine itself when it exits (AutoRemove), so this kills it and waits, and
// never removes it beside the engine (two removals of one container at once left it "Removal
// In Progress" for good on Docker 20.10); only one never started is removed here.
func (w *warm) removeContainer() error {
	if w.att.Conn != nil {
		w.att.Close()
	}
	if w.stopWait != nil {
		w.stopWait()
	}
	w.host.close()
	if w.id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	info, err := w.s.cli.ContainerInspect(ctx, w.id, client.ContainerInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return nil
	case err == nil && info.Container.State != nil && info.Container.State.Status == container.StateCreated:
		if _, err := w.s.cli.ContainerRemove(ctx, w.id, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return err
		}
		return nil
	}
	removed := w.s.cli.ContainerWait(ctx, w.id, client.ContainerWaitOptions{Condition: container.WaitConditionRemoved})
	_, _ = w.s.cli.ContainerKill(ctx, w.id, client.ContainerKillOptions{Signal: "KILL"}) // fails once it has exited
	if err := waitOrGone(ctx, w.s.cli, w.id, removed); err != nil {
		return fmt.Errorf("container %s, waiting for its removal: %w", w.id, err)
	}
	return nil
}

// waitOrGone waits for a ContainerWait of container id to answer, or for the container to be
// gone. The engine may remove the container between the caller's last look and the wait's start
// and then never answer the wait: a worker's stop hung on it for the whole cleanupTimeout (two
// runs of BenchmarkRunnerOverhead/docker-warm in eight; none in six with this). An inspect every
// removalPoll ends the wait once the container is gone; a container the engine no longer knows
// has met every condition (its removal came first). The wait's answer is read even when the
// poll ends it: the client sends it on a channel nobody else reads, and its goroutine (with the
// engine's connection) would wait for a reader for ever. ctx must end once the caller is done
// with the container, which ends a wait still unanswered.
func waitOrGone(ctx context.Context, cli *client.Client, id string, wait client.ContainerWaitResult) error {
	poll := time.NewTicker(removalPoll)
	defer poll.Stop()
	for {
		select {
		case <-wait.Result:
			return nil
		case err := <-wait.Error:
			if cerrdefs.IsNotFound(err) { // removed before the wait began
				return nil
			}
			return err
		case <-poll.C:
			if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); cerrdefs.IsNotFound(err) {
				go func() {
					select {
					case <-wait.Result:
					case <-wait.Error:
					}
				}()
				return nil
			}
		}
	}
}

// removalPoll is how often waitOrGone asks whether the container waited on is gone.
const removalPoll = 250 * time.Millisecond

// alive reports whether the container still waits for its command: its launcher has not exited
// (killed while it waited, or its attach stream broken, which it reads as no command).
func (w *warm) alive() bool {
	select {
	case <-w.copied:
		return false
	case <-w.wait.Result:
		return false
	case <-w.wait.Error:
		return false
	default:
	}
	return !w.host.exited(0)
}

// Run runs spec in a warm container, or a cold one where none is ready.
func (p *Pool) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	program, ok := p.s.cfg.Programs[spec.Program]
	if !ok {
		return sandbox.Result{}, fmt.Errorf("%w: %q", sandbox.ErrProgramNotAllowed, spec.Program)
	}
	return p.ahead.Run(func(w *warm) (sandbox.Result, error, bool) { return p.runWarm(ctx, w, program, spec) },
		func() (sandbox.Result, error) { return p.s.Run(ctx, spec) })
}

// runWarm runs spec in w, which it gives back or removes; cold is true when w could not take it
// (nothing ran, spec.Dir is as it was) and the run should start cold.
func (p *Pool) runWarm(ctx context.Context, w *warm, program string, spec sandbox.Spec) (res sandbox.Result, err error, cold bool) {
	if !filepath.IsAbs(spec.Dir) {
		p.ahead.GiveBack(w)
		return sandbox.Result{}, fmt.Errorf("dockersandbox: work dir %q is not absolute", spec.Dir), false
	}
	if fi, err := os.Stat(spec.Dir); err != nil || !fi.IsDir() {
		p.ahead.GiveBack(w)
		return sandbox.Result{}, fmt.Errorf("dockersandbox: work dir %q is not a directory", spec.Dir), false
	}
	if spec.Timeout <= 0 {
		spec.Timeout = sandbox.DefaultTimeout
	}
	lim := spec.Limits.WithDefaults(spec.Timeout)
	want := shapeOf(lim)
	p.note(want) // the next containers fit the runs of this worker
	if !w.alive() || !w.shape.holds(want) {
		p.ahead.Retire(w.remove)
		return sandbox.Result{}, nil, true
	}
	end := sandbox.NewEndMark()
	command, err := sandbox.Launch{Program: program, Args: spec.Args, Rlimits: rlimits(lim), End: end}.Encode()
	if err != nil {
		p.ahead.GiveBack(w)
		return sandbox.Result{}, nil, true // the launcher would not read it whole
	}
	if os.Geteuid() == 0 {
		if err := sandbox.ChownTree(spec.Dir, nobody, nobody); err != nil {
			p.ahead.GiveBack(w)
			return sandbox.Result{}, fmt.Errorf("dockersandbox: hand work dir to uid %d: %w", nobody, err), false
		}
	}
	staged, lerr := sandbox.LinkEntries(spec.Dir, w.dir)
	if lerr != nil {
		if sandbox.StagingDeclined(lerr, w.dir) {
			p.ahead.GiveBack(w) // unused: another run may link its files in
		} else {
			p.ahead.Retire(w.remove)
		}
		return sandbox.Result{}, nil, true
	}
	// From here w's directory holds links to the staged files: w is removed, not given back.
	if want.memory != w.shape.memory || want.pids != w.shape.pids {
		pids := want.pids
		_, err := p.s.cli.ContainerUpdate(ctx, w.id, client.ContainerUpdateOptions{Resources: &container.Resources{
			Memory: want.memory, MemorySwap: want.memory, PidsLimit: &pids,
		}})
		if err != nil {
			p.ahead.Retire(w.remove)
			return sandbox.Result{}, nil, true
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	killCtx, kill := context.WithCancel(runCtx)
	defer kill()
	watcher, err := sandbox.WatchCaps(w.dir, lim, kill)
	if err != nil {
		p.ahead.Retire(w.remove)
		return sandbox.Result{}, fmt.Errorf("%w: %v", sandbox.ErrSetup, err), false
	}
	if w.host.pid > 0 {
		w.s.follow(watcher, w.host.pid)
	}
	stderr := sandbox.NewTailWriter(sandbox.StderrTailBytes)
	w.ends.Set(spec.Stdout, sandbox.StderrWriter(stderr, spec.Stderr))
	ended := w.ends.Expect(end)
	if err := ctx.Err(); err != nil {
		_, _ = watcher.Close()
		p.ahead.Retire(w.remove)
		return sandbox.Result{}, fmt.Errorf("dockersandbox: %w", err), false
	}
	start := time.Now()
	_, werr := w.att.Conn.Write(command)
	if werr == nil {
		werr = w.att.CloseWrite()
	}
	if werr != nil {
		// The launcher runs nothing before the end of its stream; removed before the cold
		// run starts, so that it never does.
		_, _ = watcher.Close()
		w.remove()
		return sandbox.Result{}, nil, true
	}
	res, gone, runErr := w.await(killCtx, ended, start)
	if !gone {
		// The container's end is not known (the engine's wait broke, or its kill did not land):
		// removed first, so that no process of it acts on the files handed back.
		if rerr := w.removeContainer(); rerr != nil {
			_, _ = watcher.Close()
			w.ends.Set(nil, nil)
			p.ahead.Retire(w.remove) // tried again; the directory stays if it fails again
			return res, fmt.Errorf("dockersandbox: the run's container could not be removed, its files are kept from the job: %v (after: %v)", rerr, runErr), false
		}
	}
	w.ends.Set(nil, nil) // nothing more reaches the caller's writers
	res.StderrTail = stderr.Bytes()
	if runErr == nil && res.ExitCode > 0 && res.ExitCode < 128 && reachedFileSize(w.dir, fileSizeLimit(lim)) {
		res.ExitCode = 128 + int(syscall.SIGXFSZ) // as Sandbox.Run reads it
	}
	// The caps' last measure is of the run's directory while its files are still there: after
	// they go back, it would find nothing, and a burst the events had not yet told of would
	// pass. The bubblewrap pool measures before it hands the files back too.
	settledRes, settled, settleErr := sandbox.Settle(ctx, runCtx, res, lim, watcher, "dockersandbox")
	if merr := sandbox.ReturnEntries(w.dir, spec.Dir, staged); merr != nil && runErr == nil {
		runErr = fmt.Errorf("dockersandbox: move the run's files back: %w", merr)
	}
	p.ahead.Retire(w.remove)
	if settled {
		return settledRes, settleErr, false
	}
	return res, runErr, false
}

// await waits for the run released at start to end, killing the container when ctx ends. The
// launcher's end marks tell the exit code as soon as the program has exited and its output is
// all read; the container's first process, the launcher, exits just after, taking every other
// process of the container with it, which the host sees on its pidfd, or else the engine's wait
// reports. gone says whether every process of the container is known to be gone.
func (w *warm) await(ctx context.Context, ended <-chan struct{}, start time.Time) (res sandbox.Result, gone bool, err error) {
	res = sandbox.Result{ExitCode: -1}
	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil
			w.kill()
			time.AfterFunc(cleanupTimeout, w.stopWait)
		case <-ended:
			res.Wall = time.Since(start)
			res.ExitCode = w.ends.ExitCode()
			if w.host.exited(cleanupTimeout) {
				return res, true, nil
			}
			ended = nil // no pidfd: the engine's wait tells the exit
		case err := <-w.wait.Error:
			if res.Wall == 0 {
				res.Wall = time.Since(start)
			}
			return res, false, fmt.Errorf("dockersandbox: wait: %w", err)
		case r := <-w.wait.Result:
			if ended != nil { // no end marks: the launcher failed, or the run was killed
				res.Wall = time.Since(start)
				res.ExitCode = int(r.StatusCode)
				select {
				case <-w.copied:
				case <-time.After(5 * time.Second):
					w.att.Close()
					<-w.copied
				}
				w.ends.Flush()
			}
			if r.Error != nil && r.Error.Message != "" {
				return res, true, fmt.Errorf("dockersandbox: wait: %s", r.Error.Message)
			}
			return res, true, nil
		}
	}
}

// rlimits are the rlimits of a cold run's container (containerConfig), which the launcher sets.
func rlimits(lim sandbox.Limits) []sandbox.Rlimit {
	return []sandbox.Rlimit{
		{Resource: syscall.RLIMIT_CPU, Value: uint64(lim.CPUSeconds)},
		{Resource: syscall.RLIMIT_FSIZE, Value: uint64(fileSizeLimit(lim))},
		{Resource: syscall.RLIMIT_NOFILE, Value: uint64(lim.OpenFiles)},
		{Resource: unix.RLIMIT_CORE, Value: 0},
	}
}
