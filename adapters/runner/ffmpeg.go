package runner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/workcap"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/retry"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
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

// Execute runs one ffmpeg job: its steps in order in one work directory (one step for
// params.command), then collects the outputs.
func (f *FFmpeg) Execute(ctx context.Context, a workqueue.Assignment, work string, h Hooks) workqueue.Result {
	req, err := ffmpegjob.Parse(a.Inputs, a.Params)
	if err != nil {
		return workqueue.Result{Failure: invalid(err.Error())}
	}
	// The validator runs again here, over the whole chain: the runner trusts nothing the queue
	// carried.
	checked, err := req.Validate(f.env(a))
	if err != nil {
		return workqueue.Result{Failure: invalid(err.Error())}
	}

	inputs := map[string]bool{}
	for name, in := range req.Inputs {
		inputs[name] = true
		if in.Content != nil {
			if err := os.WriteFile(filepath.Join(work, name), []byte(*in.Content), 0o644); err != nil {
				return workqueue.Result{Failure: f.internal(a.Lease.JobID, "staging inline input "+name, err)}
			}
		}
	}
	for _, d := range checked.Downloads() {
		inputs[d.Name] = true
		if _, err := os.Lstat(filepath.Join(work, d.Name)); err == nil {
			continue // the same URL under one name twice
		}
		if e := f.Fetch.Fetch(ctx, a, d.URL, filepath.Join(work, d.Name)); e != nil {
			return workqueue.Result{Failure: e}
		}
	}

	// The job's limits span its steps, as its progress and its compute do: each step runs with
	// the time, bytes and files the steps before it left.
	lim := f.limits(a).WithDefaults(a.Timeout)
	baseBytes, baseFiles, err := workcap.Measure(work)
	if err != nil {
		return workqueue.Result{Failure: f.internal(a.Lease.JobID, "measuring the work directory", err)}
	}
	// The compute begins when the first step's FFmpeg starts, after its staged files are
	// checked: a refusal before it is free.
	executing := sync.OnceFunc(h.Executing)
	deadline := time.Now().Add(a.Timeout)
	var (
		computeMs int64
		processed time.Duration // the media time earlier steps wrote
	)
	// made holds the files the steps before the last left, by the index of the step that made
	// each: a later step reads them as staged inputs, and the job keeps only those params.keep
	// names.
	if a.SplitParts > 1 && h.Split != nil && len(checked.Plans) == 1 {
		st := step{of: 1, timeout: time.Until(deadline), total: a.Timeout, limits: lim, executing: executing}
		if res, whole := f.splitRun(ctx, a, work, req, checked, inputs, st, h); !whole {
			return res
		}
	}
	made := map[string]int{}
	staged := maps.Clone(inputs)
	steps := len(checked.Plans)
	var (
		alog     *analysisLog       // the log of the last step that measured
		measured map[string]float64 // what it measured, for the steps after it
	)
	for i, plan := range checked.Plans {
		if checked.UsesMeasured(i) {
			p, err := req.Resolve(checked, i, measured, f.env(a))
			if err != nil {
				fail := invalid(err.Error())
				fail.Step, fail.Steps = i+1, steps
				return workqueue.Result{ComputeMs: computeMs, Failure: fail}
			}
			plan = p
		}
		st := step{index: i, of: steps, timeout: time.Until(deadline), total: a.Timeout, before: processed, limits: lim, executing: executing}
		log := analysisLogFor(plan)
		st.stderr = log.stderr()
		if i > 0 {
			bytes, files, err := workcap.Measure(work)
			if err != nil {
				return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "measuring the work directory", err)}
			}
			st.limits.JobBytes -= bytes - baseBytes
			st.limits.JobFiles -= int(files - baseFiles)
			if e := spent(lim, st.limits); e != nil {
				fail := limitFail(sandbox.Result{LimitExceeded: e})
				fail.Step, fail.Steps = i+1, steps
				return workqueue.Result{ComputeMs: computeMs, Failure: fail}
			}
		}
		ran, fail := f.runStep(ctx, a, work, plan, staged, st, h)
		computeMs += ran.computeMs
		processed += ran.processed
		if fail != nil {
			fail.Step, fail.Steps = i+1, steps
			if fail.Kind == workqueue.KindLimit {
				fail.Max = jobCap(lim, fail.Limit, fail.Max) // the step ran under what was left of it
			}
			return workqueue.Result{ComputeMs: computeMs, Failure: fail}
		}
		if log != nil {
			alog, measured = log, log.measured()
		}
		if i < steps-1 {
			entries, err := os.ReadDir(work)
			if err != nil {
				return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "reading the work directory", err)}
			}
			for _, e := range entries {
				if n := e.Name(); e.Type().IsRegular() && !staged[n] {
					made[n], staged[n] = i, true
				}
			}
		}
	}

	if checked.Last().Analysis {
		return f.analysisResult(a, alog, computeMs)
	}
	leftover := func(name string) bool {
		i, ok := made[name]
		return inputs[name] || ok && !checked.Kept(name, i)
	}
	files, inline, err := f.collect(ctx, a, work, leftover, h.Computed)
	if err != nil {
		return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "storing the outputs failed", err)}
	}
	return workqueue.Result{Files: files, Inline: inline, ComputeMs: computeMs}
}

