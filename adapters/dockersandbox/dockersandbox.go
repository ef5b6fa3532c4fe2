// Package dockersandbox runs the FFmpeg step in a Docker container through the Engine API: no
// network, a read-only root, one writable bind mount, no capabilities, a non-root user, cgroup
// limits, and the same per-job caps and deadlines as the bubblewrap sandbox.
package dockersandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/workcap"
)

// DefaultImage is the image Run uses unless Config.Image names another. It is built from the
// Dockerfile beside this file (Debian 12's FFmpeg, the same build the bubblewrap sandbox runs
// on a Debian host, so the validator's allowlist means the same thing in both):
//
//	docker build -t mediajobs/ffmpeg:bookworm adapters/dockersandbox
const DefaultImage = "mediajobs/ffmpeg:bookworm"

const (
	// nobody is the container's user when the caller is root.
	nobody = 65534
	// tmpBytes caps the private /tmp, which lives in memory and counts against Memory.
	tmpBytes = 64 << 20
	// label marks the containers this package makes, so an operator can find leftovers;
	// ownerLabel names the sandbox (the worker) that made one, whose start removes its own.
	label      = "io.mediajobs.sandbox"
	ownerLabel = "io.mediajobs.sandbox.owner"
	// cleanupTimeout bounds the kill and removal of a container after the run's context ended.
	cleanupTimeout = 30 * time.Second
)

// ErrUnavailable is returned by Available when no engine answers or the image is missing.
var ErrUnavailable = errors.New("dockersandbox: unavailable")

// Config describes the sandbox, not one run.
type Config struct {
	// Image is the FFmpeg image; default DefaultImage.
	Image string
	// Host is the engine's address (unix:///var/run/docker.sock, tcp://...); "" reads
	// DOCKER_HOST, then the local socket. The engine must run on this machine: the work
	// directory is bind-mounted from it, and the caps watch it here.
	Host string
	// Programs maps the paths a Spec names (sandbox.FFmpeg, sandbox.FFprobe) to their paths in
	// the image; default both at the same path, where DefaultImage has them.
	Programs map[string]string
	// CPUs caps the container's CPU time per second; default every CPU of this machine.
	CPUs float64
	// GPU passes NVIDIA GPUs through; nil is a CPU sandbox.
	GPU *GPU
	// Log receives what the sandbox warns of; default slog.Default().
	Log *slog.Logger
	// Owner names this sandbox among those sharing an engine (several workers on one machine):
	// its containers carry it, and RemoveLeftovers removes only those. Default: the host name,
	// which a worker restarted in the same container or on the same machine keeps.
	Owner string
	// ProbeDir is where Available makes the probe's work directory; default os.TempDir(). In a
	// worker that runs in a container itself, the engine mounts host paths: name the work root
	// that is mounted at the same path on the host and in the worker's container.
	ProbeDir string
}

// GPU chooses how GPUs reach the container.
type GPU struct {
	// Explicit, from sandbox.FindGPU, binds these device nodes and driver libraries by hand,
	// for engines without the NVIDIA Container Toolkit. Otherwise the toolkit's device
	// request passes the GPUs and the driver.
	Explicit *sandbox.GPU
	// DeviceIDs picks GPUs for the toolkit by index or UUID; empty is all of them.
	DeviceIDs []string
}

// Sandbox runs allowlisted programs in containers. It is safe for concurrent use.
type Sandbox struct {
	cfg     Config
	cli     *client.Client
	seccomp string // the containers' system call filter (seccompProfile)
	unseen  sync.Once
}

// follow has watcher count the files the container whose first process is pid holds with no
// name; where this worker cannot see them, it says so once.
func (s *Sandbox) follow(watcher *workcap.Watcher, pid int) {
	if err := watcher.Follow(pid); err != nil {
		s.warnUnseen(err)
	}
}

// warnUnseen says, once, that this worker cannot see its containers' processes: why stands in
// err. Their files with no name are then not counted against the byte cap.
func (s *Sandbox) warnUnseen(err error) {
	s.unseen.Do(func() {
		s.cfg.Log.Warn("dockersandbox: this worker cannot see its containers' processes, so the files a job holds with no name (unlinked while open) are not counted against its byte cap, and a kill waits for the engine; run the worker in the host's PID namespace, as root",
			"err", err)
	})
}

