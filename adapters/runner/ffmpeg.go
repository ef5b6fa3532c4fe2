package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/retry"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// FFmpeg executes `ffmpeg` jobs: fetch, stage, substitute, run in the sandbox, collect, probe,
// store.
type FFmpeg struct {
	Sandbox sandbox.Runner
	Fetch   Fetcher
	// Queue stores the outputs, through the job's lease.
	Queue  workqueue.Queue
	Limits sandbox.Limits
	// Log receives the runner's own failures, which clients are not shown; nil discards them.
	Log *slog.Logger
	// MaxProbes bounds how many output files ffprobe reads (0 is DefaultMaxProbes): a long HLS
	// ladder has hundreds of segments, and each probe is a sandboxed process of its own. The
	// manifests are always among them. Images and MP4 files are read in process whatever the
	// cap, and the segments of an HLS playlist take their duration from it (fillFromPlaylists).
	MaxProbes int
	// AllowPrivateNetworks are the address ranges this runner's fetcher may reach
	// (safehttp.Config.AllowPrivate): the validator, run again here, lets input URLs in them
	// through, as the control plane's does with its own list.
	AllowPrivateNetworks []netip.Prefix
}

// env is what the runner's own validation of a's request knows of the deployment.
func (f *FFmpeg) env(a workqueue.Assignment) jobtype.Env {
	return jobtype.Env{AssetURLPrefix: a.AssetURLPrefix, AllowPrivateNetworks: f.AllowPrivateNetworks}
}

// Execute runs one ffmpeg job.
func (f *FFmpeg) Execute(ctx context.Context, a workqueue.Assignment, work string, h Hooks) workqueue.Result {
	req, err := ffmpegjob.Parse(a.Inputs, a.Params)
	if err != nil {
		return workqueue.Result{Failure: invalid(err.Error())}
	}
	// The validator runs again here: the runner trusts nothing the queue carried.
	res, err := req.Validate(f.env(a))
	if err != nil {
		return workqueue.Result{Failure: invalid(err.Error())}
	}
	plan := res.Plan

	inputs := map[string]bool{}
	for name, in := range req.Inputs {
		inputs[name] = true
		if in.Content != nil {
			if err := os.WriteFile(filepath.Join(work, name), []byte(*in.Content), 0o644); err != nil {
				return workqueue.Result{Failure: f.internal(a.Lease.JobID, "staging inline input "+name, err)}
			}
		}
	}
	for _, d := range plan.Downloads {
		inputs[d.Name] = true
		if _, err := os.Lstat(filepath.Join(work, d.Name)); err == nil {
			continue // the same URL under one name twice
		}
		if e := f.Fetch.Fetch(ctx, a, d.URL, filepath.Join(work, d.Name)); e != nil {
			return workqueue.Result{Failure: e}
		}
	}

	args, fail := checkStaged(work, plan.Args, inputs)
	if fail != nil {
		return workqueue.Result{Failure: fail}
	}

	h.Executing()
	// Progress: FFmpeg's -progress lines give out_time_us, which a length of the output turns
	// into a fraction. The length is the smallest bound known: the command's own (its -t, a
	// lavfi source's duration, frames over a rate: commandDuration), known at once, and the
	// first local input's duration, probed alongside the run so it adds no latency.
	var (
		durMu sync.Mutex
		durUs = int64(commandDuration(plan.Args, plan.Outputs) * 1e6)
	)
	probed := make(chan struct{})
	if first := firstLocalInput(plan.Args, inputs); first == "" {
		close(probed)
	} else {
		go func() {
			defer close(probed)
			if m, err := Probe(ctx, f.Sandbox, work, first); err == nil && m.DurationMs > 0 {
				durMu.Lock()
				if p := m.DurationMs * 1000; durUs <= 0 || p < durUs {
					durUs = p
				}
				durMu.Unlock()
			}
		}()
	}
	pw := &progressWriter{report: func(outUs int64) {
		durMu.Lock()
		d := durUs
		durMu.Unlock()
		if d > 0 {
			h.Progress(min(float64(outUs)/float64(d), 0.99))
		}
		if h.Processed != nil {
			h.Processed(time.Duration(outUs) * time.Microsecond)
		}
	}}
	args = append([]string{"-hide_banner", "-nostdin", "-nostats", "-progress", "pipe:1"}, args...)
	run, err := f.Sandbox.Run(ctx, sandbox.Spec{Dir: work, Program: sandbox.FFmpeg, Args: args, Timeout: a.Timeout,
		Limits: f.limits(a), Stdout: pw})
	<-probed // the probe reads the work directory, which goes when Execute returns
	computeMs := run.Wall.Milliseconds()
	switch {
	case run.LimitExceeded != nil:
		return workqueue.Result{ComputeMs: computeMs, Failure: limitFail(run)}
	case run.TimedOut:
		return workqueue.Result{ComputeMs: computeMs, Failure: timeoutFail(
			fmt.Sprintf("the job ran past its time limit of %d seconds", int(a.Timeout/time.Second)), run.StderrTail)}
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return workqueue.Result{ComputeMs: computeMs, Failure: cancelled()}
	case err != nil:
		return workqueue.Result{Failure: f.internal(a.Lease.JobID, "the sandbox could not run FFmpeg", err)}
	case run.ExitCode != 0 && diskFull(work):
		// FFmpeg failed because the runner's disk is full: the runner's fault, not the job's.
		return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "its disk is full",
			fmt.Errorf("ffmpeg exited with status %d with %s full", run.ExitCode, work))}
	case run.ExitCode != 0:
		return workqueue.Result{ComputeMs: computeMs, Failure: exitFail(
			fmt.Sprintf("ffmpeg exited with status %d", run.ExitCode), run.StderrTail)}
	}

	files, err := f.collect(ctx, a, work, inputs)
	if err != nil {
		return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "storing the outputs failed", err)}
	}
	return workqueue.Result{Files: files, ComputeMs: computeMs}
}

