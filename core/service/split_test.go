package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

const splitParams = `{"command":"ffmpeg -i in.mp4 -vf scale=640:-2 -c:v libx264 -crf 23 -c:a aac out.mp4","split":"auto"}`

// submitSplit submits a splittable ffmpeg job asking params.split auto.
func (h *harness) submitSplit(t *testing.T, a account.Account, params string) *job.Job {
	t.Helper()
	j, err := h.submit.Submit(h.ctx, a, jobtype.Request{Type: "ffmpeg", Inputs: json.RawMessage(`{"in.mp4":"https://media.example.com/in.mp4"}`), Params: json.RawMessage(params)})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	h.clock.Advance(time.Millisecond)
	return j
}

// claimSplit claims the next cpu job as a runner of slots, with its first heartbeat.
func (h *harness) claimSplit(t *testing.T, slots int) workqueue.Assignment {
	t.Helper()
	return h.claimAs(t, "test", slots)
}

// claimAs claims the next cpu job as the runner named runner, of slots, all free, with its
// first heartbeat.
func (h *harness) claimAs(t *testing.T, runner string, slots int) workqueue.Assignment {
	t.Helper()
	as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: slots, Slots: slots, Worker: runner})
	if err != nil || len(as) != 1 {
		t.Fatalf("Claim as %s: %v %v", runner, as, err)
	}
	h.beat(t, as[0].Lease, 0, true)
	return as[0]
}

// source is an input of duration seconds with a keyframe every 2 s and audio.
func source(duration float64) *workqueue.SplitSource { return sourceEvery(duration, 2) }

// sourceEvery is an input of duration seconds with a keyframe every step seconds and audio, as
// a runner that runs trims tells it.
func sourceEvery(duration, step float64) *workqueue.SplitSource {
	src := &workqueue.SplitSource{Duration: duration, Audio: true, FrameRate: 25, Trims: true}
	for k := 0.0; k < duration; k += step {
		src.Keyframes = append(src.Keyframes, k)
	}
	return src
}

// split is a split job on its way: its account, the job, its runner's assignment and the plan
// the control plane answered to a 60-second source.
type split struct {
	h      *harness
	acc    account.Account
	parent *job.Job
	a      workqueue.Assignment
	plan   *workqueue.SplitPlan
}

// startSplit submits a splittable job for a Pro account, claims it as a runner of slots and
// tells it a 60-second source; the plan must have parts parts.
func startSplit(t *testing.T, slots, parts int) split {
	t.Helper()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	parent := h.submitSplit(t, acc, splitParams)
	a := h.claimSplit(t, slots)
	plan := h.tell(t, a.Lease, source(60)).Split
	if plan == nil || len(plan.Parts) != parts {
		t.Fatalf("plan = %+v, want %d parts", plan, parts)
	}
	return split{h: h, acc: acc, parent: parent, a: a, plan: plan}
}

func (h *harness) tell(t *testing.T, l workqueue.Lease, src *workqueue.SplitSource) workqueue.Ack {
	t.Helper()
	ack, err := h.runs.Heartbeat(h.ctx, workqueue.Beat{Lease: l, Executing: true, Split: src})
	if err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	return ack
}

