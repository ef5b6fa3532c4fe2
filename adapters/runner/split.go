package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/retry"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
)

// splitPoll is how often a split job's runner asks after its parts while it waits for them.
const splitPoll = 250 * time.Millisecond

// splitRun is a split job on its own runner's side (see service's split.go for the whole): it
// reads the input's keyframes and tells them, and, when the control plane cuts the input,
// encodes the audio while other runners encode the parts, waits for the parts without holding
// a slot, reads their files and joins them. whole is true when the job is not split and runs
// as any job; the files and inputs are those Execute staged in work.
func (f *FFmpeg) splitRun(ctx context.Context, a workqueue.Assignment, work string, req ffmpegjob.Request, checked ffmpegjob.Checked,
	staged map[string]bool, st step, h Hooks) (res workqueue.Result, whole bool) {
	sp := validator.Splittable(checked.Last())
	if !sp.OK {
		_, _ = h.Split(ctx, SplitAsk{Source: &workqueue.SplitSource{Reason: sp.Reason}})
		return res, true
	}
	if h.Waiting == nil {
		h.Waiting = func(bool) {}
	}
	deadline := time.Now().Add(st.timeout)
	st.quiet = true
	st.executing() // reading the keyframes is the job's compute
	began := time.Now()
	src, err := ProbeSplit(ctx, f.Sandbox, work, sp.Input)
	if err != nil {
		src = SplitSource{Reason: workqueue.SplitUnreadable}
		f.logf(a, "reading the keyframes of a split job's input failed", err)
	}
	if sp.Still != "" && src.Reason == "" && !StillImage(ctx, f.Sandbox, work, sp.Still) {
		src = SplitSource{Reason: workqueue.SplitNotStill}
	}
	plan, err := tellSplit(ctx, h, &workqueue.SplitSource{Keyframes: src.Keyframes, Duration: src.Duration, Audio: src.Audio, FrameRate: src.FrameRate,
		Width: src.Width, Height: src.Height, SampleRate: src.SampleRate, Channels: src.Channels, Reason: src.Reason, Trims: true})
	computeMs := time.Since(began).Milliseconds()
	switch {
	case ctx.Err() != nil:
		return workqueue.Result{ComputeMs: computeMs, Failure: cancelled()}, false
	case err != nil:
		// The control plane may have cut the input without its answer arriving: running whole
		// now would encode the input twice over, so the job fails (retryable) instead.
		return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "the control plane did not answer the split", err)}, false
	case plan == nil || len(plan.Parts) == 0:
		return res, true
	}

	// The commands came over the queue: the validator holds them as it holds the job's own.
	opts := req.Options(f.env(a))
	check := func(what string, args []string, reads ...string) (*validator.Plan, *workqueue.Failure) {
		o := opts
		o.Inputs = map[string]validator.Input{}
		for n, in := range opts.Inputs {
			o.Inputs[n] = in
		}
		for _, n := range reads {
			o.Inputs[n] = validator.Input{Inline: true, ContentSize: 1}
		}
		r := validator.Validate(validator.CommandLine(args), o)
		if !r.Valid {
			return nil, invalid("the split's " + what + " command is refused: " + r.Error)
		}
		return r.Plan, nil
	}
	run := func(p *validator.Plan, reads map[string]bool) *workqueue.Failure {
		st.timeout = time.Until(deadline)
		ran, fail := f.runStep(ctx, a, work, p, reads, st, Hooks{Progress: func(float64) {}, Executing: func() {}})
		computeMs += ran.computeMs
		return fail
	}
	if plan.Audio != nil {
		p, fail := check("audio", plan.Audio)
		if fail == nil {
			fail = run(p, staged)
		}
		if fail != nil {
			return workqueue.Result{ComputeMs: computeMs, Failure: fail}, false
		}
	}

	// Wait for the parts, holding no slot: this runner may take one of them meanwhile. A part
	// is read as soon as it is complete, so that only the last one's read is left to the join.
	joinReads := map[string]bool{plan.ListName: true}
	fetch := func(name string) *workqueue.Failure {
		if joinReads[name] {
			return nil
		}
		if err := f.fetchPart(ctx, a, work, name); err != nil {
			if ctx.Err() != nil { // the job was cancelled, or a part failed it, during the read
				return cancelled()
			}
			return f.internal(a.Lease.JobID, "reading part "+name, err)
		}
		joinReads[name] = true
		return nil
	}
	h.Waiting(true)
	plan, fail := f.waitParts(ctx, plan, h, a.SplitWait, deadline, st.total, fetch)
	h.Waiting(false)
	if fail != nil {
		return workqueue.Result{ComputeMs: computeMs, Failure: fail}, false
	}

	var names []string
	for _, p := range plan.Parts {
		if fail := fetch(p.Name); fail != nil {
			return workqueue.Result{ComputeMs: computeMs, Failure: fail}, false
		}
		names = append(names, p.Name)
	}
	if plan.AudioName != "" {
		joinReads[plan.AudioName] = true
		names = append(names, plan.AudioName)
	}
	// The parts' lead-outs go, by stream copy, into the files the join reads.
	parts := map[string]bool{}
	for _, p := range plan.Parts {
		parts[p.Name] = true
	}
	for i, tr := range plan.Trims {
		p, fail := check("trim "+strconv.Itoa(i+1), tr, names...)
		if fail == nil {
			fail = run(p, parts)
		}
		if fail != nil {
			return workqueue.Result{ComputeMs: computeMs, Failure: fail}, false
		}
		for _, out := range p.Outputs {
			joinReads[out] = true
			names = append(names, out)
		}
	}
	if err := os.WriteFile(filepath.Join(work, plan.ListName), []byte(plan.List), 0o644); err != nil {
		return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "writing the parts' list", err)}, false
	}
	p, fail := check("join", plan.Join, append(names, plan.ListName)...)
	if fail == nil {
		fail = run(p, joinReads)
	}
	if fail != nil {
		return workqueue.Result{ComputeMs: computeMs, Failure: fail}, false
	}
	h.Progress(0.99)
	leftover := func(name string) bool { return staged[name] || joinReads[name] }
	files, inline, err := f.collect(ctx, a, work, leftover, nil)
	if err != nil {
		return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "storing the outputs failed", err)}, false
	}
	return workqueue.Result{Files: files, Inline: inline, ComputeMs: computeMs}, false
}

