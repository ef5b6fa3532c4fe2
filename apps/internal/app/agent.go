package app

import (
	"context"
	"fmt"
	"log/slog"

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
	// Data is the data directory (work directories go under it when the sandbox user can
	// reach it); WorkDir chooses explicitly.
	Data, WorkDir string
	Transcriber   transcribe.Router
	// Fetch is the policy of every fetch of a URL a user gave.
	Fetch safehttp.Config
	// Runner options of `worker`: the claim long poll, the drain on stop, the worker's name.
	Worker string
	Runner runner.Config
	Log    *slog.Logger
}

// NewAgent checks the sandbox and returns a runner agent over queue with every job type's
// executor.
func NewAgent(ctx context.Context, cfg AgentConfig, queue workqueue.Queue) (*runner.Agent, error) {
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		return nil, err
	}
	if err := sb.Available(ctx); err != nil {
		return nil, fmt.Errorf("the runner needs the bubblewrap sandbox: %w", err)
	}
	work, err := workRoot(sb, cfg.Data, cfg.WorkDir, cfg.Log)
	if err != nil {
		return nil, err
	}
	exec := &runner.FFmpeg{Sandbox: sb, Queue: queue, Log: cfg.Log, Fetch: runner.Fetcher{
		Client: safehttp.NewClient(cfg.Fetch), Queue: queue, MaxBytes: 2 << 30, Log: cfg.Log}}
	rc := cfg.Runner
	rc.Class, rc.Slots, rc.WorkRoot, rc.Log = cfg.Class, cfg.Slots, work, cfg.Log
	if cfg.Worker != "" {
		rc.Worker = cfg.Worker
	}
	return runner.New(rc, queue, map[string]runner.Executor{
		ffmpegjob.Name:       exec,
		extractmetadata.Name: &runner.Metadata{FFmpeg: exec},
		captionburn.Name:     &runner.Captions{FFmpeg: exec, Transcriber: cfg.Transcriber},
		captionsanimate.Name: &runner.Animate{FFmpeg: exec, Transcriber: cfg.Transcriber},
	})
}