// TestSplitRunsAsOneJob: a split job's parts are hidden jobs any runner claims; the job's own
// runner reads their files through its lease and reports one result, charged once for the
// compute of every part and its own, with the events of one job.
func TestSplitRunsAsOneJob(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 2, 2)
	h, acc, parent, a, plan := sp.h, sp.acc, sp.parent, sp.a, sp.plan
	if a.SplitParts != 2 {
		t.Fatalf("SplitParts = %d, want 2 (the claiming runner's slots)", a.SplitParts)
	}
	if plan.Audio == nil || plan.Join == nil || plan.Reason != "" {
		t.Fatalf("plan = %+v, want 2 parts, the audio and the join", plan)
	}
	if v, _ := h.jobs.Get(h.ctx, acc, parent.ID); v.Split == nil || v.Split.Parts != 2 {
		t.Fatalf("view split = %+v, want 2 parts", v.Split)
	}
	listed, _, err := h.jobs.List(h.ctx, acc, job.ListParams{})
	if err != nil || len(listed) != 1 {
		t.Fatalf("List: %d jobs, %v; want the split job alone", len(listed), err)
	}
	// The parts: ordinary ffmpeg commands over the same input, each a cut of it.
	as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 2, Worker: "other"})
	if err != nil || len(as) != 2 {
		t.Fatalf("claiming the parts: %d, %v", len(as), err)
	}
	cut := h.job(t, parent.ID).Split.Parts
	var length time.Duration
	for i, p := range as {
		var params struct{ Command string }
		_ = json.Unmarshal(p.Params, &params)
		if !strings.Contains(params.Command, "-i in.mp4") || !strings.Contains(params.Command, plan.Parts[i].Name) {
			t.Errorf("part %d runs %q", i+1, params.Command)
		}
		// Each part's assignment says how much of the input it encodes, its lead-in included,
		// so that its runner need not probe the input for it.
		if want := time.Duration((cut[i].End - cut[i].Start + cut[i].Lead) * float64(time.Second)); p.Length != want || want <= 0 {
			t.Errorf("part %d's assignment Length = %v, want %v (%.3f s to %.3f s, and %.3f s before)", i+1, p.Length, want, cut[i].Start, cut[i].End, cut[i].Lead)
		}
		length += p.Length - time.Duration(cut[i].Lead*float64(time.Second))
		if _, err := h.jobs.Get(h.ctx, acc, p.Lease.JobID); problem.CodeOf(err) != problem.CodeNotFound {
			t.Errorf("GET of part %d: %v, want NOT_FOUND", i+1, err)
		}
		h.beat(t, p.Lease, 0.5, true)
		h.clock.Advance(time.Second)
		h.storeFiles(t, p.Lease, []job.File{{Path: plan.Parts[i].Name, Size: 100 + int64(i)}})
		if err := h.runs.Report(h.ctx, p.Lease, workqueue.Result{Files: []job.File{{Path: plan.Parts[i].Name, Size: 100 + int64(i)}}, ComputeMs: 1000, Started: true}); err != nil {
			t.Fatalf("part %d report: %v", i+1, err)
		}
	}
	if cut[0].Lead != 0.24 || cut[1].Lead != 0.24 {
		t.Errorf("leads %v and %v, want 6 frames at 25 fps either side of the cut (x264)", cut[0].Lead, cut[1].Lead)
	}
	if len(plan.Trims) != 1 {
		t.Errorf("%d trims, want the first part's lead-out cut off", len(plan.Trims))
	}
	if length != time.Minute || a.Length != 0 {
		t.Errorf("the parts' lengths add up to %v, want the input's minute; the job's own assignment says %v, want none", length, a.Length)
	}
	ack := h.beat(t, a.Lease, 0.9, true)
	if ack.Split == nil || !ack.Split.Done() {
		t.Fatalf("after the parts: %+v, want every part complete", ack.Split)
	}
	r, err := h.runs.OpenAsset(h.ctx, a.Lease, plan.Parts[1].Name)
	if err != nil {
		t.Fatalf("reading part 2 through the job's lease: %v", err)
	}
	b, _ := io.ReadAll(r)
	_ = r.Close()
	if len(b) != 101 {
		t.Errorf("part 2 read %d bytes, want 101", len(b))
	}
	if _, err := h.runs.OpenAsset(h.ctx, as[0].Lease, plan.Parts[1].Name); err == nil {
		t.Error("a part's lease read another part's file")
	}
	h.clock.Advance(500 * time.Millisecond)
	h.storeFiles(t, a.Lease, []job.File{{Path: "out.mp4", Size: 300}})
	if err := h.runs.Report(h.ctx, a.Lease, workqueue.Result{Files: []job.File{{Path: "out.mp4", Size: 300}}, ComputeMs: 500, Started: true}); err != nil {
		t.Fatalf("Report: %v", err)
	}
	for i, p := range as {
		if _, err := h.blobs.Open(h.ctx, blob.OutputKey(acc.ID, p.Lease.JobID, plan.Parts[i].Name)); !errors.Is(err, problem.ErrNotFound) {
			t.Errorf("part %d's file is kept after its job completed: %v", i+1, err)
		}
	}
	done := h.job(t, parent.ID)
	if done.Status != job.StatusComplete || done.ComputeMs != 2500 {
		t.Fatalf("split job: %s, compute %d ms; want complete, 2500 ms (two parts and its own)", done.Status, done.ComputeMs)
	}
	entries, _ := h.ledger.Entries(h.ctx, billing.EntriesParams{AccountID: acc.ID, Limit: 100})
	charges := 0
	for _, e := range entries.Entries {
		if e.Kind == billing.KindCharge {
			charges++
			if e.JobID != parent.ID {
				t.Errorf("a charge of %s, not of the split job", e.JobID)
			}
		}
	}
	if charges != 1 {
		t.Errorf("%d charges, want 1", charges)
	}
	for _, e := range h.drain(t) {
		for _, p := range as {
			if strings.Contains(e, p.Lease.JobID) {
				t.Errorf("an event tells of a part: %s", e)
			}
		}
	}
}

// TestSplitPartFailsTwice: a part that fails is queued again once, for another runner (the one
// it failed on takes the next part instead); failing again, it fails the split job naming it,
// and the job's runner is told to stop.
func TestSplitPartFailsTwice(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 3, 3)
	h, parent, a := sp.h, sp.parent, sp.a
	first := ""
	for attempt := 1; attempt <= 2; attempt++ {
		runner := []string{"", "one", "two"}[attempt]
		p := h.claimAs(t, runner, 1)
		if p.Lease.Attempt != attempt || (first != "" && p.Lease.JobID != first) {
			t.Fatalf("%s claimed %s attempt %d, want part 1 (%s) attempt %d", runner, p.Lease.JobID, p.Lease.Attempt, first, attempt)
		}
		first = p.Lease.JobID
		if err := h.runs.Report(h.ctx, p.Lease, workqueue.Result{Failure: exitFailure("boom"), Started: true}); err != nil {
			t.Fatal(err)
		}
		if ack := h.beat(t, a.Lease, 0.1, true); ack.Cancelled != (attempt == 2) {
			t.Fatalf("after failure %d the job's runner was told cancelled=%v", attempt, ack.Cancelled)
		}
		if attempt == 1 {
			if next := h.claimAs(t, "one", 1); next.Lease.JobID == first {
				t.Fatal("the runner a part failed on claimed it again at once")
			}
		}
	}
	failed := h.job(t, parent.ID)
	if failed.Status != job.StatusFailed || !strings.Contains(failed.Error.Message, "part 1 of 3 (0.000 s to 20.000 s of the input) failed: ffmpeg exited with status 1") {
		t.Fatalf("split job: %s %+v", failed.Status, failed.Error)
	}
	for _, p := range h.job(t, parent.ID).Split.Parts[1:] {
		if s := h.job(t, p.JobID).Status; s != job.StatusCancelled {
			t.Errorf("part %s left %s, want cancelled", p.Name, s)
		}
	}
}