// step is where one command stands in its job: its index among of steps, the time left of the
// job's limit, that limit, and the media time the steps before it wrote.
type step struct {
	index, of int
	timeout   time.Duration
	total     time.Duration
	before    time.Duration
	// limits are the job's, less what the steps before it wrote.
	limits sandbox.Limits
	// stderr receives FFmpeg's log (Spec.Stderr), nil when no one reads it.
	stderr io.Writer
	// executing tells the agent the job's compute begins; called once per job.
	executing func()
	// quiet: nobody reads the step's progress (a split's audio and join), so its first input
	// is not probed for a length.
	quiet bool
}

// spent is the job's cap that the steps before the next used up, if one is: the job fails as a
// run that passes it does. left is what remains of job.
func spent(job, left sandbox.Limits) *sandbox.Exceeded {
	switch {
	case left.JobBytes <= 0:
		return &sandbox.Exceeded{Limit: sandbox.LimitJobBytes, Max: job.JobBytes, Seen: job.JobBytes - left.JobBytes}
	case left.JobFiles <= 0:
		return &sandbox.Exceeded{Limit: sandbox.LimitJobFiles, Max: int64(job.JobFiles), Seen: int64(job.JobFiles - left.JobFiles)}
	}
	return nil
}

// jobCap is the job's cap of this name, for a limit a step passed at max.
func jobCap(lim sandbox.Limits, name string, max int64) int64 {
	switch name {
	case sandbox.LimitJobBytes:
		return lim.JobBytes
	case sandbox.LimitJobFiles:
		return int64(lim.JobFiles)
	}
	return max
}

// ran is what one step used: its compute, and the media time it wrote.
type ran struct {
	computeMs int64
	processed time.Duration
}

