package mediajobs

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/brokerqueue"
	"github.com/mediajobs/mediajobs/adapters/dockersandbox"
	"github.com/mediajobs/mediajobs/adapters/httpqueue"
	"github.com/mediajobs/mediajobs/adapters/metrics"
	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// WorkerConfig is the configuration of `mediajobs worker`: a runner agent in a process of its
// own, with no database and no signing keys, taking work from a control plane.
type WorkerConfig struct {
	// Control is the control plane: http(s)://host:port for the HTTP transport, nats://host:port
	// or postgres://… for the broker transport.
	Control string
	// LogFormat is json (the default) or text.
	LogFormat string
	// Token is the worker token, the same on serve and on its workers.
	Token        string
	Class        string
	Concurrency  int
	WorkDir      string
	DrainTimeout time.Duration
	// Name names the worker in the control plane's logs; default host/pid.
	Name string
	// AllowPrivate opens address ranges to the input fetcher (tests and local use only).
	AllowPrivate string
	// Sandbox is bwrap (the default) or docker; DockerImage and DockerHost configure docker.
	Sandbox     string
	DockerImage string
	DockerHost  string
	// WarmSandboxes keeps sandboxes started ahead (sandbox.Pool, dockersandbox.Pool).
	WarmSandboxes bool
	// MetricsAddr serves this worker's Prometheus metrics at /metrics on its own listener;
	// empty: off.
	MetricsAddr string
	// PprofAddr serves this worker's Go profiles (net/http/pprof) on its own listener; empty: off.
	PprofAddr string
	Transcription
	Log *slog.Logger
}

// Flags registers the worker's flags on fs, each defaulting to its MEDIAJOBS_* variable.
func (c *WorkerConfig) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Control, "control", env("MEDIAJOBS_CONTROL", ""), "the control plane: http://host:port (HTTP transport), nats://host:port or postgres://… (broker transport) (MEDIAJOBS_CONTROL)")
	fs.StringVar(&c.Class, "class", env("MEDIAJOBS_CLASS", "cpu"), "compute class of the jobs this worker runs: cpu or gpu (MEDIAJOBS_CLASS)")
	fs.IntVar(&c.Concurrency, "concurrency", envInt("MEDIAJOBS_CONCURRENCY", 2), "jobs computing at once; an ffmpeg job uploading its outputs frees its slot for the next, so size the work disk for twice this many jobs (MEDIAJOBS_CONCURRENCY)")
	fs.StringVar(&c.WorkDir, "work-dir", env("MEDIAJOBS_WORK_DIR", ""), "job work directories, reachable by the sandbox user; required (MEDIAJOBS_WORK_DIR)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", envDuration("MEDIAJOBS_DRAIN_TIMEOUT", 30*time.Second), "on SIGTERM, how long running jobs may finish before they are handed back (MEDIAJOBS_DRAIN_TIMEOUT)")
	fs.StringVar(&c.Name, "name", env("MEDIAJOBS_WORKER_NAME", ""), "this worker's name in the control plane's logs; default host/pid (MEDIAJOBS_WORKER_NAME)")
	fs.StringVar(&c.AllowPrivate, "allow-private-networks", env("MEDIAJOBS_ALLOW_PRIVATE_NETWORKS", ""), "comma-separated CIDRs the input fetcher may reach, for tests and local use (MEDIAJOBS_ALLOW_PRIVATE_NETWORKS)")
	fs.StringVar(&c.Sandbox, "sandbox", env("MEDIAJOBS_SANDBOX", "bwrap"), "where FFmpeg runs: bwrap (bubblewrap, the default) or docker (a container per step through the Docker Engine API) (MEDIAJOBS_SANDBOX)")
	fs.BoolVar(&c.WarmSandboxes, "warm-sandboxes", envBool("MEDIAJOBS_WARM_SANDBOXES", true), "keep sandboxes started ahead, two a slot, so a job does not wait for one: bubblewrap sandboxes, or containers with --sandbox docker (MEDIAJOBS_WARM_SANDBOXES)")
	fs.StringVar(&c.DockerImage, "docker-image", env("MEDIAJOBS_DOCKER_IMAGE", dockersandbox.DefaultImage), "image with ffmpeg and ffprobe for --sandbox docker (MEDIAJOBS_DOCKER_IMAGE)")
	fs.StringVar(&c.DockerHost, "docker-host", env("DOCKER_HOST", ""), "Docker Engine address for --sandbox docker; default the local socket (DOCKER_HOST)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env("MEDIAJOBS_METRICS_ADDR", ""), "serve this worker's Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9101; empty: off (MEDIAJOBS_METRICS_ADDR)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("MEDIAJOBS_PPROF_ADDR", ""), "serve this worker's Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6061; empty: off (MEDIAJOBS_PPROF_ADDR)")
	c.Transcription.Flags(fs)
	fs.StringVar(&c.LogFormat, "log-format", env("MEDIAJOBS_LOG_FORMAT", "json"), "log format: json (one object a line) or text (MEDIAJOBS_LOG_FORMAT)")
	// The token comes from the environment only: a flag would show it in the process list.
	c.Token = os.Getenv("MEDIAJOBS_WORKER_TOKEN")
}

