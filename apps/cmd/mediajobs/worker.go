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
		runtime.GOMAXPROCS(workerProcs(runtime.GOMAXPROCS(0), cfg.Concurrency))
	}
	if err := mediajobs.RunWorker(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "mediajobs worker:", err)
		return 1
	}
	return 0
}

// workerProcs is how many Ps (GOMAXPROCS) a worker process of concurrency slots runs with, of
// procs: one for every two slots. The worker's own Go code is light beside what it runs (a few
// milliseconds a job of claims, reports, pipes and the warm pool's starts), and a P more than
// that work needs costs a context switch at most of its wakeups, which on a VM took a third of
// the worker's CPU. Trivial jobs through two workers of two slots on two cores: the workers'
// CPU 4.6-5.1 ms a job with one P each against 5.8-5.9 ms with two (docs/performance.md). The
// sandboxes and what runs in them are processes of their own, which this does not limit; the
// GOMAXPROCS variable, when set, decides instead.
func workerProcs(procs, concurrency int) int {
	return max(1, min(procs, (concurrency+1)/2))
}