var (
	_ sandbox.Runner     = (*Sandbox)(nil)
	_ sandbox.GPUChecker = (*Sandbox)(nil)
)

// New returns a Sandbox for cfg; it does not contact the engine (Available does).
func New(cfg Config) (*Sandbox, error) {
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.Programs == nil {
		cfg.Programs = map[string]string{sandbox.FFmpeg: sandbox.FFmpeg, sandbox.FFprobe: sandbox.FFprobe}
	}
	cfg.Programs = maps.Clone(cfg.Programs)
	for from, to := range cfg.Programs {
		if !filepath.IsAbs(to) || filepath.Clean(to) != to {
			return nil, fmt.Errorf("dockersandbox: program %q maps to %q, not a clean absolute path", from, to)
		}
	}
	if cfg.CPUs < 0 {
		return nil, fmt.Errorf("dockersandbox: CPUs %v is negative", cfg.CPUs)
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = float64(runtime.NumCPU())
	}
	if cfg.Owner == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("dockersandbox: no Owner and no host name: %w", err)
		}
		cfg.Owner = host
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.GPU != nil {
		g := *cfg.GPU
		g.DeviceIDs = slices.Clone(g.DeviceIDs)
		if g.Explicit != nil {
			// The bubblewrap sandbox's rules for a hand-made GPU hold here too.
			if _, err := sandbox.New(sandbox.Config{GPU: g.Explicit}); err != nil {
				return nil, fmt.Errorf("dockersandbox: %w", err)
			}
		}
		cfg.GPU = &g
	}
	opts := []client.Opt{client.FromEnv}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("dockersandbox: engine client: %w", err)
	}
	profile, err := seccompProfile()
	if err != nil {
		return nil, fmt.Errorf("dockersandbox: system call filter: %w", err)
	}
	return &Sandbox{cfg: cfg, cli: cli, seccomp: profile}, nil
}

// Close releases the engine connection.
func (s *Sandbox) Close() error { return s.cli.Close() }

// Available checks that the engine answers, the image is there, and a probe container can write
// its output into a bind-mounted work directory of this machine (a remote engine, or one
// remapping users, cannot).
func (s *Sandbox) Available(ctx context.Context) error {
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.cli.Ping(pingCtx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("%w: no Docker engine answers at %s: %v", ErrUnavailable, s.cli.DaemonHost(), err)
	}
	if _, err := s.cli.ImageInspect(ctx, s.cfg.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: image %q is not on the engine; build it with `docker build -t %s adapters/dockersandbox` or pull it", ErrUnavailable, s.cfg.Image, s.cfg.Image)
		}
		return fmt.Errorf("%w: inspect image %q: %v", ErrUnavailable, s.cfg.Image, err)
	}
	if s.cfg.ProbeDir != "" {
		if err := os.MkdirAll(s.cfg.ProbeDir, 0o711); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	dir, err := os.MkdirTemp(s.cfg.ProbeDir, "dockersandbox-probe-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer os.RemoveAll(dir)
	// The sandbox user (nobody, when the caller is root) must reach the work directory.
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	res, err := s.Run(ctx, sandbox.Spec{Dir: dir, Program: sandbox.FFmpeg, Timeout: time.Minute, Args: []string{
		"-hide_banner", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "color=size=16x16:duration=0.04", "-frames:v", "1", "probe.png",
	}})
	if err != nil {
		return fmt.Errorf("%w: probe container: %v", ErrUnavailable, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%w: probe container exited %d: %s", ErrUnavailable, res.ExitCode, strings.TrimSpace(string(res.StderrTail)))
	}
	if _, err := os.Stat(filepath.Join(dir, "probe.png")); err != nil {
		return fmt.Errorf("%w: the probe's output did not reach this machine's work directory (is the engine remote?): %v", ErrUnavailable, err)
	}
	return nil
}

// RemoveLeftovers removes the containers of this sandbox's Owner that a killed worker left behind
// (a container is removed when its run ends, so at a worker's start any that remain are
// leftovers), and returns how many it removed. Workers call it once, before taking work.
func (s *Sandbox) RemoveLeftovers(ctx context.Context) (int, error) {
	list, err := s.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", ownerLabel+"="+s.cfg.Owner),
	})
	if err != nil {
		return 0, fmt.Errorf("dockersandbox: list leftover containers: %w", err)
	}
	removed := 0
	for _, c := range list.Items {
		if _, err := s.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return removed, fmt.Errorf("dockersandbox: remove leftover container %s: %w", c.ID, err)
		}
		removed++
	}
	return removed, nil
}

