package mediajobs

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/diskcheck"
	"github.com/mediajobs/mediajobs/adapters/dockersandbox"
	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/transcribe"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/jobtype/captionsanimate"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// AgentConfig is what a runner agent is made of, in `serve` and in `worker` alike.
type AgentConfig struct {
	Class job.Class
	Slots int
	// Warm keeps sandboxes started ahead: bubblewrap sandboxes where the executable can be their
	// launcher, containers where the image has one (warmPool).
	Warm bool
	// Data is the data directory (work directories go under it when the sandbox user can
	// reach it); WorkDir chooses explicitly.
	Data, WorkDir string
	Transcriber   transcribe.Router
	// Fetch is the policy of every fetch of a URL a user gave.
	Fetch safehttp.Config
	// Runner options of `worker`: the claim long poll, the drain on stop, the worker's name.
	Worker string
	Runner runner.Config
	// Sandbox is "bwrap" (the default) or "docker"; DockerImage and DockerHost configure the
	// latter (empty: dockersandbox's defaults).
	Sandbox     string
	DockerImage string
	DockerHost  string
	Log         *slog.Logger
}

// dockerOwner names a worker's Docker sandbox among those sharing an engine, for
// RemoveLeftovers at its start: the host name, which a worker restarted in the same container
// or on the same machine keeps (worker names default to host/pid and are not kept), and its
// work directory, so that two workers on one machine, each with a directory of its own, do not
// remove each other's running containers.
func dockerOwner(cfg AgentConfig) string {
	host, _ := os.Hostname()
	dir := cmp.Or(cfg.WorkDir, cfg.Data)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // --work-dir work and ./work, from where the worker started
	}
	return host + ":" + dir
}

// NewAgent checks the sandbox and returns a runner agent over queue with every job type's
// executor.
func NewAgent(ctx context.Context, cfg AgentConfig, queue workqueue.Queue) (*runner.Agent, error) {
	sb, reach, err := newSandbox(ctx, cfg)
	if err != nil {
		return nil, err
	}
	work, err := workRoot(reach, cfg.Data, cfg.WorkDir, cfg.Log)
	if err != nil {
		return nil, err
	}
	if cfg.Data == "" || !strings.HasPrefix(work, cfg.Data+string(filepath.Separator)) {
		diskcheck.Warn(cfg.Log, work, "work directory") // serve warns of its data directory
	}
	rc := cfg.Runner
	if pool := warmPool(ctx, sb, reach, work, cfg); pool != nil {
		sb, rc.Stopped = pool, pool.Close
		// The pool refills, and tears down the sandboxes its runs used (their launchers wait
		// past the end marks), once a job's report is done, not while the job still uploads.
		onRun := rc.OnRun
		rc.OnRun = func(r runner.RunStats) {
			pool.Refill()
			if onRun != nil {
				onRun(r)
			}
		}
	}
	// The runner validates each job again with the ranges its fetcher may reach.
	exec := &runner.FFmpeg{Sandbox: sb, Queue: queue, Log: cfg.Log, AllowPrivateNetworks: cfg.Fetch.AllowPrivate,
		Fetch: runner.Fetcher{Client: safehttp.NewClient(cfg.Fetch), Queue: queue, MaxBytes: 2 << 30, Log: cfg.Log}}
	rc.Class, rc.Slots, rc.WorkRoot, rc.Log = cfg.Class, cfg.Slots, work, cfg.Log
	if cfg.Worker != "" {
		rc.Worker = cfg.Worker
	}
	agent, err := runner.New(rc, queue, map[string]runner.Executor{
		ffmpegjob.Name:       exec,
		extractmetadata.Name: &runner.Metadata{FFmpeg: exec},
		captionburn.Name:     &runner.Captions{FFmpeg: exec, Transcriber: cfg.Transcriber},
		captionsanimate.Name: &runner.Animate{FFmpeg: exec, Transcriber: cfg.Transcriber},
	})
	if err != nil && rc.Stopped != nil {
		rc.Stopped()
	}
	return agent, err
}