// diskFull tells whether the filesystem of dir has (almost) no space left for the sandbox's
// user: below 1 MiB, an FFmpeg that failed there most likely failed for it.
func diskFull(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < 1<<20
}

// limits are the sandbox's limits for a job: the executor's own, with the job's per-job caps.
func (f *FFmpeg) limits(a workqueue.Assignment) sandbox.Limits {
	l := f.Limits
	if a.Limits.Bytes > 0 {
		l.JobBytes = a.Limits.Bytes
	}
	if a.Limits.Files > 0 {
		l.JobFiles = a.Limits.Files
	}
	return l
}

// internal is a failure of the runner itself (its disk, its bubblewrap, storage): clients see
// what step failed and nothing of the host; the cause goes to the operator's log. The core
// makes it INTERNAL_ERROR, retryable and not charged, since the job was not at fault.
func (f *FFmpeg) internal(jobID, what string, err error) *workqueue.Failure {
	if f.Log != nil {
		f.Log.Error("runner: "+what, "job", jobID, "err", err)
	}
	return &workqueue.Failure{Kind: workqueue.KindInternal, Message: what}
}

// firstLocalInput is the first -i argument that names a staged file (lavfi graphs have none).
func firstLocalInput(args []string, inputs map[string]bool) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-i" && inputs[args[i+1]] {
			return args[i+1]
		}
	}
	return ""
}

// collect stores every regular file the command wrote (inputs excepted) and probes their meta.
// DefaultMaxProbes is how many output files of a job ffprobe reads when FFmpeg.MaxProbes is 0.
const DefaultMaxProbes = 8

// Files in the work directory are untrusted: they are opened without following symlinks, and
// anything but a regular file is ignored.
func (f *FFmpeg) collect(ctx context.Context, a workqueue.Assignment, work string, inputs map[string]bool) ([]job.File, error) {
	entries, err := os.ReadDir(work)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() || inputs[e.Name()] {
			continue
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)

	// Images and MP4 files are read in process; ffprobe reads at most limit of the others,
	// manifests first.
	files := make([]job.File, len(names))
	var manifests, others []int
	for i, n := range names {
		files[i] = job.File{Path: n, Type: job.TypeOf(n)}
		switch {
		case files[i].Type == job.FileCaptions || files[i].Type == job.FileData:
		case job.IsManifest(n):
			manifests = append(manifests, i)
		default:
			if m, ok := nativeMeta(filepath.Join(work, n)); ok {
				files[i].Meta = m
			} else {
				others = append(others, i)
			}
		}
	}
	limit := f.MaxProbes
	if limit <= 0 {
		limit = DefaultMaxProbes
	}
	probe := append(manifests, others...)
	probe = probe[:min(len(probe), max(limit, len(manifests)))]
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, i := range probe {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if m, err := Probe(ctx, f.Sandbox, work, names[i]); err == nil && *m != (job.Meta{}) {
				files[i].Meta = m
			}
		}()
	}
	wg.Wait()
	fillFromPlaylists(work, files)
	for i, n := range names {
		size, err := f.store(ctx, a.Lease, filepath.Join(work, n), n)
		if err != nil {
			return nil, err
		}
		files[i].Size = size
	}
	return files, nil
}

// controlPlaneRetryFor is how long a call of the control plane's file routes (an output's
// upload, an uploaded input's read) is tried again while the control plane is unavailable: a
// replica restarting, its database restarting, a load balancer moving to another replica.
const controlPlaneRetryFor = 2 * time.Minute

// whileUnavailable calls call until it answers anything but workqueue.ErrUnavailable, with
// backoff, for up to controlPlaneRetryFor, and returns its last error.
func whileUnavailable(ctx context.Context, call func() error) error {
	backoff := retry.New(200*time.Millisecond, 5*time.Second)
	give := time.Now().Add(controlPlaneRetryFor)
	for {
		err := call()
		if !errors.Is(err, workqueue.ErrUnavailable) || time.Now().After(give) || !backoff.Wait(ctx) {
			return err
		}
	}
}

func (f *FFmpeg) store(ctx context.Context, l workqueue.Lease, path, name string) (int64, error) {
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", name, err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", name, err)
	}
	var n int64
	err = whileUnavailable(ctx, func() (err error) {
		// Each attempt reads the file afresh through a reader with no Close: an HTTP transport
		// closes a body that has one, which would leave nothing to send again.
		n, err = f.Queue.PutOutput(ctx, l, name, io.NewSectionReader(fd, 0, fi.Size()), 0)
		return err
	})
	return n, err
}

// progressWriter reads FFmpeg's -progress key=value lines.
type progressWriter struct {
	report func(outUs int64)
	buf    bytes.Buffer
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for {
		line, err := p.buf.ReadString('\n')
		if errors.Is(err, io.EOF) {
			p.buf.WriteString(line) // keep the partial line
			return len(b), nil
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "out_time_us="); ok {
			if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > 0 {
				p.report(us)
			}
		}
	}
}