// CheckGPU verifies, at worker start, that the GPU's device nodes exist on this machine and
// that FFmpeg in the container lists an NVENC encoder and can encode with it.
func (s *Sandbox) CheckGPU(ctx context.Context) error {
	if s.cfg.GPU == nil {
		return fmt.Errorf("%w: the Docker sandbox was built without a GPU (set Config.GPU)", sandbox.ErrNoGPU)
	}
	if s.cfg.GPU.Explicit == nil {
		// The toolkit finds the devices itself; what must exist is what it would pass.
		if _, err := sandbox.FindGPU(ctx, sandbox.GPUConfig{Indexes: deviceIndexes(s.cfg.GPU.DeviceIDs)}); err != nil {
			return err
		}
	} else {
		var missing []string
		for _, d := range s.cfg.GPU.Explicit.Devices {
			if _, err := os.Stat(d.Source); err != nil {
				missing = append(missing, d.Source)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: device nodes missing: %s", sandbox.ErrNoGPU, strings.Join(missing, ", "))
		}
	}
	return sandbox.CheckNVENC(ctx, s)
}

// deviceIndexes are the numeric DeviceIDs (UUIDs cannot be told from /dev).
func deviceIndexes(ids []string) []int {
	var out []int
	for _, id := range ids {
		if n, err := strconv.Atoi(id); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Run runs spec.Program in a fresh container and waits for it, killing the container at the
// deadline, when ctx ends or the moment a per-job cap is passed; the container is removed
// afterwards. Errors and Result follow sandbox.Sandbox.Run.
func (s *Sandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	program, ok := s.cfg.Programs[spec.Program]
	if !ok {
		return sandbox.Result{}, fmt.Errorf("%w: %q", sandbox.ErrProgramNotAllowed, spec.Program)
	}
	if !filepath.IsAbs(spec.Dir) {
		return sandbox.Result{}, fmt.Errorf("dockersandbox: work dir %q is not absolute", spec.Dir)
	}
	if fi, err := os.Stat(spec.Dir); err != nil || !fi.IsDir() {
		return sandbox.Result{}, fmt.Errorf("dockersandbox: work dir %q is not a directory", spec.Dir)
	}
	if spec.Timeout <= 0 {
		spec.Timeout = sandbox.DefaultTimeout
	}
	lim := spec.Limits.WithDefaults(spec.Timeout)
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	if os.Geteuid() == 0 {
		// Root in the container would be root on the host's files; hand the tree to nobody.
		user = fmt.Sprintf("%d:%d", nobody, nobody)
		if err := sandbox.ChownTree(spec.Dir, nobody, nobody); err != nil {
			return sandbox.Result{}, fmt.Errorf("dockersandbox: hand work dir to uid %d: %w", nobody, err)
		}
	}
	cfg, host := s.containerConfig(spec, program, lim, user)

	runCtx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	killCtx, kill := context.WithCancel(runCtx)
	defer kill()
	watcher, err := sandbox.WatchCaps(spec.Dir, lim, kill)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("%w: %v", sandbox.ErrSetup, err)
	}
	// The files the container holds with no name count too, once its first process is known.
	res, runErr := s.runContainer(killCtx, cfg, host, spec.Stdout, spec.Stderr, func(pid int) { s.follow(watcher, pid) })
	if runErr == nil && res.ExitCode > 0 && res.ExitCode < 128 && reachedFileSize(spec.Dir, fileSizeLimit(lim)) {
		// The engine may start containers with SIGXFSZ ignored (dockerd inherits it from how it
		// was started, and runc keeps an ignored signal ignored), so a write past RLIMIT_FSIZE
		// fails with EFBIG instead of killing FFmpeg. A file at the limit after a failed run is
		// that limit met: report the death the bubblewrap sandbox reports, 128+SIGXFSZ.
		res.ExitCode = 128 + int(syscall.SIGXFSZ)
	}
	if res, settled, err := sandbox.Settle(ctx, runCtx, res, lim, watcher, "dockersandbox"); settled {
		return res, err
	}
	return res, runErr
}

// runContainer creates, attaches to, starts and waits for one container, killing it when ctx
// ends; it always removes it.
func (s *Sandbox) runContainer(ctx context.Context, cfg *container.Config, host *container.HostConfig, stdout, stderrTo io.Writer, found func(pid int)) (sandbox.Result, error) {
	res := sandbox.Result{ExitCode: -1}
	// Cleanup must outlive ctx, which may be what ended the run.
	cleanupCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	}
	created, err := s.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		return res, fmt.Errorf("%w: create container: %v", sandbox.ErrSetup, err)
	}
	defer func() {
		c, cancel := cleanupCtx()
		defer cancel()
		_, _ = s.cli.ContainerRemove(c, created.ID, client.ContainerRemoveOptions{Force: true})
	}()

	// Attach before start so no early output is lost. The streams are multiplexed (no TTY).
	att, err := s.cli.ContainerAttach(ctx, created.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return res, fmt.Errorf("%w: attach: %v", sandbox.ErrSetup, err)
	}
	defer att.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	stderr := sandbox.NewTailWriter(sandbox.StderrTailBytes)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(stdout, sandbox.StderrWriter(stderr, stderrTo), att.Reader)
	}()

	// Waiting for the next exit is registered before the start, so a fast exit is not missed.
	// It outlives ctx, to see the exit a kill causes, for at most cleanupTimeout after it.
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWait()
	wait := s.cli.ContainerWait(waitCtx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	start := time.Now()
	// The start is not abandoned half-way when ctx ends (the container may already be running,
	// writing past a cap): it completes, and the loop below kills.
	startCtx, cancelStart := cleanupCtx()
	_, err = s.cli.ContainerStart(startCtx, created.ID, client.ContainerStartOptions{})
	cancelStart()
	if err != nil {
		return res, fmt.Errorf("%w: start container: %v", sandbox.ErrSetup, err)
	}
	inspectCtx, cancelInspect := cleanupCtx()
	defer cancelInspect()
	direct := s.openHostKill(inspectCtx, created.ID, found)
	defer direct.close()

	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil // killed once; now wait for the exit
			direct.kill()
			// The engine's kill runs beside the wait: when the host's kill landed, the exit
			// is seen without waiting on a slow engine's answer.
			go func() {
				c, cancel := cleanupCtx()
				defer cancel()
				_, _ = s.cli.ContainerKill(c, created.ID, client.ContainerKillOptions{Signal: "KILL"})
			}()
			time.AfterFunc(cleanupTimeout, cancelWait)
		case err := <-wait.Error:
			res.Wall = time.Since(start)
			return res, fmt.Errorf("dockersandbox: wait: %w", err)
		case w := <-wait.Result:
			res.Wall = time.Since(start)
			res.ExitCode = int(w.StatusCode)
			// The attach stream ends with the container; a little grace for its last bytes.
			select {
			case <-copied:
			case <-time.After(5 * time.Second):
				att.Close()
				<-copied
			}
			res.StderrTail = stderr.Bytes()
			if w.Error != nil && w.Error.Message != "" {
				return res, fmt.Errorf("dockersandbox: wait: %s", w.Error.Message)
			}
			return res, nil
		}
	}
}

