package service

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
)

// Split and stitch, on the control plane's side. A job that asks for it (params.split "auto",
// Pro) and whose command the validator proves splittable is handed out with
// Assignment.SplitParts: the free slots of the class when it is claimed. Its runner reads the
// input's keyframes and tells them (Beat.Split); the control plane cuts the input
// (validator.PlanCuts), writes and validates every command (validator.SplitCommands), and makes
// each part a job of its own (job.ParentID) that any runner of the class claims like any job.
// The job's own runner encodes the audio, waits for the parts through its heartbeats
// (Ack.Split), reads their files (OpenAsset under each part's name) and joins them. The parts
// are hidden, emit nothing and are not billed; the job's charge is the compute of all of them
// and its own, and a part that fails twice fails the job, naming the part.

// SplitConfig tunes split and stitch.
type SplitConfig struct {
	// MaxParts caps the parts of one job; 0 is DefaultSplitMaxParts.
	MaxParts int
	// MinSeconds is the shortest input that is split; 0 is DefaultSplitMinSeconds.
	MinSeconds float64
	// AllowPrivateNetworks are the ranges opened to the input fetcher, for validating the
	// commands of the parts as the job's own was at submit.
	AllowPrivateNetworks []netip.Prefix
	// Wait is the longest a split job's heartbeat is held for its parts (Beat.SplitWait); 0 is
	// DefaultSplitWait.
	Wait time.Duration
}

const (
	DefaultSplitMaxParts   = 8
	DefaultSplitMinSeconds = 30
)

// splitCandidate says whether a claimed job may still be split.
func splitCandidate(j *job.Job) bool {
	return j.Split != nil && j.Split.Reason == "" && !j.Split.Cut()
}

// minPartSeconds bounds the parts of a cut to one for each minPartSeconds of input: each part
// pays an encoder's start and a claim, and each join is a place the encoder's rate control
// starts again. (PlanCuts makes the longest part as short as the keyframes allow; the last
// one may be shorter.)
const minPartSeconds = 5

