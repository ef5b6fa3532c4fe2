package main

import (
	"context"
	"flag"
	"fmt"
	"io"

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
	if err := mediajobs.RunWorker(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "mediajobs worker:", err)
		return 1
	}
	return 0
}