// TestSplitChargesThePartsLastAttempts: a part's failed attempt is not charged; the attempt
// that made it is, with the other parts and the job's own compute, once.
func TestSplitChargesThePartsLastAttempts(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 2, 2)
	h, parent, a, plan := sp.h, sp.parent, sp.a, sp.plan
	run := func(runner string, fail bool) {
		t.Helper()
		p := h.claimAs(t, runner, 1)
		h.clock.Advance(time.Second)
		res := workqueue.Result{ComputeMs: 700, Started: true, Failure: exitFailure("boom")}
		if !fail {
			name := plan.Parts[0].Name
			if p.Lease.JobID == h.job(t, parent.ID).Split.Parts[1].JobID {
				name = plan.Parts[1].Name
			}
			files := []job.File{{Path: name, Size: 10}}
			h.storeFiles(t, p.Lease, files)
			res = workqueue.Result{Files: files, ComputeMs: 1000, Started: true}
		}
		if err := h.runs.Report(h.ctx, p.Lease, res); err != nil {
			t.Fatal(err)
		}
	}
	run("one", true)  // part 1 fails on runner one…
	run("one", false) // …which takes part 2 instead,
	run("two", false) // and runner two runs part 1 again.
	if ack := h.beat(t, a.Lease, 0.9, true); ack.Split == nil || !ack.Split.Done() {
		t.Fatalf("after the parts: %+v", ack.Split)
	}
	h.clock.Advance(time.Second)
	h.storeFiles(t, a.Lease, []job.File{{Path: "out.mp4", Size: 30}})
	if err := h.runs.Report(h.ctx, a.Lease, workqueue.Result{Files: []job.File{{Path: "out.mp4", Size: 30}}, ComputeMs: 500, Started: true}); err != nil {
		t.Fatal(err)
	}
	if done := h.job(t, parent.ID); done.Status != job.StatusComplete || done.ComputeMs != 2500 {
		t.Fatalf("split job: %s, compute %d ms; want complete, 2500 ms (the failed attempt's 700 ms not charged)", done.Status, done.ComputeMs)
	}
}

// TestSplitCancelCascades: cancelling a split job cancels its parts and deletes the files of
// those that had completed.
func TestSplitCancelCascades(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 2, 2)
	h, acc, parent, plan := sp.h, sp.acc, sp.parent, sp.plan
	// Part 1 completes before the cancel; part 2 has not started.
	first := h.claimSplit(t, 1)
	done := []job.File{{Path: plan.Parts[0].Name, Size: 10}}
	h.storeFiles(t, first.Lease, done)
	if err := h.runs.Report(h.ctx, first.Lease, workqueue.Result{Files: done, ComputeMs: 100, Started: true}); err != nil {
		t.Fatal(err)
	}
	// Ten minutes of the job's runner waiting is not compute: the job is charged its parts'.
	h.clock.Advance(10 * time.Minute)
	if _, err := h.cancel.Cancel(h.ctx, acc, parent.ID); err != nil {
		t.Fatal(err)
	}
	parts := h.job(t, parent.ID).Split.Parts
	if got, want := h.job(t, parent.ID).ComputeMs, h.job(t, parts[0].JobID).ComputeMs; got != want {
		t.Errorf("the cancelled job's compute is %d ms, want its completed part's %d", got, want)
	}
	if s := h.job(t, parts[1].JobID).Status; s != job.StatusCancelled {
		t.Errorf("part 2 is %s, want cancelled", s)
	}
	if _, err := h.blobs.Open(h.ctx, blob.OutputKey(acc.ID, parts[0].JobID, parts[0].Name)); !errors.Is(err, problem.ErrNotFound) {
		t.Errorf("part 1's file is kept after its job was cancelled: %v", err)
	}
}

// TestSplitPartsPerSlot: a job is cut into a part for each slot of its class, at most the
// operator's cap and one part for each 5 seconds of input.
func TestSplitPartsPerSlot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		slots    int
		duration float64
		asked    int // Assignment.SplitParts
		parts    int
	}{
		{"two slots", 2, 60, 2, 2},
		{"three slots", 3, 60, 3, 3},
		{"the cap of 8", 9, 60, 8, 8},
		{"a part for each 5 s at most", 8, 35, 8, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			h.submitSplit(t, h.open(t, account.PlanPro, 1000), splitParams)
			a := h.claimSplit(t, tt.slots)
			if a.SplitParts != tt.asked {
				t.Fatalf("SplitParts = %d, want %d", a.SplitParts, tt.asked)
			}
			// A keyframe every second: the cuts can fall where the count asks.
			if plan := h.tell(t, a.Lease, sourceEvery(tt.duration, 1)).Split; plan == nil || len(plan.Parts) != tt.parts {
				t.Fatalf("plan = %+v, want %d parts", plan, tt.parts)
			}
		})
	}
}

