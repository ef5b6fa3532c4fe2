package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/mediajobs/mediajobs"
)

func init() {
	register(command{name: "worker", summary: "run jobs for a control plane, in a process of its own (no database)", run: runWorker})
}

func runWorker(ctx context.Context, args []string, _, stderr io.Writer) int {
	var cfg mediajobs.WorkerConfig
	fs := flag.NewFlagSet("mediajobs worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Flags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: MEDIAJOBS_WORKER_TOKEN=… mediajobs worker --control URL --work-dir DIR [flags]

Runs jobs for the control plane at --control: http://host:port (the HTTP transport, for workers
that cannot reach the broker), nats://host:port or postgres://… (the broker transport). The worker
owns no database and no signing keys; it authenticates with MEDIAJOBS_WORKER_TOKEN, the same
secret serve has. On SIGTERM it takes no new work and lets running jobs finish for up to
--drain-timeout, then hands them back.

Flags:`)
		fs.PrintDefaults()
	}
	if fs.Parse(args) != nil {
		return 2
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(workerProcs(runtime.GOMAXPROCS(0)))
	}
	if err := mediajobs.RunWorker(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "mediajobs worker:", err)
		return 1
	}
	return 0
}

// workerProcs is how many CPUs a worker process's own Go code runs on at once, of procs the
// runtime would take (GOMAXPROCS, which sets it, wins): the CPUs are for the sandboxes' FFmpeg,
// and the worker's own work (claims, heartbeats, moving files) is a few milliseconds a job, which
// one CPU in eight keeps up with. Each one more only spins looking for work whenever one of the
// worker's goroutines wakes, on the CPUs its jobs run on: on 2 CPUs, one took the worker's CPU a
// job from 5.0 to 4.0 ms (docs/performance.md).
func workerProcs(procs int) int { return max(1, procs/8) }