// RunWorker runs a worker until ctx ends, then drains: it takes no new work, lets running jobs
// finish for up to DrainTimeout, hands back the rest, and returns.
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	if cfg.Log == nil {
		l, err := NewLogger(os.Stderr, cfg.LogFormat)
		if err != nil {
			return err
		}
		cfg.Log = l
	}
	class := job.Class(cfg.Class)
	if class != job.ClassCPU && class != job.ClassGPU {
		return fmt.Errorf("class %q is not cpu or gpu", cfg.Class)
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 64 {
		return fmt.Errorf("concurrency %d is not between 1 and 64", cfg.Concurrency)
	}
	if cfg.WorkDir == "" {
		return errors.New("a work directory is required: set --work-dir (MEDIAJOBS_WORK_DIR)")
	}
	if cfg.Token == "" {
		return errors.New("a worker token is required: set MEDIAJOBS_WORKER_TOKEN, the same as on serve")
	}
	allow, err := safehttp.ParseAllowList(cfg.AllowPrivate)
	if err != nil {
		return fmt.Errorf("allow-private-networks: %w", err)
	}
	tr, err := cfg.transcriber()
	if err != nil {
		return err
	}
	queue, closeQueue, err := openQueue(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeQueue()
	var agent *runner.Agent
	var wm *metrics.Worker
	rc := runner.Config{Worker: cfg.Name, ClaimWait: 20 * time.Second, DrainTimeout: cfg.DrainTimeout}
	if cfg.MetricsAddr != "" {
		wm = metrics.NewWorker(class, cfg.Concurrency, func() int { return agent.Running() })
		rc.OnRun = func(r runner.RunStats) { wm.Ran(r.Type, r.Outcome, r.Took, r.Phases) }
	}
	agent, err = NewAgent(ctx, AgentConfig{Class: class, Slots: cfg.Concurrency, Warm: cfg.WarmSandboxes, WorkDir: cfg.WorkDir, Transcriber: tr,
		Fetch: safehttp.Config{AllowPrivate: allow}, Log: cfg.Log, Sandbox: cfg.Sandbox, DockerImage: cfg.DockerImage, DockerHost: cfg.DockerHost,
		Runner: rc}, queue)
	if err != nil {
		return err
	}
	if wm != nil {
		stop, err := serveMetrics(cfg.MetricsAddr, wm.Handler(), cfg.Log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if cfg.PprofAddr != "" {
		stop, err := servePprof(cfg.PprofAddr, cfg.Log)
		if err != nil {
			return err
		}
		defer stop()
	}
	cfg.Log.Info("mediajobs worker running", "control", redactURL(cfg.Control), "class", class, "concurrency", cfg.Concurrency,
		"workDir", cfg.WorkDir, "goProcs", runtime.GOMAXPROCS(0))
	agent.Run(ctx)
	cfg.Log.Info("mediajobs worker stopped")
	return nil
}

// openQueue is the transport of cfg.Control.
func openQueue(ctx context.Context, cfg WorkerConfig) (workqueue.Queue, func(), error) {
	switch {
	case strings.HasPrefix(cfg.Control, "http://"), strings.HasPrefix(cfg.Control, "https://"):
		q, err := httpqueue.New(httpqueue.Config{URL: cfg.Control, Token: cfg.Token})
		if err != nil {
			return nil, nil, err
		}
		return q, q.CloseIdleConnections, nil
	case isBrokerURL(cfg.Control):
		b, err := brokerqueue.Dial(ctx, cfg.Control, cfg.Log)
		if err != nil {
			return nil, nil, fmt.Errorf("control %s: %w", redactURL(cfg.Control), err)
		}
		c, err := brokerqueue.NewClient(b, brokerqueue.ClientConfig{Token: cfg.Token, Worker: cfg.Name, Log: cfg.Log})
		if err != nil {
			return nil, nil, err
		}
		return c, func() { _ = c.Close() }, nil
	case cfg.Control == "":
		return nil, nil, errors.New("the control plane is required: set --control (MEDIAJOBS_CONTROL)")
	}
	return nil, nil, fmt.Errorf("control %q: use http(s)://host:port, nats://host:port or postgres://…", redactURL(cfg.Control))
}

// isBrokerURL says whether raw names a message broker the work queue can be carried over.
func isBrokerURL(raw string) bool {
	for _, p := range []string{"nats://", "postgres://", "postgresql://"} {
		if strings.HasPrefix(raw, p) {
			return true
		}
	}
	return false
}

// redactURL drops a URL's password, for logs and messages.
func redactURL(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndex(raw, "@"); at > i {
			return raw[:i+3] + "…@" + raw[at+1:]
		}
	}
	return raw
}

// serveMetrics serves h at /metrics on addr until stop is called.
func serveMetrics(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("worker metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