// TestSplitRunsWhole: each reason a job asking to be split runs whole is told on the job.
func TestSplitRunsWhole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params string
		slots  int
		src    *workqueue.SplitSource
		reason string
	}{
		{"one slot", splitParams, 1, nil, "one free worker slot"},
		{"short input", splitParams, 2, source(10), "the input is 10.0 s long; inputs under 30 s run whole"},
		{"no keyframe to cut", splitParams, 2, &workqueue.SplitSource{Duration: 60, Keyframes: []float64{0}}, "no keyframe to cut at"},
		{"the runner's reason", splitParams, 2, &workqueue.SplitSource{Reason: workqueue.SplitNoVideo}, "no video stream"},
		// A runner's own words are not shown: any size, any link.
		{"the runner's own words", splitParams, 2, &workqueue.SplitSource{Reason: strings.Repeat("see https://phish.example/?token=abc ", 5000)}, workqueue.SplitUnreadable},
		{"no frame rate", splitParams, 2, &workqueue.SplitSource{Duration: 60, Keyframes: []float64{0, 30}, Audio: true}, "the input's frame rate is not known"},
		{"not splittable", `{"command":"ffmpeg -i in.mp4 -vf fps=10 out.mp4","split":"auto"}`, 2, nil, "fps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			acc := h.open(t, account.PlanPro, 1000)
			j := h.submitSplit(t, acc, tt.params)
			a := h.claimSplit(t, tt.slots)
			if tt.src != nil {
				if ack := h.tell(t, a.Lease, tt.src); ack.Split == nil || !strings.Contains(ack.Split.Reason, tt.reason) {
					t.Fatalf("answer %+v, want the reason %q", ack.Split, tt.reason)
				}
			} else if a.SplitParts != 0 {
				t.Fatalf("SplitParts = %d, want 0", a.SplitParts)
			}
			v, err := h.jobs.Get(h.ctx, acc, j.ID)
			if err != nil || v.Split == nil || v.Split.Parts != 0 || !strings.Contains(v.Split.Reason, tt.reason) {
				t.Fatalf("view split = %+v (%v), want no parts and %q", v.Split, err, tt.reason)
			}
		})
	}
}

// TestSplitCountsFreeSlots: a job is cut into a part for each free slot of its runner, its own
// counted, as the store has them when it is claimed: a runner of two slots with one busy runs
// it whole, and so does one that claims it with another job; one of three slots with one busy
// cuts it in two; a split job waiting for its parts takes no slot.
func TestSplitCountsFreeSlots(t *testing.T) {
	t.Parallel()
	plain := `{"command":"ffmpeg -i in.mp4 -c:v libx264 out.mp4"}`
	tests := []struct {
		name      string
		slots     int
		busy      int  // jobs the runner holds before
		alongside bool // a plain job queued after the split job, claimed with it
		waiting   bool // the job it holds is a split job cut into parts
		parts     int  // Assignment.SplitParts of the split job
	}{
		{"one of two slots busy", 2, 1, false, false, 0},
		{"two free slots, two jobs claimed", 2, 0, true, false, 0},
		{"two of three slots free", 3, 1, false, false, 2},
		// Two free slots, and one for the live runner that took the first job's parts.
		{"a split job waiting for its parts holds no slot", 2, 1, false, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			acc := h.open(t, account.PlanPro, 1000)
			claim := func(max int) []workqueue.Assignment {
				t.Helper()
				as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: max, Slots: tt.slots, Worker: "test"})
				if err != nil {
					t.Fatal(err)
				}
				return as
			}
			for range tt.busy {
				if tt.waiting {
					sp := h.submitSplit(t, acc, splitParams)
					a := claim(1)[0]
					if a.Lease.JobID != sp.ID || len(h.tell(t, a.Lease, source(60)).Split.Parts) != 2 {
						t.Fatal("the first split job was not cut")
					}
					// Its parts go to another runner.
					if _, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 2, Slots: 2, Worker: "other"}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				h.submitSplit(t, acc, plain)
				claim(1)
			}
			j := h.submitSplit(t, acc, splitParams)
			if tt.alongside {
				h.submitSplit(t, acc, plain)
			}
			for _, a := range claim(tt.slots - tt.busy) {
				if a.Lease.JobID == j.ID && a.SplitParts != tt.parts {
					t.Errorf("SplitParts = %d, want %d", a.SplitParts, tt.parts)
				}
			}
			if v, _ := h.jobs.Get(h.ctx, acc, j.ID); tt.parts == 0 && (v.Split == nil || !strings.Contains(v.Split.Reason, "one free worker slot")) {
				t.Errorf("view split = %+v, want the reason: one free worker slot", v.Split)
			}
		})
	}
}

// TestSplitOnePartAllowed: an operator's cap of one part runs split jobs whole, saying why, and
// does not ask their runner to read the input's keyframes.
func TestSplitOnePartAllowed(t *testing.T) {
	t.Parallel()
	h := setupOptions(t, servicetest.Options{Split: service.SplitConfig{MaxParts: 1}})
	acc := h.open(t, account.PlanPro, 1000)
	j := h.submitSplit(t, acc, splitParams)
	if a := h.claimSplit(t, 4); a.SplitParts != 0 {
		t.Fatalf("SplitParts = %d, want 0", a.SplitParts)
	}
	if v, err := h.jobs.Get(h.ctx, acc, j.ID); err != nil || v.Split == nil || !strings.Contains(v.Split.Reason, "--split-max-parts") {
		t.Fatalf("view split = %+v (%v), want the operator's cap as the reason", v.Split, err)
	}
}