// newSandbox is the configured sandbox, checked: it answers, and for the gpu class it passes
// the NVIDIA devices through and FFmpeg lists an NVENC encoder. It also returns the bubblewrap
// sandbox that vets the work directory's reach (the sandbox user must reach it either way).
func newSandbox(ctx context.Context, cfg AgentConfig) (sandbox.Runner, *sandbox.Sandbox, error) {
	var gpu *sandbox.GPU
	if cfg.Class == job.ClassGPU {
		g, err := sandbox.FindGPU(ctx, sandbox.GPUConfig{})
		if err != nil {
			return nil, nil, fmt.Errorf("a gpu worker needs an NVIDIA GPU with its driver: %w", err)
		}
		gpu = g
	}
	bw, err := sandbox.New(sandbox.Config{GPU: gpu, Log: cfg.Log})
	if err != nil {
		return nil, nil, err
	}
	var sb sandbox.Runner = bw
	switch cfg.Sandbox {
	case "", "bwrap":
	case "docker":
		// The engine mounts host paths: the probe runs in the work root, which a worker in a
		// container of its own shares with the host at the same path.
		dc := dockersandbox.Config{Image: cfg.DockerImage, Host: cfg.DockerHost, ProbeDir: cfg.WorkDir, Owner: dockerOwner(cfg), Log: cfg.Log}
		if gpu != nil {
			dc.GPU = &dockersandbox.GPU{Explicit: gpu}
		}
		d, err := dockersandbox.New(dc)
		if err != nil {
			return nil, nil, err
		}
		n, err := d.RemoveLeftovers(ctx)
		if err != nil {
			return nil, nil, err
		}
		if n > 0 && cfg.Log != nil {
			cfg.Log.Info("removed the sandbox containers a previous run of this worker left behind", "containers", n)
		}
		sb = d
	default:
		return nil, nil, fmt.Errorf("sandbox %q is not bwrap or docker", cfg.Sandbox)
	}
	if err := sb.Available(ctx); err != nil {
		return nil, nil, fmt.Errorf("the runner's %s sandbox is not available: %w", orDefault(cfg.Sandbox, "bwrap"), err)
	}
	if gpu != nil {
		if c, ok := sb.(sandbox.GPUChecker); ok {
			if err := c.CheckGPU(ctx); err != nil {
				return nil, nil, fmt.Errorf("a gpu worker needs FFmpeg with NVENC and the NVIDIA devices: %w", err)
			}
		}
	}
	return sb, bw, nil
}

// warmPool keeps sandboxes started ahead for the runs of the agent: bubblewrap sandboxes
// (sandbox.Pool) or containers (dockersandbox.Pool), or nil where it cannot be had: a GPU
// worker, no launcher — neither mediajobs-launcher beside this executable nor an executable that
// acts as one (sandbox.RunLauncher) for bubblewrap, an image without one for Docker. Each slot
// runs a job and, beside it, the probe of its input, so the pool holds two sandboxes a slot. Its
// root sits beside the work root (work.warm), on the work directories' filesystem, so that
// staged files are linked in and outputs renamed out, and apart from the job directories.
func warmPool(ctx context.Context, sb sandbox.Runner, bw *sandbox.Sandbox, work string, cfg AgentConfig) warmRunner {
	if !cfg.Warm || cfg.Class == job.ClassGPU {
		return nil
	}
	size, root := 2*max(cfg.Slots, 1), work+".warm"
	if d, ok := sb.(*dockersandbox.Sandbox); ok {
		p, err := dockersandbox.NewPool(ctx, d, dockersandbox.PoolConfig{Size: size, Root: root, RefillDelay: refillDelay, Log: cfg.Log})
		if err != nil {
			cfg.Log.Warn("containers start cold: the warm pool could not be made", "err", err)
			return nil
		}
		return p
	}
	if sb != sandbox.Runner(bw) {
		return nil
	}
	launcher := siblingLauncher()
	if launcher == "" && !sandbox.LauncherReady() {
		return nil
	}
	p, err := sandbox.NewPool(bw, sandbox.PoolConfig{Size: size, Root: root, Launcher: launcher, RefillDelay: refillDelay})
	if err != nil {
		cfg.Log.Warn("sandboxes start cold: the warm pool could not be made", "err", err)
		return nil
	}
	return p
}

// warmRunner is a pool of sandboxes started ahead.
type warmRunner interface {
	sandbox.Runner
	// Refill makes the pool up now, rather than after its delay.
	Refill()
	// Close tears the pool down.
	Close()
}

// refillDelay is how long the warm pool waits after a run for the end of its job (the agent's
// OnRun, at which it refills at once) before it refills all the same: a long upload does not
// keep the pool short.
const refillDelay = 250 * time.Millisecond

// LauncherName is the warm sandboxes' launcher, a small program of its own that make build puts
// beside mediajobs: it starts in a millisecond, where mediajobs itself takes about twenty.
const LauncherName = "mediajobs-launcher"

// siblingLauncher is LauncherName beside this executable, or "" when there is none.
func siblingLauncher() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), LauncherName)
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return ""
	}
	return p
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