// runStep runs one command of a job in the sandbox, reporting its progress as a share of the
// job's, and says how it failed, or nil; staged are the names FFmpeg may read.
func (f *FFmpeg) runStep(ctx context.Context, a workqueue.Assignment, work string, plan *validator.Plan, staged map[string]bool, st step, h Hooks) (ran, *workqueue.Failure) {
	if st.timeout <= 0 {
		return ran{}, timeoutFail(fmt.Sprintf("the job ran past its time limit of %d seconds", int(st.total/time.Second)), nil)
	}
	args, fail := checkStaged(work, plan.Args, staged)
	if fail != nil {
		return ran{}, fail
	}
	st.executing()
	// Progress: FFmpeg's -progress lines give out_time_us, which a length of the output turns
	// into a fraction. The length is the assignment's, where the control plane knows it (a
	// split's part), or else the smallest bound known: the command's own (its -t, a lavfi
	// source's duration, frames over a rate: commandDuration), known at once, and the first
	// local input's duration, probed alongside the run so it adds no latency (but not its
	// CPU). Each step of a chain is an equal share of the job's progress.
	var (
		durMu  sync.Mutex
		durUs  = int64(commandDuration(plan.Args, plan.Outputs) * 1e6)
		lastUs atomic.Int64
	)
	probed := make(chan struct{})
	given := a.Length > 0 && st.of == 1 // a split's part: the control plane knows its length
	if given {
		durUs = a.Length.Microseconds()
	}
	if first, seek := firstLocalInput(plan.Args, staged); first == "" || st.quiet || given {
		close(probed)
	} else {
		go func() {
			defer close(probed)
			if m, err := Probe(ctx, f.Sandbox, work, first); err == nil && m.DurationMs > 0 {
				durMu.Lock()
				// An input read from -ss on (a split's part, say) is that much shorter.
				if p := m.DurationMs*1000 - int64(seek*1e6); p > 0 && (durUs <= 0 || p < durUs) {
					durUs = p
				}
				durMu.Unlock()
			}
		}()
	}
	// The stall watchdog: a run whose frames, media time and bytes written have not moved for
	// the plan's stall time is stopped. A hang prints nothing at all (FFmpeg reports progress as
	// it writes), which counts as no move.
	stall := time.Duration(cmp.Or(a.Limits.StallSeconds, defaultStallSeconds)) * time.Second
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	dog := time.AfterFunc(stall, func() { stop(errStalled) })
	defer dog.Stop()
	pw := &progressWriter{moved: func() { dog.Reset(stall) }, report: func(outUs int64) {
		lastUs.Store(outUs)
		durMu.Lock()
		d := durUs
		durMu.Unlock()
		if d > 0 {
			done := min(float64(outUs)/float64(d), 1)
			h.Progress(min((float64(st.index)+done)/float64(st.of), 0.99))
		}
		if h.Processed != nil {
			h.Processed(st.before + time.Duration(outUs)*time.Microsecond)
		}
	}}
	args = append([]string{"-hide_banner", "-nostdin", "-nostats", "-progress", "pipe:1"}, args...)
	run, err := f.Sandbox.Run(runCtx, sandbox.Spec{Dir: work, Program: sandbox.FFmpeg, Args: args, Timeout: st.timeout,
		Limits: st.limits, Stdout: pw, Stderr: st.stderr})
	<-probed // the probe reads the work directory, which goes when Execute returns
	used := ran{computeMs: run.Wall.Milliseconds(), processed: time.Duration(lastUs.Load()) * time.Microsecond}
	switch {
	case run.LimitExceeded != nil:
		return used, limitFail(run)
	case errors.Is(context.Cause(runCtx), errStalled) && (err != nil || run.ExitCode != 0):
		return used, stalledFail(fmt.Sprintf("ffmpeg wrote no frame, media time or byte for %d seconds and was stopped", int(stall/time.Second)), run.StderrTail)
	case run.TimedOut:
		return used, timeoutFail(fmt.Sprintf("the job ran past its time limit of %d seconds", int(st.total/time.Second)), run.StderrTail)
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return used, cancelled()
	case err != nil:
		return ran{}, f.internal(a.Lease.JobID, "the sandbox could not run FFmpeg", err)
	case run.ExitCode != 0 && diskFull(work):
		// FFmpeg failed because the runner's disk is full: the runner's fault, not the job's.
		return used, f.internal(a.Lease.JobID, "its disk is full",
			fmt.Errorf("ffmpeg exited with status %d with %s full", run.ExitCode, work))
	case run.ExitCode != 0:
		return used, exitFail(fmt.Sprintf("ffmpeg exited with status %d", run.ExitCode), run.StderrTail)
	}
	return used, nil
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

// firstLocalInput is the first -i argument that names a staged file (lavfi graphs have none),
// and the seconds its -ss skips of it.
func firstLocalInput(args []string, inputs map[string]bool) (name string, seek float64) {
	start := 0
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "-i" {
			continue
		}
		if inputs[args[i+1]] {
			return args[i+1], max(parseTime(fileOptions(args[start:i]).ss), 0)
		}
		start = i + 2
	}
	return "", 0
}