// splitParts decides, at a split candidate's claim, into how many parts it may be cut: the
// free slots of its class, which are the claiming runner's free slots (free, counting the job's
// own, which is free while its parts run) and one for each other live runner of the class (a
// runner tells only its own; one that is busy now frees a slot for a part when a job of its
// ends, and a part queues for it like any job). Fewer than two runs the job whole, saying why.
//
// One part a slot, not more: more parts would balance the slots better (the job's own encodes
// the audio first), but each pays an encoder's start, a seek and a claim, and 4 parts of a 60 s
// x264 encode on 2 slots measured no gain (1.32x and 1.46x in two runs, where 2 parts measured
// 1.07x to 1.78x). Their quality was worse then (5.8 dB at worst against 2.3 dB), before parts
// kept the whole encode's keyframe grid (validator.SplitCommands).
func (s *Runs) splitParts(ctx context.Context, j *job.Job, slots int) int {
	if live, err := s.p.Registry.Live(ctx, s.p.Clock.Now().Add(-workqueue.LiveWithin)); err == nil && live[j.Class] > 1 {
		slots += live[j.Class] - 1
	}
	n := min(slots, cmp.Or(s.p.Split.MaxParts, DefaultSplitMaxParts))
	_, err := s.p.Jobs.Update(ctx, j.ID, func(j *job.Job) error {
		if !splitCandidate(j) {
			return errUnchanged
		}
		switch {
		case slots < 2:
			j.Split.Reason = "the class had one free worker slot when the job started"
		case n < 2:
			j.Split.Reason = "the operator allows one part a job (--split-max-parts)"
		default:
			j.Split.MaxParts, j.Split.Slots = n, slots
		}
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		s.p.Log.Warn("recording a split's parts failed", "job", j.ID, "err", err)
		return 0
	}
	if n < 2 { // n is at most slots
		return 0
	}
	return n
}

// freeSlots is how many of a claiming runner's slots are free for the split job j it claims,
// j's own among them (it is free while the parts run): its slots less the jobs it holds besides
// j, this claim's others too, where a split job past its cut holds none (its runner waits for
// the parts without a slot). The claim's Max would be the free slots when the runner asked,
// which a long poll can leave behind by a job's length; the store's are the free slots now. (A
// split job's runner does hold a slot while it encodes the audio and joins: a claim then counts
// one slot too many, which a part waits for like any job.) A runner that tells no Slots (of a
// build before split and stitch) counts what it asked for.
func (s *Runs) freeSlots(ctx context.Context, who workqueue.Identity, p workqueue.ClaimParams, j *job.Job) int {
	if p.Slots <= 0 {
		return max(p.Max, 1)
	}
	slots := p.Slots
	held, err := s.p.Jobs.HeldByRunner(ctx, runnerOf(who, p), slots+maxHeldRead)
	if err != nil {
		s.p.Log.Warn("reading a runner's jobs failed; counting its free slots as it asked", "job", j.ID, "err", err)
		return p.Max
	}
	busy := 0
	for _, id := range held {
		if id == j.ID {
			continue
		}
		if h, err := s.p.Jobs.Get(ctx, id); err == nil && h.Split.Cut() {
			continue
		}
		busy++
	}
	return max(slots-busy, 1)
}

// maxHeldRead bounds the jobs freeSlots reads beyond a runner's slots: split jobs waiting for
// their parts hold no slot.
const maxHeldRead = 64

// DefaultSplitWait is the longest a split job's heartbeat is held (Beat.SplitWait). A part that
// reports to this replica ends the wait at once; one that reports to another is seen when the
// wait ends, so the wait is no longer than the runner's poll of a control plane that holds no
// answer.
const DefaultSplitWait = 250 * time.Millisecond

func (s *Runs) splitWait() time.Duration { return cmp.Or(s.p.Split.Wait, DefaultSplitWait) }

// splitAnswer is splitBeat's answer, held while the beat asks for it (Beat.SplitWait) and the
// split job's parts are as its runner knows them: no more of them complete than it says, none
// failed for good. The job's runner then learns of the part it waits for as that part reports,
// and joins at once.
func (s *Runs) splitAnswer(ctx context.Context, who workqueue.Identity, b workqueue.Beat, j *job.Job) (*workqueue.SplitPlan, bool, error) {
	if b.SplitWait <= 0 || b.Split != nil || !j.Split.Cut() {
		return s.splitBeat(ctx, who, b, j)
	}
	t := time.NewTimer(min(b.SplitWait, s.splitWait()))
	defer t.Stop()
	for last := false; ; {
		// The parts are read after the watch begins: a report after the read ends the wait.
		reported, leave := s.parts.watch(j.ID)
		plan, stop, err := s.splitBeat(ctx, who, b, j)
		if err != nil || stop || last || plan == nil || plan.Complete() != b.PartsComplete {
			leave()
			return plan, stop, err
		}
		select {
		case <-reported.ch:
		case <-t.C:
			last = true // read the parts once more, for their progress
		case <-ctx.Done():
			last = true
		case <-s.stopping:
			last = true
		}
		leave()
	}
}

// splitBeat answers a heartbeat of a split candidate or of a split job: the plan, made from the
// beat's SplitSource the first time, and the parts' states. A part that failed for good fails
// the job, and the answer tells the runner to stop.
func (s *Runs) splitBeat(ctx context.Context, who workqueue.Identity, b workqueue.Beat, j *job.Job) (*workqueue.SplitPlan, bool, error) {
	if splitCandidate(j) && b.Split != nil {
		var err error
		if j, err = s.cut(ctx, who, b, j); err != nil {
			return nil, false, err
		}
	}
	if j.Split == nil {
		return nil, false, nil
	}
	if !j.Split.Cut() {
		if j.Split.Reason == "" {
			return nil, false, nil
		}
		return &workqueue.SplitPlan{Reason: j.Split.Reason}, false, nil
	}
	if b.Split != nil && !b.Split.Trims && len(j.Split.Trims) > 0 {
		// A new attempt of a job cut for a runner that trims its parts' lead-outs (one that
		// handed it back), taken by a runner of an earlier build, which would not: its join
		// would fail on files it never made.
		return nil, true, s.failSplit(ctx, who, b.Lease, job.NewError(problem.CodeRunnerError,
			"the job's parts were cut for workers that trim them, and a worker of an earlier build took the job over; submit it again once the workers are upgraded", nil))
	}
	plan := &workqueue.SplitPlan{Around: j.Split.Around}
	for i, p := range j.Split.Parts {
		part, err := s.p.Jobs.Get(ctx, p.JobID)
		if err != nil {
			return nil, false, err
		}
		plan.Parts = append(plan.Parts, workqueue.PartState{Name: p.Name, Status: part.Status, Progress: part.Progress})
		if part.Status == job.StatusFailed || part.Status == job.StatusCancelled {
			return plan, true, s.failSplit(ctx, who, b.Lease, partError(i, j.Split.Parts[i], len(j.Split.Parts), part))
		}
	}
	return plan, false, nil
}

// cut makes the split of a candidate from what its runner read of the input: the parts' jobs,
// then the plan on the job. A beat that finds the job cut meanwhile (a beat sent twice) leaves
// its parts cancelled and answers the plan that won.
func (s *Runs) cut(ctx context.Context, who workqueue.Identity, b workqueue.Beat, j *job.Job) (*job.Job, error) {
	src := *b.Split
	command, err := s.splitPlan(j)
	reason, run, cuts := trustedSplitReason(src.Reason, command), (*validator.SplitRun)(nil), []float64(nil)
	if reason == "" && err != nil {
		reason = err.Error()
	}
	if reason == "" && len(src.Keyframes) > maxKeyframes {
		reason = fmt.Sprintf("the input has more than %d keyframes", maxKeyframes)
	}
	if reason == "" && src.Duration < s.minSeconds() {
		reason = fmt.Sprintf("the input is %s s long; inputs under %s s run whole", strconv.FormatFloat(src.Duration, 'f', 1, 64), strconv.FormatFloat(s.minSeconds(), 'f', -1, 64))
	}
	if reason == "" {
		// A part for each minPartSeconds of input at most, and two at least: the input is
		// longer than minSeconds, which is the operator's to lower.
		n := min(cmp.Or(j.Split.MaxParts, 2), max(2, int(src.Duration/minPartSeconds)))
		// With a part for every slot, the parts are claimed in order and the last waits for a
		// slot to free: the job's own, once it has encoded the audio, so that part is shorter
		// by the audio's share (where the keyframes allow it without fewer parts: PlanCuts).
		// With fewer parts than slots every part has a slot at once and the parts stay even.
		// (A runner of several slots counts as one here, so a class may have more slots than
		// Slots says; the tail then costs what it was to save.)
		tail := 0.0
		if src.Audio && j.Split.Slots > 0 && n >= j.Split.Slots {
			tail = src.Duration * validator.SplitAudioShare(command, src.Width, src.Height, src.FrameRate, src.SampleRate, src.Channels)
		}
		keys := validator.CutPoints(command, src.Keyframes, src.Duration, src.FrameRate)
		cuts, reason = validator.PlanCuts(keys, src.Duration, n, tail, validator.SplitLead(command, src.FrameRate))
	}
	if reason == "" {
		commands := validator.SplitCommands
		if !src.Trims {
			commands = validator.SplitCommandsWithoutTrims // a runner of an earlier build
		}
		if run, err = commands(command, cuts, src.Audio, src.FrameRate); err != nil {
			reason = err.Error()
		}
	}
	var parts, made []*job.Job
	plan := job.Split{}
	if reason == "" {
		if made, err = s.partJobs(j, command, run); err != nil {
			reason = err.Error()
			if !errors.Is(err, errPartInvalid) {
				// Not the user's to read: the job's own data did not make parts.
				s.p.Log.Warn("making a split's parts failed; the job runs whole", "job", j.ID, "err", err)
				reason = "the parts could not be made"
			}
		}
	}
	if reason == "" {
		plan = job.Split{Around: job.Around{Audio: run.Audio, AudioName: run.AudioName, Trims: run.Trims, ListName: run.ListName, List: run.List, Join: run.Join}}
		bounds := append(append([]float64{0}, cuts...), src.Duration)
		for i, p := range made {
			p.UpdatedAt = s.p.Clock.Now().UTC().Truncate(time.Microsecond)
			if err := s.p.Jobs.Create(ctx, p); err != nil {
				s.cancelParts(ctx, parts)
				return nil, err
			}
			parts = append(parts, p)
			plan.Parts = append(plan.Parts, job.SplitPart{JobID: p.ID, Name: run.PartNames[i], Start: bounds[i], End: bounds[i+1], Lead: run.Leads[i]})
		}
	}
	got, err := s.p.Jobs.Update(ctx, j.ID, func(j *job.Job) error {
		if err := s.holds(j, who, b.Lease); err != nil {
			return err
		}
		if !splitCandidate(j) || j.Status.Terminal() {
			return errUnchanged // cut meanwhile, or ended (cancelled, failed): the parts go
		}
		if reason != "" {
			j.Split.Reason = reason
			return nil
		}
		plan.MaxParts = j.Split.MaxParts
		j.Split = &plan
		return nil
	})
	if err != nil {
		s.cancelParts(ctx, parts)
		if errors.Is(err, errUnchanged) {
			return s.p.Jobs.Get(ctx, j.ID)
		}
		return nil, err
	}
	if len(parts) > 0 {
		s.p.Log.Info("job split", "job", j.ID, "parts", len(parts), "duration_s", src.Duration)
		s.Wake(ctx, j.Class)
	}
	return got, nil
}

// trustedSplitReason is what the control plane shows of a runner's reason not to split: one of
// the runner's known sentences, or, for any other text, the command's own reason by the
// control plane's validator, or that the input could not be read. A runner's text is never
// shown as it came (a runner is not trusted: it could put any words, and any size, on the job).
func trustedSplitReason(r string, command *validator.Plan) string {
	switch r {
	case "", workqueue.SplitNoVideo, workqueue.SplitSubtitles, workqueue.SplitUnreadable, workqueue.SplitNotStill:
		return r
	}
	if command != nil {
		if sp := validator.Splittable(command); !sp.OK {
			return sp.Reason
		}
	}
	return workqueue.SplitUnreadable
}

// errPartInvalid is a part that its runner would not validate: its reason is the user's to read.
var errPartInvalid = errors.New("the split cannot run")

// partJobs are the jobs of a split's parts, not yet stored. A part reads what its job reads:
// the job's inputs, given beside params or inside them, and the files the job's command reads
// from URLs, under the local names the part's command gives them (validator.Plan.Downloads).
// Each part is validated here as its runner will validate it: one that would not pass is the
// split's reason to run whole, not a part that fails twice.
func (s *Runs) partJobs(j *job.Job, command *validator.Plan, run *validator.SplitRun) ([]*job.Job, error) {
	var inner struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	_ = json.Unmarshal(j.Params, &inner)
	inputs := inner.Inputs
	inBody := len(j.Inputs) > 0 && string(j.Inputs) != "null"
	if inBody {
		if err := json.Unmarshal(j.Inputs, &inputs); err != nil {
			return nil, fmt.Errorf("the job's inputs: %w", err)
		}
	}
	if inputs == nil {
		inputs = map[string]json.RawMessage{}
	}
	for _, d := range command.Downloads {
		if _, ok := inputs[d.Name]; ok {
			continue
		}
		u, err := json.Marshal(d.URL)
		if err != nil {
			return nil, err
		}
		inputs[d.Name] = u
	}
	var bodyInputs json.RawMessage
	if inBody {
		b, err := json.Marshal(inputs)
		if err != nil {
			return nil, err
		}
		bodyInputs = b
	}
	env := s.splitEnv()
	parts := make([]*job.Job, 0, len(run.Parts))
	for i, args := range run.Parts {
		cmd := map[string]any{"command": validator.CommandLine(args), "timeout": int(j.Timeout / time.Second)}
		if !inBody && len(inputs) > 0 {
			cmd["inputs"] = inputs
		}
		params, err := json.Marshal(cmd)
		if err != nil {
			return nil, err
		}
		r, err := ffmpegjob.Parse(bodyInputs, params)
		if err == nil {
			_, err = r.Validate(env)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: part %d of %d does not validate: %w", errPartInvalid, i+1, len(run.Parts), err)
		}
		// A part takes its job's place in the queue (its priority and its submit time), so
		// that it goes before the account's jobs submitted after its job, which already ran.
		p, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: j.AccountID, Type: ffmpegjob.Name, Inputs: bodyInputs, Params: params,
			Class: j.Class, Timeout: j.Timeout, Pattern: job.PatternSingle, Priority: j.Priority, ParentID: j.ID, Now: j.CreatedAt})
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// maxKeyframes bounds what a runner may tell of an input: a day of keyframes every second.
const maxKeyframes = 86400

func (s *Runs) minSeconds() float64 { return cmp.Or(s.p.Split.MinSeconds, DefaultSplitMinSeconds) }

// splitEnv is what a split job's command, and each of its parts', is validated against: as at
// submit, and as their runners validate them.
func (s *Runs) splitEnv() jobtype.Env {
	return jobtype.Env{AssetURLPrefix: s.p.AssetURLPrefix, AllowPrivateNetworks: s.p.Split.AllowPrivateNetworks}
}

// splitPlan is the plan of a job's command, validated as it was at submit.
func (s *Runs) splitPlan(j *job.Job) (*validator.Plan, error) {
	r, err := ffmpegjob.Parse(j.Inputs, j.Params)
	if err != nil {
		return nil, err
	}
	c, err := r.Validate(s.splitEnv())
	if err != nil {
		return nil, err
	}
	return c.Last(), nil
}

// partError is the error of a split job whose part i (of n, covering p) failed for good: the
// part's own, naming the part.
func partError(i int, p job.SplitPart, n int, part *job.Job) *job.Error {
	which := fmt.Sprintf("part %d of %d (%.3f s to %.3f s of the input) failed", i+1, n, p.Start, p.End)
	if part.Error == nil {
		return job.NewError(problem.CodeRunnerError, which, nil)
	}
	e := job.NewError(part.Error.Code, which+": "+part.Error.Message, nil)
	e.Detail = part.Error.Detail
	return e
}

// failSplit fails a split job with e (a part that failed for good, twice or cancelled by an
// operator; a plan its runner cannot run); the compute of its parts is charged as the job's.
func (s *Runs) failSplit(ctx context.Context, who workqueue.Identity, l workqueue.Lease, e *job.Error) error {
	ms, parts, err := s.partsCompute(ctx, l.JobID)
	if err != nil {
		return err
	}
	j, err := s.p.Jobs.Update(ctx, l.JobID, func(j *job.Job) error {
		if err := s.holds(j, who, l); err != nil {
			return err
		}
		if j.Status.Terminal() {
			return errUnchanged
		}
		if err := j.Fail(s.p.Clock.Now(), e, ms+chargeableMs(j, j.ComputeMs, s.p.Clock.Now())); err != nil {
			return err
		}
		return finished(j, s.bill, webhook.EventJobFailed)
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	s.cancelParts(ctx, parts)
	s.bill.appendNow(ctx, j, s.p.Clock.Now()) // before the waits hear of the end
	s.p.Observer.JobFinished(j)
	return nil
}

// partsCompute sums the compute of a split job's parts, and returns them.
func (s *Runs) partsCompute(ctx context.Context, id string) (int64, []*job.Job, error) {
	j, err := s.p.Jobs.Get(ctx, id)
	if err != nil || !j.Split.Cut() {
		return 0, nil, err
	}
	var ms int64
	var parts []*job.Job
	for _, p := range j.Split.Parts {
		part, err := s.p.Jobs.Get(ctx, p.JobID)
		if err != nil {
			return 0, nil, err
		}
		ms += part.ComputeMs
		parts = append(parts, part)
	}
	return ms, parts, nil
}

// cancelParts ends the parts of a split job that has ended, or whose cut was abandoned (see
// endParts).
func (s *Runs) cancelParts(ctx context.Context, parts []*job.Job) {
	endParts(ctx, s.p.Jobs, s.p.Blobs, s.p.Clock, s.p.Log, parts)
}

// endParts ends parts of a split job: those not finished are cancelled, and the files any of
// them stored are deleted, since only their job read them.
func endParts(ctx context.Context, jobs job.Store, blobs blob.Store, clk clock.Clock, log *slog.Logger, parts []*job.Job) {
	for _, p := range parts {
		j, err := jobs.Update(ctx, p.ID, func(j *job.Job) error {
			if j.Status.Terminal() {
				return errUnchanged
			}
			return j.Cancel(clk.Now())
		})
		if errors.Is(err, errUnchanged) {
			j, err = jobs.Get(ctx, p.ID)
		}
		if err != nil {
			log.Warn("ending a part of a split job failed", "job", p.ParentID, "part", p.ID, "err", err)
			continue
		}
		for n := range storedNames(j) {
			if err := blobs.Delete(ctx, blob.AttemptOutputKey(j.AccountID, j.ID, j.Attempt, n)); err != nil {
				log.Warn("deleting a part's file failed", "job", p.ParentID, "part", p.ID, "file", n, "err", err)
			}
		}
	}
}

// splitParts reads the parts of a split job; none for any other job, or when one cannot be read
// (a cancel goes on without them: a part of a finished job is not run for long).
func splitParts(ctx context.Context, jobs job.Store, j *job.Job) []*job.Job {
	if !j.Split.Cut() {
		return nil
	}
	var parts []*job.Job
	for _, p := range j.Split.Parts {
		if part, err := jobs.Get(ctx, p.JobID); err == nil {
			parts = append(parts, part)
		}
	}
	return parts
}

// partLength is how much of the input part encodes (its Assignment.Length), its lead-in and
// lead-out included, from its job's plan; 0 when the plan cannot be read.
func (s *Runs) partLength(ctx context.Context, part *job.Job) time.Duration {
	j, err := s.p.Jobs.Get(ctx, part.ParentID)
	if err != nil || !j.Split.Cut() {
		return 0
	}
	for _, p := range j.Split.Parts {
		if p.JobID == part.ID && p.End > p.Start {
			return time.Duration((p.End - p.Start + p.Lead) * float64(time.Second))
		}
	}
	return 0
}

// openPart reads the file of a complete part of the lease's split job, named as the plan names
// it; ok is false when name is no part's.
func (s *Runs) openPart(ctx context.Context, j *job.Job, name string) (io.ReadCloser, bool, error) {
	if !j.Split.Cut() {
		return nil, false, nil
	}
	for _, p := range j.Split.Parts {
		if p.Name != name {
			continue
		}
		part, err := s.p.Jobs.Get(ctx, p.JobID)
		if err != nil {
			return nil, true, err
		}
		if part.Status != job.StatusComplete {
			return nil, true, problem.Reject(problem.CodeConflict, "part %s is %s, not complete", name, part.Status)
		}
		r, err := openOutput(ctx, s.p.Blobs, part, name)
		return r, true, err
	}
	return nil, false, nil
}