// containerConfig is the container for one run: the whole security posture is here, and the
// table test reads it field by field.
func (s *Sandbox) containerConfig(spec sandbox.Spec, program string, lim sandbox.Limits, user string) (*container.Config, *container.HostConfig) {
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8", "XDG_CACHE_HOME=/tmp",
		// Few malloc arenas keep memory use about the work, as in the bubblewrap sandbox.
		"MALLOC_ARENA_MAX=4",
	}
	pids := lim.Processes
	cfg := &container.Config{
		Image:           s.cfg.Image,
		User:            user,
		Hostname:        "sandbox",
		WorkingDir:      sandbox.WorkDir,
		Env:             env,
		Entrypoint:      []string{program}, // whatever the image's entrypoint, only this runs
		Cmd:             slices.Clone(spec.Args),
		AttachStdout:    true,
		AttachStderr:    true,
		NetworkDisabled: true,
		Labels:          map[string]string{label: "ffmpeg", ownerLabel: s.cfg.Owner},
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		IpcMode:        "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + s.seccomp},
		// Docker's json-file log would copy a chatty stderr to the engine's disk without
		// bound; the attach stream gives Run everything it keeps.
		LogConfig: container.LogConfig{Type: "none"},
		// An empty read-only /dev/pts in place of Docker's devpts, whose ptys come from the
		// host's one kernel.pty.max budget (a job could take them all); /dev/ptmx, a link into
		// it, then leads nowhere.
		Tmpfs: map[string]string{
			"/tmp":     "rw,noexec,nosuid,nodev,mode=1777,size=" + strconv.Itoa(tmpBytes),
			"/dev/pts": "ro,noexec,nosuid,nodev,mode=0555,size=4k",
		},
		Mounts: []mount.Mount{{
			Type: mount.TypeBind, Source: spec.Dir, Target: sandbox.WorkDir,
			BindOptions: &mount.BindOptions{NonRecursive: true},
		}},
		Resources: container.Resources{
			// The cgroup bounds memory where the bubblewrap sandbox needs RLIMIT_AS; swap adds
			// nothing.
			Memory:     lim.MemoryBytes,
			MemorySwap: lim.MemoryBytes,
			NanoCPUs:   int64(s.cfg.CPUs * 1e9),
			// RLIMIT_NPROC would count every container's nobody together; the pids cgroup is
			// per container.
			PidsLimit: &pids,
			Ulimits: []*container.Ulimit{
				{Name: "cpu", Soft: lim.CPUSeconds, Hard: lim.CPUSeconds},
				{Name: "fsize", Soft: fileSizeLimit(lim), Hard: fileSizeLimit(lim)},
				{Name: "nofile", Soft: lim.OpenFiles, Hard: lim.OpenFiles},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	if g := s.cfg.GPU; g != nil {
		if g.Explicit == nil {
			req := container.DeviceRequest{
				Driver: "nvidia", DeviceIDs: slices.Clone(g.DeviceIDs),
				// "gpu" picks the driver; the rest become NVIDIA_DRIVER_CAPABILITIES: CUDA,
				// NVENC/NVDEC, NVML.
				Capabilities: [][]string{{"gpu", "compute", "video", "utility"}},
			}
			if len(req.DeviceIDs) == 0 {
				req.Count = -1
			}
			host.DeviceRequests = []container.DeviceRequest{req}
		} else {
			var dirs []string
			for _, d := range g.Explicit.Devices {
				host.Devices = append(host.Devices, container.DeviceMapping{PathOnHost: d.Source, PathInContainer: d.Target, CgroupPermissions: "rw"})
			}
			for _, l := range g.Explicit.Libraries {
				host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: l.Source, Target: l.Target, ReadOnly: true})
				if d := filepath.Dir(l.Target); !slices.Contains(dirs, d) {
					dirs = append(dirs, d)
				}
			}
			// The image's linker cache does not know the host's driver directories.
			cfg.Env = append(cfg.Env, "LD_LIBRARY_PATH="+strings.Join(dirs, ":"))
		}
	}
	return cfg, host
}

// fileSizeLimit is RLIMIT_FSIZE of a run: the per-file limit, tightened by the job's byte cap.
func fileSizeLimit(lim sandbox.Limits) int64 { return min(lim.FileSizeBytes, lim.JobBytes) }

// reachedFileSize reports whether a regular file under dir is limit bytes or more.
func reachedFileSize(dir string, limit int64) bool {
	reached := false
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Size() >= limit {
			reached = true
			return filepath.SkipAll
		}
		return nil
	})
	return reached
}