// collect stores every regular file the commands wrote (those skip names excepted: the inputs,
// and what earlier steps left that the job does not keep) and probes their meta.
// DefaultMaxProbes is how many output files of a job ffprobe reads when FFmpeg.MaxProbes is 0.
const DefaultMaxProbes = 8

// Files in the work directory are untrusted: they are opened without following symlinks, and
// anything but a regular file is ignored. computed, when not nil, is called once the files are
// read and probed, before their uploads (Hooks.Computed).
func (f *FFmpeg) collect(ctx context.Context, a workqueue.Assignment, work string, skip func(name string) bool, computed func()) ([]job.File, []workqueue.InlineFile, error) {
	entries, err := os.ReadDir(work)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() || skip(e.Name()) {
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
	if computed != nil {
		computed() // what is left is the uploads: the network's work, not the CPU's
	}
	// Files that fit what the control plane takes inside the report go with it, in order,
	// while they fit; the rest are stored one by one.
	var inline []workqueue.InlineFile
	budget := a.InlineBytes
	for i, n := range names {
		size, data, err := f.store(ctx, a.Lease, filepath.Join(work, n), n, budget)
		if err != nil {
			return nil, nil, err
		}
		if data != nil {
			inline = append(inline, workqueue.InlineFile{Name: n, Data: data})
			budget -= size
		}
		files[i].Size = size
	}
	return files, inline, nil
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

// store sends the output file at path (not followed if a symlink) as name: as data for the
// report to carry when it holds at most inline bytes, else through PutOutput. size is its
// size, as read or as the control plane stored it.
func (f *FFmpeg) store(ctx context.Context, l workqueue.Lease, path, name string, inline int64) (size int64, data []byte, err error) {
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("open %s: %w", name, err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return 0, nil, fmt.Errorf("stat %s: %w", name, err)
	}
	if inline > 0 && fi.Size() <= inline {
		data, err := io.ReadAll(io.LimitReader(fd, inline+1))
		if err != nil {
			return 0, nil, fmt.Errorf("read %s: %w", name, err)
		}
		if int64(len(data)) <= inline {
			return int64(len(data)), data, nil
		}
		if fi, err = fd.Stat(); err != nil { // it grew past what the report takes: stored, then
			return 0, nil, fmt.Errorf("stat %s: %w", name, err)
		}
	}
	var n int64
	err = whileUnavailable(ctx, func() (err error) {
		// Each attempt reads the file afresh through a reader with no Close: an HTTP transport
		// closes a body that has one, which would leave nothing to send again.
		n, err = f.Queue.PutOutput(ctx, l, name, io.NewSectionReader(fd, 0, fi.Size()), 0)
		return err
	})
	return n, nil, err
}

// defaultStallSeconds is the stall time of an assignment that names none (a control plane of an
// older version); the control plane sends its plan's, whose default is the same.
const defaultStallSeconds = 60

// errStalled is the cause a run is stopped with when the stall watchdog fires.
var errStalled = errors.New("runner: no progress within the stall time")

// progressWriter reads FFmpeg's -progress key=value lines: report gets each out_time_us, and
// moved is called whenever the frames, the media time or the bytes written grew.
type progressWriter struct {
	report func(outUs int64)
	moved  func()
	buf    bytes.Buffer
	// last holds the highest value seen of each key that measures progress.
	last map[string]int64
}

// progressKeys are the -progress keys whose growth is progress.
var progressKeys = map[string]bool{"frame": true, "out_time_us": true, "total_size": true}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.buf.Write(b)
	for {
		line, err := p.buf.ReadString('\n')
		if errors.Is(err, io.EOF) {
			p.buf.WriteString(line) // keep the partial line
			return len(b), nil
		}
		key, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || !progressKeys[key] {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue // N/A before the first frame
		}
		if p.last == nil {
			p.last = map[string]int64{}
		}
		if n > p.last[key] {
			p.last[key] = n
			if p.moved != nil {
				p.moved()
			}
		}
		if key == "out_time_us" && n > 0 {
			p.report(n)
		}
	}
}