// TestSplitRefused: Free may not ask, params.split takes auto or off, and a chain cannot split.
func TestSplitRefused(t *testing.T) {
	t.Parallel()
	h := setup(t)
	free, pro := h.open(t, account.PlanFree, 1000), h.open(t, account.PlanPro, 1000)
	in := json.RawMessage(`{"in.mp4":"https://media.example.com/in.mp4"}`)
	tests := []struct {
		a      account.Account
		params string
		code   problem.Code
		field  string
	}{
		{free, splitParams, problem.CodePlanLimit, "params.split"},
		{pro, `{"command":"ffmpeg -i in.mp4 out.mp4","split":"fast"}`, problem.CodeValidation, "params.split"},
		{pro, `{"steps":["ffmpeg -i in.mp4 out.mp4"],"split":"auto"}`, problem.CodeValidation, "params.split"},
	}
	for _, tt := range tests {
		_, err := h.submit.Submit(h.ctx, tt.a, jobtype.Request{Type: "ffmpeg", Inputs: in, Params: json.RawMessage(tt.params)})
		if problem.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: %v, want %s naming %s", tt.params, err, tt.code, tt.field)
		}
	}
	if listed, _, _ := h.jobs.List(h.ctx, pro, job.ListParams{}); len(listed) != 0 {
		t.Errorf("refused submits stored %d jobs", len(listed))
	}
}