// splitAnswerFor is how long a runner sends the input it read before it gives up on the
// control plane's answer.
const splitAnswerFor = 30 * time.Second

// tellSplit sends what the runner read of the input until the control plane answers, for up to
// splitAnswerFor: the control plane makes one plan of a job however many times it is told,
// and answers it each time, so a lost answer is asked for again, never taken as "run whole".
func tellSplit(ctx context.Context, h Hooks, src *workqueue.SplitSource) (*workqueue.SplitPlan, error) {
	backoff := retry.New(250*time.Millisecond, 2*time.Second)
	give := time.Now().Add(splitAnswerFor)
	for {
		plan, err := h.Split(ctx, SplitAsk{Source: src})
		if err == nil || ctx.Err() != nil || time.Now().After(give) || !backoff.Wait(ctx) {
			return plan, err
		}
	}
}

// waitParts asks after the parts until every one is complete, telling the job's progress as
// their mean and calling complete with each part's name once it is complete (a failure it
// returns ends the wait); a part that fails for good fails the job on the control plane's
// side, which answers the heartbeat with Cancelled and ends ctx. The job's time limit holds
// over the wait: parts still running at its deadline fail the job RUNNER_TIMEOUT.
//
// Each question is a heartbeat that the control plane holds for up to hold (the assignment's
// SplitWait) until another part is complete, and is asked again as soon as it is answered; an
// answer that comes sooner with no part newly complete (a control plane that holds none, or
// one out of reach) is asked again after splitPoll.
func (f *FFmpeg) waitParts(ctx context.Context, plan *workqueue.SplitPlan, h Hooks, hold time.Duration, deadline time.Time, total time.Duration,
	complete func(name string) *workqueue.Failure) (*workqueue.SplitPlan, *workqueue.Failure) {
	late := time.NewTimer(time.Until(deadline))
	defer late.Stop()
	for {
		for _, p := range plan.Parts {
			if p.Status != job.StatusComplete {
				continue
			}
			if fail := complete(p.Name); fail != nil {
				return nil, fail
			}
		}
		if plan.Done() {
			return plan, nil
		}
		asked := time.Now()
		next, err := h.Split(ctx, SplitAsk{Wait: hold, Complete: plan.Complete()})
		if ctx.Err() != nil {
			return nil, cancelled()
		}
		if err != nil || next == nil || len(next.Parts) != len(plan.Parts) {
			next = nil // the control plane was out of reach: ask again
		}
		if next == nil || next.Complete() == plan.Complete() {
			poll := time.NewTimer(splitPoll - time.Since(asked))
			select {
			case <-ctx.Done():
				poll.Stop()
				return nil, cancelled()
			case <-late.C:
				poll.Stop()
				return nil, timeoutFail(fmt.Sprintf("the job ran past its time limit of %d seconds while its parts were encoded (%s not complete)",
					int(total/time.Second), pendingParts(plan)), nil)
			case <-poll.C:
			}
		}
		if next == nil {
			continue
		}
		plan = next
		done := 0.0
		for _, p := range plan.Parts {
			done += p.Progress
			if p.Status == "complete" {
				done += 1 - p.Progress
			}
		}
		h.Progress(min(0.95*done/float64(len(plan.Parts)), 0.95))
	}
}

// pendingParts names the parts of plan not complete: "part 2 of 4", "parts 2, 3 of 4".
func pendingParts(plan *workqueue.SplitPlan) string {
	var left []string
	for i, p := range plan.Parts {
		if p.Status != job.StatusComplete {
			left = append(left, strconv.Itoa(i+1))
		}
	}
	word := "parts "
	if len(left) == 1 {
		word = "part "
	}
	return word + strings.Join(left, ", ") + " of " + strconv.Itoa(len(plan.Parts))
}

// fetchPart copies a complete part's file from the control plane into work.
func (f *FFmpeg) fetchPart(ctx context.Context, a workqueue.Assignment, work, name string) error {
	var r io.ReadCloser
	err := whileUnavailable(ctx, func() error {
		var err error
		r, err = f.Queue.OpenAsset(ctx, a.Lease, name)
		return err
	})
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.OpenFile(filepath.Join(work, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (f *FFmpeg) logf(a workqueue.Assignment, msg string, err error) {
	if f.Log != nil {
		f.Log.Warn("runner: "+msg, "job", a.Lease.JobID, "err", fmt.Sprint(err))
	}
}