// TestSplitPartsReadTheJobsInputs: a job giving its inputs inside params gives them to its
// parts too.
func TestSplitPartsReadTheJobsInputs(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	j, err := h.submit.Submit(h.ctx, acc, jobtype.Request{Type: "ffmpeg", Params: json.RawMessage(
		`{"command":"ffmpeg -i in.mp4 -c:v libx264 out.mp4","split":"auto","inputs":{"in.mp4":"https://media.example.com/in.mp4"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Millisecond)
	a := h.claimSplit(t, 2)
	if plan := h.tell(t, a.Lease, source(60)).Split; plan == nil || len(plan.Parts) != 2 {
		t.Fatalf("plan = %+v", plan)
	}
	part := h.claimSplit(t, 1)
	if part.Lease.JobID == j.ID || !strings.Contains(string(part.Params), `"inputs":{"in.mp4":"https://media.example.com/in.mp4"}`) {
		t.Fatalf("part params %s, want the job's inputs", part.Params)
	}
}

// TestSplitPartsReadTheCommandsURLs: a command that reads its input from a URL (-i https://…)
// splits too: each part's command reads the input under the local name the plan gave it, and
// the part's inputs fetch it there.
func TestSplitPartsReadTheCommandsURLs(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	if _, err := h.submit.Submit(h.ctx, acc, jobtype.Request{Type: "ffmpeg", Params: json.RawMessage(
		`{"command":"ffmpeg -i https://media.example.com/in.mp4 -c:v libx264 out.mp4","split":"auto"}`)}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Millisecond)
	a := h.claimSplit(t, 2)
	if plan := h.tell(t, a.Lease, source(60)).Split; plan == nil || len(plan.Parts) != 2 || plan.Reason != "" {
		t.Fatalf("plan = %+v", plan)
	}
	part := h.claimSplit(t, 1)
	var params struct {
		Command string            `json:"command"`
		Inputs  map[string]string `json:"inputs"`
	}
	if err := json.Unmarshal(part.Params, &params); err != nil {
		t.Fatal(err)
	}
	var name string
	for n, u := range params.Inputs {
		if u == "https://media.example.com/in.mp4" {
			name = n
		}
	}
	if name == "" || !strings.Contains(params.Command, " -i "+name+" ") {
		t.Fatalf("part params %s: want the input's URL under the name its command reads", part.Params)
	}
}

// TestSplitPartsKeepTheirJobsPlace: a split job's parts take its place in its account's queue,
// ahead of the jobs the account submitted after it.
func TestSplitPartsKeepTheirJobsPlace(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	h.submitSplit(t, acc, splitParams)
	a := h.claimSplit(t, 2)
	later := h.submitJob(t, acc, `{}`) // before the parts are made
	if plan := h.tell(t, a.Lease, source(60)).Split; plan == nil || len(plan.Parts) != 2 {
		t.Fatalf("plan = %+v", plan)
	}
	for i := range 2 {
		if p := h.claimSplit(t, 1); p.Lease.JobID == later.ID {
			t.Fatalf("claim %d took the job submitted after the split job, before its parts", i+1)
		}
	}
	if p := h.claimSplit(t, 1); p.Lease.JobID != later.ID {
		t.Fatalf("after the parts, claimed %s, want %s", p.Lease.JobID, later.ID)
	}
}

// jobsSeen records the jobs an observer is told of.
type jobsSeen struct {
	service.NoObserver
	mu   sync.Mutex
	jobs []string
}

func (o *jobsSeen) JobDispatched(j *job.Job, _ time.Duration) { o.add("dispatched " + j.ID) }
func (o *jobsSeen) JobFinished(j *job.Job)                    { o.add("finished " + j.ID) }
func (o *jobsSeen) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.jobs = append(o.jobs, s)
}

// TestSplitPartsAreNotObserved: the metrics hear of a split job, not of its parts, whose wait
// counts from their job's submit.
func TestSplitPartsAreNotObserved(t *testing.T) {
	t.Parallel()
	obs := &jobsSeen{}
	h := setupWith(t, obs)
	acc := h.open(t, account.PlanPro, 1000)
	parent := h.submitSplit(t, acc, splitParams)
	a := h.claimSplit(t, 2)
	h.tell(t, a.Lease, source(60))
	for range 2 {
		p := h.claimSplit(t, 1)
		if err := h.runs.Report(h.ctx, p.Lease, workqueue.Result{Failure: exitFailure("boom"), Started: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.cancel.Cancel(h.ctx, acc, parent.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{"dispatched " + parent.ID, "finished " + parent.ID}
	if d := cmp.Diff(want, obs.jobs); d != "" {
		t.Fatalf("observed (-want +got):\n%s", d)
	}
}

// TestSplitTailForTheAudio: with a part for every slot, the last part, which waits for the
// job's own runner to encode the audio, is shorter by the audio's estimated share (7 s of this
// minute); with fewer parts than slots, or the input's facts unknown, the parts stay even.
func TestSplitTailForTheAudio(t *testing.T) {
	t.Parallel()
	const params = `{"command":"ffmpeg -i in.mp4 -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 128k out.mp4","split":"auto"}`
	facts := func(src *workqueue.SplitSource) *workqueue.SplitSource {
		src.Width, src.Height, src.SampleRate, src.Channels = 1280, 720, 44100, 1
		return src
	}
	tests := []struct {
		name  string
		slots int
		src   *workqueue.SplitSource
		ends  []float64 // of the parts but the last
	}{
		{"a part for each slot", 2, facts(source(60)), []float64{34}},
		{"the facts unknown", 2, source(60), []float64{30}},
		{"more slots than parts", 9, facts(source(60)), []float64{8, 16, 24, 32, 40, 48, 56}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			parent := h.submitSplit(t, h.open(t, account.PlanPro, 1000), params)
			a := h.claimSplit(t, tt.slots)
			if plan := h.tell(t, a.Lease, tt.src).Split; plan == nil || len(plan.Parts) != len(tt.ends)+1 {
				t.Fatalf("plan = %+v, want %d parts", plan, len(tt.ends)+1)
			}
			j, err := h.store.Get(h.ctx, parent.ID)
			if err != nil {
				t.Fatal(err)
			}
			var ends []float64
			for _, p := range j.Split.Parts[:len(j.Split.Parts)-1] {
				ends = append(ends, p.End)
			}
			if diff := cmp.Diff(tt.ends, ends); diff != "" {
				t.Errorf("the parts' ends (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSplitAnswerHeld: the heartbeat of a split job's runner that asks to wait for its parts
// (Beat.SplitWait) is held while no more parts are complete than the runner knows of, and
// answered as the next one reports; it is answered at once when more are complete already,
// with the parts as they stand when the wait ends, and with Cancelled when a part fails for
// good meanwhile.
func TestSplitAnswerHeld(t *testing.T) {
	t.Parallel()
	h := setupOptions(t, servicetest.Options{Split: service.SplitConfig{Wait: time.Hour}})
	acc := h.open(t, account.PlanPro, 1000)
	parent := h.submitSplit(t, acc, splitParams)
	a := h.claimSplit(t, 2)
	if a.SplitWait != time.Hour {
		t.Fatalf("assignment SplitWait = %v, want the control plane's (an hour)", a.SplitWait)
	}
	plan := h.tell(t, a.Lease, source(60)).Split
	parts, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 2, Worker: "other"})
	if err != nil || len(parts) != 2 || plan == nil || len(plan.Parts) != 2 {
		t.Fatalf("plan %+v, parts claimed %d, %v; want 2 and 2", plan, len(parts), err)
	}
	if parts[0].SplitWait != 0 {
		t.Errorf("a part's assignment offers SplitWait %v; parts are not split", parts[0].SplitWait)
	}
	for _, p := range parts {
		h.beat(t, p.Lease, 0.5, true)
	}
	held := func(b workqueue.Beat) <-chan workqueue.Ack {
		t.Helper()
		out := make(chan workqueue.Ack, 1)
		go func() {
			ack, err := h.runs.Heartbeat(h.ctx, b)
			if err != nil {
				t.Errorf("held heartbeat: %v", err)
			}
			out <- ack
		}()
		for h.runs.PartsWatching(parent.ID) == 0 {
			select {
			case ack := <-out:
				t.Fatalf("answered %+v before any part reported", ack.Split)
			case <-time.After(time.Millisecond): // a wait on state: the beat's watch
			}
		}
		return out
	}
	out := held(workqueue.Beat{Lease: a.Lease, Executing: true, SplitWait: time.Hour})
	h.storeFiles(t, parts[0].Lease, []job.File{{Path: plan.Parts[0].Name, Size: 100}})
	if err := h.runs.Report(h.ctx, parts[0].Lease, workqueue.Result{Files: []job.File{{Path: plan.Parts[0].Name, Size: 100}}, ComputeMs: 1000, Started: true}); err != nil {
		t.Fatal(err)
	}
	if ack := answer(t, out); ack.Split == nil || ack.Split.Complete() != 1 || ack.Cancelled {
		t.Fatalf("answer after part 1 reported: %+v, want part 1 complete", ack)
	}
	if ack := h.tellWait(t, a.Lease, time.Hour, 0); ack.Split.Complete() != 1 {
		t.Fatalf("a runner that knows of no complete part: %+v, want part 1 complete at once", ack.Split)
	}
	if ack := h.tellWait(t, a.Lease, 5*time.Millisecond, 1); ack.Split.Complete() != 1 || ack.Split.Parts[1].Progress != 0.5 {
		t.Fatalf("a wait that ran out: %+v, want the parts as they stand", ack.Split)
	}
	if n := h.runs.PartsWatching(parent.ID); n != 0 {
		t.Fatalf("%d heartbeats still watch the parts after every one was answered", n)
	}

	// Part 2 fails, is queued again (no more complete: still held), and fails again.
	out = held(workqueue.Beat{Lease: a.Lease, Executing: true, SplitWait: time.Hour, PartsComplete: 1})
	if err := h.runs.Report(h.ctx, parts[1].Lease, workqueue.Result{Failure: exitFailure("boom"), Started: true}); err != nil {
		t.Fatal(err)
	}
	again := h.claimAs(t, "third", 1)
	if again.Lease.JobID != parts[1].Lease.JobID {
		t.Fatalf("claimed %s, want part 2 again", again.Lease.JobID)
	}
	select {
	case ack := <-out:
		t.Fatalf("answered %+v when part 2 failed once: it is queued again", ack)
	default:
	}
	if err := h.runs.Report(h.ctx, again.Lease, workqueue.Result{Failure: exitFailure("boom"), Started: true}); err != nil {
		t.Fatal(err)
	}
	if ack := answer(t, out); !ack.Cancelled {
		t.Fatalf("answer after part 2 failed twice: %+v, want cancelled", ack)
	}
	if s := h.job(t, parent.ID).Status; s != job.StatusFailed {
		t.Fatalf("split job %s, want failed", s)
	}
}

// tellWait sends the heartbeat of a split job's runner that waits for its parts.
func (h *harness) tellWait(t *testing.T, l workqueue.Lease, wait time.Duration, complete int) workqueue.Ack {
	t.Helper()
	ack, err := h.runs.Heartbeat(h.ctx, workqueue.Beat{Lease: l, Executing: true, SplitWait: wait, PartsComplete: complete})
	if err != nil || ack.Split == nil {
		t.Fatalf("Heartbeat: %+v, %v; want a plan", ack, err)
	}
	return ack
}

// cutFirst is a job store whose first Update first runs cut: a split that commits between a
// use case's read of a job and its update.
type cutFirst struct {
	job.Store
	once sync.Once
	cut  func()
}

func (c *cutFirst) Update(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	c.once.Do(c.cut)
	return c.Store.Update(ctx, id, fn)
}

type urlSigner struct{}

func (urlSigner) SignFile(jobID string, _ job.Pattern, file string, _ time.Time) string {
	return "https://files.example/" + jobID + "/" + file
}

// TestSplitCancelMeetsTheCut: a job cut into parts after a cancel read it and before the cancel
// committed still has its parts cancelled with it, none left to run on their own.
func TestSplitCancelMeetsTheCut(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	parent := h.submitSplit(t, acc, splitParams)
	a := h.claimSplit(t, 2)
	store := &cutFirst{Store: h.store, cut: func() {
		if plan := h.tell(t, a.Lease, source(60)).Split; plan == nil || len(plan.Parts) != 2 {
			t.Errorf("plan = %+v, want 2 parts", plan)
		}
	}}
	cancel, err := service.NewCancel(service.CancelPorts{Jobs: store, Blobs: h.blobs, Pricing: h.Pricing, Clock: h.clock, Stopper: h.hints,
		Viewer: service.Viewer{Signer: urlSigner{}, Clock: h.clock, URLTTL: time.Hour}, Observer: service.NoObserver{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cancel.Cancel(h.ctx, acc, parent.ID); err != nil {
		t.Fatal(err)
	}
	got := h.job(t, parent.ID)
	if got.Status != job.StatusCancelled || !got.Split.Cut() {
		t.Fatalf("job %s, split %+v; want cancelled, cut", got.Status, got.Split)
	}
	for i, p := range got.Split.Parts {
		if s := h.job(t, p.JobID).Status; s != job.StatusCancelled {
			t.Errorf("part %d is %s, want cancelled with its job", i+1, s)
		}
	}
}

// TestSplitPartOfNoJobStops: a part whose job no longer has it (here: the job cancelled by a
// change that did not reach its parts, as a control plane that died midway leaves it) is told
// to stop at its next heartbeat, and is cancelled; a part its job has goes on.
func TestSplitPartOfNoJobStops(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 2, 2)
	h, parent := sp.h, sp.parent
	first, second := h.claimSplit(t, 1), h.claimSplit(t, 1)
	if ack := h.tell(t, first.Lease, nil); ack.Cancelled {
		t.Fatal("a part of a running job was told to stop")
	}
	if _, err := h.store.Update(h.ctx, parent.ID, func(j *job.Job) error { return j.Cancel(h.clock.Now()) }); err != nil {
		t.Fatal(err)
	}
	if ack := h.tell(t, second.Lease, nil); !ack.Cancelled {
		t.Fatalf("ack %+v: a part of a cancelled job was not told to stop", ack)
	}
	if s := h.job(t, second.Lease.JobID).Status; s != job.StatusCancelled {
		t.Errorf("the part is %s, want cancelled", s)
	}
}

// TestSplitPartHandedBackIsStillRetried: a part a draining worker handed back, which then fails,
// is still tried once more: the hand-back does not spend the part's one retry.
func TestSplitPartHandedBackIsStillRetried(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 3, 3)
	h, parent := sp.h, sp.parent
	p := h.claimAs(t, "one", 1)
	part := p.Lease.JobID
	if err := h.runs.Report(h.ctx, p.Lease, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindHandBack, Message: "draining"}}); err != nil {
		t.Fatal(err)
	}
	if s := h.job(t, part).Status; s != job.StatusWaiting {
		t.Fatalf("handed back, the part is %s, want waiting", s)
	}
	h.clock.Advance(job.RetryElsewhereFor)
	for attempt, want := range []job.Status{job.StatusWaiting, job.StatusFailed} {
		p := h.claimAs(t, []string{"two", "three"}[attempt], 1)
		if p.Lease.JobID != part {
			t.Fatalf("claimed %s, want the part %s", p.Lease.JobID, part)
		}
		if err := h.runs.Report(h.ctx, p.Lease, workqueue.Result{Failure: exitFailure("boom"), Started: true}); err != nil {
			t.Fatal(err)
		}
		if s := h.job(t, part).Status; s != want {
			t.Fatalf("after failure %d the part is %s, want %s", attempt+1, s, want)
		}
	}
	if ack := h.beat(t, sp.a.Lease, 0.1, true); !ack.Cancelled {
		t.Error("the job's runner was not told to stop after its part failed twice")
	}
	if s := h.job(t, parent.ID).Status; s != job.StatusFailed {
		t.Errorf("the split job is %s after its part failed twice, want failed", s)
	}
}

// TestSplitPartsRunWhenTheBalanceFalls: a split job funded at its dispatch has its parts run
// though the account's balance falls below the minimum charge meanwhile (another job's charge):
// the parts are the job's compute, not jobs of their own to fund; a new job is refused.
func TestSplitPartsRunWhenTheBalanceFalls(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 2, 2)
	h, acc, parent := sp.h, sp.acc, sp.parent
	bal, err := h.ledger.Balance(h.ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ledger.Append(h.ctx, billing.Entry{Key: "adjust:" + acc.ID, AccountID: acc.ID, Kind: billing.KindAdjustment,
		Amount: -bal, CreatedAt: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.submit.Submit(h.ctx, acc, jobtype.Request{Type: "ffmpeg", Params: json.RawMessage(splitParams)}); err == nil {
		t.Fatal("a new job was taken on a balance of 0")
	}
	for i := range 2 {
		p := h.claimSplit(t, 1)
		if h.job(t, p.Lease.JobID).ParentID != parent.ID {
			t.Fatalf("claim %d: %s, want a part of %s", i+1, p.Lease.JobID, parent.ID)
		}
	}
	for i, p := range h.job(t, parent.ID).Split.Parts {
		if s := h.job(t, p.JobID).Status; s != job.StatusRunning {
			t.Errorf("part %d is %s, want running", i+1, s)
		}
	}
}

// TestSplitForARunnerWithoutTrims: a runner of an earlier build, which does not say it runs a
// plan's trims, gets parts that lead in but end at their cut, and a list of the parts' own files.
func TestSplitForARunnerWithoutTrims(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1000)
	parent := h.submitSplit(t, acc, splitParams)
	a := h.claimSplit(t, 2)
	src := source(60)
	src.Trims = false
	ack := h.tell(t, a.Lease, src)
	if ack.Split == nil || len(ack.Split.Parts) != 2 {
		t.Fatalf("plan %+v, want 2 parts", ack.Split)
	}
	if len(ack.Split.Trims) != 0 || strings.Contains(ack.Split.List, "split_cut_") {
		t.Errorf("trims %q, list %q: want none for a runner that does not run them", ack.Split.Trims, ack.Split.List)
	}
	if cut := h.job(t, parent.ID).Split.Parts; cut[0].Lead != 0 || cut[1].Lead != 0.24 {
		t.Errorf("leads %v and %v, want none after the first part's end and 6 frames before the second's start", cut[0].Lead, cut[1].Lead)
	}
}

// TestSplitHandedBackToARunnerWithoutTrims: a job cut for a runner that trims, handed back and
// taken by a runner of an earlier build, fails saying why, its parts cancelled: that runner's
// join would read files it never made.
func TestSplitHandedBackToARunnerWithoutTrims(t *testing.T) {
	t.Parallel()
	sp := startSplit(t, 2, 2)
	h := sp.h
	if len(sp.plan.Trims) == 0 {
		t.Fatal("the plan has no trims")
	}
	if err := h.runs.Report(h.ctx, sp.a.Lease, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindHandBack, Message: "draining"}}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(job.RetryElsewhereFor + time.Second)
	as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 3, Slots: 3, Worker: "old"})
	if err != nil {
		t.Fatal(err)
	}
	var again *workqueue.Assignment
	for i := range as {
		if as[i].Lease.JobID == sp.parent.ID {
			again = &as[i]
		}
	}
	if again == nil || again.SplitParts != 2 {
		t.Fatalf("claimed %+v, want the split job again with its plan of 2 parts", as)
	}
	src := source(60)
	src.Trims = false
	if ack := h.tell(t, again.Lease, src); !ack.Cancelled {
		t.Fatalf("answer %+v, want the runner told to stop", ack)
	}
	j := h.job(t, sp.parent.ID)
	if j.Status != job.StatusFailed || j.Error == nil || !strings.Contains(j.Error.Message, "a worker of an earlier build") {
		t.Fatalf("job %s %+v, want failed naming the earlier build", j.Status, j.Error)
	}
	for _, p := range j.Split.Parts {
		if s := h.job(t, p.JobID).Status; s != job.StatusCancelled {
			t.Errorf("part %s is %s, want cancelled", p.JobID, s)
		}
	}
}
