package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/core/workqueue/workqueuetest"
)

// Every use case refuses to be built without a port it needs, naming it: a missing port is a
// wiring mistake, never a feature quietly switched off.
func TestUseCasesNeedTheirPorts(t *testing.T) {
	t.Parallel()
	checks := map[string]error{}
	_, checks["Auth"] = service.NewAuth(service.AuthPorts{})
	_, checks["Submit"] = service.NewSubmit(service.SubmitPorts{})
	_, checks["Jobs"] = service.NewJobs(service.JobsPorts{})
	_, checks["Cancel"] = service.NewCancel(service.CancelPorts{})
	_, checks["Runs"] = service.NewRuns(service.RunsPorts{})
	_, checks["Uploads"] = service.NewUploads(service.UploadsPorts{})
	_, checks["Batches"] = service.NewBatches(service.BatchesPorts{})
	_, checks["Credits"] = service.NewCredits(service.CreditsPorts{})
	_, checks["Webhooks"] = service.NewWebhooks(service.WebhooksPorts{})
	_, checks["FanOut"] = service.NewFanOut(service.FanOutPorts{})
	for name, err := range checks {
		if err == nil || !strings.Contains(err.Error(), "needs") {
			t.Errorf("%s built without ports: %v", name, err)
		}
	}
	if _, err := service.NewSubmit(service.SubmitPorts{}); !strings.Contains(fmt.Sprint(err), "a ledger") {
		t.Errorf("Submit does not name its missing ledger: %v", err)
	}
}

func TestSubmitGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		plan     account.Plan
		req      jobtype.Request
		wantCode problem.Code
		wantMsg  string
	}{
		{"cpu on free", account.PlanFree, jobtype.Request{Type: "test"}, "", ""},
		{"gpu on free", account.PlanFree, jobtype.Request{Type: "test", Params: json.RawMessage(`{"gpu":true}`)}, problem.CodePlanLimit, "Pro plan"},
		{"gpu on pro waits for a gpu runner", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"gpu":true}`)}, "", ""},
		{"timeout over free cap runs to the cap", account.PlanFree, jobtype.Request{Type: "test", Params: json.RawMessage(`{"timeout":301}`)}, "", ""},
		{"timeout within pro cap", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"timeout":900}`)}, "", ""},
		{"unknown type", account.PlanPro, jobtype.Request{Type: "nope"}, problem.CodeValidation, `"nope"`},
		{"bad params", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"x":1}`)}, problem.CodeValidation, `"params.x"`},
		{"missing asset", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"asset":"ast_nope"}`)}, problem.CodeValidation, "ast_nope/content"},
		{"other account's asset", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"asset":"ast_other"}`)}, problem.CodeValidation, "not an uploaded asset of this account"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			a := h.open(t, tc.plan, 1000)
			_ = h.assets.CreateAsset(h.ctx, asset.Asset{ID: "ast_other", AccountID: "acc_other"})
			j, err := h.submit.Submit(h.ctx, a, tc.req)
			if tc.wantCode == "" {
				if err != nil || j.Status != job.StatusWaiting {
					t.Fatalf("Submit: %v %v", j, err)
				}
				if h.hints.Wakes() != 1 {
					t.Fatal("runners were not woken")
				}
				return
			}
			if problem.CodeOf(err) != tc.wantCode || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("got %v (%s), want %s containing %q", err, problem.CodeOf(err), tc.wantCode, tc.wantMsg)
			}
			if page, _ := h.store.List(h.ctx, job.ListParams{AccountID: a.ID}); len(page.Jobs) != 0 {
				t.Fatal("a rejected request stored a job")
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanFree, 10)
	secret, k := account.NewKey(a.ID, "key_1", h.clock.Now())
	_ = h.accounts.CreateKey(h.ctx, k)
	if got, err := h.auth.Authenticate(h.ctx, secret); err != nil || got.ID != a.ID {
		t.Fatalf("good key: %v %v", got, err)
	}
	for _, bad := range []string{"", "mj_wrong", secret + "x", "Bearer " + secret, strings.Repeat("m", 200)} {
		if _, err := h.auth.Authenticate(h.ctx, bad); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	_ = h.accounts.RevokeKey(h.ctx, a.ID, "key_1", h.clock.Now())
	if _, err := h.auth.Authenticate(h.ctx, secret); problem.CodeOf(err) != problem.CodeUnauthorized {
		t.Fatalf("revoked key: %v", err)
	}
}

func TestOtherAccountsJobIsNotFound(t *testing.T) {
	t.Parallel()
	h := setup(t)
	owner, other := h.open(t, account.PlanFree, 10), h.open(t, account.PlanPro, 10)
	j := h.submitJob(t, owner, `{}`)
	for name, call := range map[string]func() error{
		"get":         func() error { _, err := h.jobs.Get(h.ctx, other, j.ID); return err },
		"cancel":      func() error { _, err := h.cancel.Cancel(h.ctx, other, j.ID); return err },
		"retry":       func() error { _, err := h.submit.Retry(h.ctx, other, j.ID); return err },
		"get missing": func() error { _, err := h.jobs.Get(h.ctx, owner, "job_missing"); return err },
	} {
		if err := call(); problem.CodeOf(err) != problem.CodeNotFound {
			t.Errorf("%s: %v, want NOT_FOUND", name, err)
		}
	}
	if v, err := h.jobs.Get(h.ctx, owner, j.ID); err != nil || v.Status != job.StatusWaiting {
		t.Fatalf("owner: %v %v", v, err)
	}
}

func TestRunToCompleteAndEvents(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanFree, 100)
	submitted := h.submitJob(t, acc, `{}`)
	a := h.run(t, job.ClassCPU, workqueue.Result{Files: []job.File{{Path: "out.mp4", Size: 3}}, ComputeMs: 1500}, false)
	if a.Lease.JobID != submitted.ID || a.AccountID != acc.ID || a.AssetURLPrefix != "https://api.test/assets/" || a.Timeout != 120*time.Second ||
		a.LeaseFor != lease || a.Limits.Files != 1000 || a.Limits.Bytes != 4<<30 {
		t.Fatalf("assignment: %+v", a)
	}
	if a.OutputsURL != "https://api.test/internal/runner/jobs/"+submitted.ID+"/outputs/" ||
		a.AssetsURL != "https://api.test/internal/runner/jobs/"+submitted.ID+"/assets/" {
		t.Fatalf("assignment URLs: %q %q", a.OutputsURL, a.AssetsURL)
	}
	j := h.job(t, submitted.ID)
	if j.Status != job.StatusComplete || j.ComputeMs != 1500 || j.Output.Pattern() != job.PatternSingle || j.ExecStartedAt == nil {
		t.Fatalf("job: %+v", j)
	}
	v, _ := h.jobs.Get(h.ctx, acc, j.ID)
	if v.Output == nil || v.Output.File == nil || v.Output.File.URL == "" || v.Output.Check(h.clock.Now()) != nil {
		t.Fatalf("view output: %+v", v.Output)
	}
	h.clock.Advance(2 * time.Hour)
	v2, _ := h.jobs.Get(h.ctx, acc, j.ID)
	if v2.Output.File.URL == v.Output.File.URL || v2.Output.Check(h.clock.Now()) != nil {
		t.Fatal("expired URLs were not minted afresh")
	}
	events := h.drain(t)
	if len(events) != 2 || !strings.Contains(events[0], `"event":"job.running"`) || !strings.Contains(events[1], `"event":"job.completed"`) {
		t.Fatalf("events: %v", events)
	}

	// A second result is harmless: no change, no second event.
	if err := h.runs.Report(h.ctx, a.Lease, workqueue.Result{Failure: exitFailure("late")}); err != nil {
		t.Fatalf("late result: %v", err)
	}
	if again := h.job(t, a.Lease.JobID); again.Status != job.StatusComplete || len(h.drain(t)) != 2 {
		t.Fatal("a duplicate result changed the job")
	}
}

// A report whose job no heartbeat reached (the first was lost, or overtaken by the report)
// moves the job through running all the same, with its job.running event before the end's,
// and bills what the runner computed, no more than the control plane saw since the claim.
func TestReportWithoutHeartbeat(t *testing.T) {
	t.Parallel()
	for _, failed := range []bool{false, true} {
		h := setup(t)
		acc := h.open(t, account.PlanFree, 100)
		submitted := h.submitJob(t, acc, `{}`)
		a := h.claim(t, job.ClassCPU)
		h.clock.Advance(900 * time.Millisecond)
		res := workqueue.Result{Files: []job.File{{Path: "out.mp4", Size: 3}}, ComputeMs: 1500, Started: true}
		want, end := job.StatusComplete, `"event":"job.completed"`
		if failed {
			res, want, end = workqueue.Result{Failure: exitFailure("boom"), ComputeMs: 1500, Started: true}, job.StatusFailed, `"event":"job.failed"`
		} else {
			h.storeFiles(t, a.Lease, res.Files)
		}
		if err := h.runs.Report(h.ctx, a.Lease, res); err != nil {
			t.Fatalf("Report: %v", err)
		}
		j := h.job(t, submitted.ID)
		if j.Status != want || j.StartedAt == nil || j.ExecStartedAt == nil || j.ComputeMs != 900 {
			t.Fatalf("failed %v: job %s, started %v, exec %v, compute %d ms (want 900: what the control plane saw)", failed, j.Status, j.StartedAt, j.ExecStartedAt, j.ComputeMs)
		}
		events := h.drain(t)
		if len(events) != 2 || !strings.Contains(events[0], `"event":"job.running"`) || !strings.Contains(events[1], end) {
			t.Fatalf("failed %v: events %v", failed, events)
		}
	}

	// A hand-back before the run began (a drain) is no run: the job waits again, unannounced.
	h := setup(t)
	acc := h.open(t, account.PlanFree, 100)
	submitted := h.submitJob(t, acc, `{}`)
	a := h.claim(t, job.ClassCPU)
	if err := h.runs.Report(h.ctx, a.Lease, workqueue.Result{Failure: &workqueue.Failure{Kind: workqueue.KindHandBack}}); err != nil {
		t.Fatalf("Report: %v", err)
	}
	if j := h.job(t, submitted.ID); j.Status != job.StatusWaiting {
		t.Fatalf("handed back: %s", j.Status)
	}
	if events := h.drain(t); len(events) != 0 {
		t.Fatalf("handed back before it began: events %v", events)
	}
}

// A lease is the runner's proof: a forged token, another attempt's token, or another job's,
// is refused, and changes nothing.
func TestLeasesAreChecked(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	first, second := h.submitJob(t, acc, `{}`), h.submitJob(t, acc, `{}`)
	a1, a2 := h.claim(t, job.ClassCPU), h.claim(t, job.ClassCPU)
	if a1.Lease.JobID != first.ID || a2.Lease.JobID != second.ID {
		t.Fatal("claim order")
	}
	bad := map[string]workqueue.Lease{
		"forged token":       {JobID: a1.Lease.JobID, Attempt: a1.Lease.Attempt, Token: a1.Lease.Token + "x"},
		"another job's":      {JobID: a1.Lease.JobID, Attempt: a1.Lease.Attempt, Token: a2.Lease.Token},
		"another attempt's":  {JobID: a1.Lease.JobID, Attempt: a1.Lease.Attempt + 1, Token: h.tokens.Issue(a1.Lease.JobID, a1.Lease.Attempt+1)},
		"no token":           {JobID: a1.Lease.JobID, Attempt: a1.Lease.Attempt},
		"a job that is none": {JobID: "job_none", Attempt: 1, Token: h.tokens.Issue("job_none", 1)},
	}
	for name, l := range bad {
		if _, err := h.runs.Heartbeat(h.ctx, workqueue.Beat{Lease: l}); !errors.Is(err, workqueue.ErrLeaseRefused) {
			t.Errorf("heartbeat with %s lease: %v", name, err)
		}
		if err := h.runs.Report(h.ctx, l, workqueue.Result{Data: json.RawMessage(`{}`)}); !errors.Is(err, workqueue.ErrLeaseRefused) {
			t.Errorf("report with %s lease: %v", name, err)
		}
		if _, err := h.runs.PutOutput(h.ctx, l, "x.mp4", strings.NewReader("x"), 0); !errors.Is(err, workqueue.ErrLeaseRefused) {
			t.Errorf("output with %s lease: %v", name, err)
		}
	}
	if j := h.job(t, first.ID); j.Status != job.StatusDispatched {
		t.Fatalf("refused calls changed the job: %s", j.Status)
	}
}

// Outputs go to per-account, per-job keys; assets are read through the lease of a job of the
// same account only.
func TestOutputsAndAssetsThroughTheLease(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc, other := h.open(t, account.PlanPro, 100), h.open(t, account.PlanPro, 100)
	mine, err := h.uploads.Upload(h.ctx, acc, "in.srt", "", strings.NewReader("1"))
	if err != nil {
		t.Fatal(err)
	}
	theirs, _ := h.uploads.Upload(h.ctx, other, "in.srt", "", strings.NewReader("2"))
	unnamed, _ := h.uploads.Upload(h.ctx, acc, "other.srt", "", strings.NewReader("3"))
	inputs, _ := json.Marshal(map[string]string{"in.srt": h.uploads.URL(mine.ID), "theirs.srt": h.uploads.URL(theirs.ID)})
	j, err := h.submit.Submit(h.ctx, acc, jobtype.Request{Type: "test", Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	a := h.claim(t, job.ClassCPU)
	r, err := h.runs.OpenAsset(h.ctx, a.Lease, mine.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := h.runs.OpenAsset(h.ctx, a.Lease, theirs.ID); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("another account's asset, even named: %v", err)
	}
	if _, err := h.runs.OpenAsset(h.ctx, a.Lease, unnamed.ID); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("an upload of the account the job does not name: %v", err)
	}
	if n, err := h.runs.PutOutput(h.ctx, a.Lease, "out.mp4", strings.NewReader("video"), 0); err != nil || n != 5 {
		t.Fatalf("PutOutput: %d %v", n, err)
	}
	if _, err := h.blobs.Open(h.ctx, blob.OutputKey(acc.ID, j.ID, "out.mp4")); err != nil {
		t.Fatalf("output not under its account and job: %v (keys %v)", err, h.blobs.Keys())
	}
	for _, name := range []string{"../x", "a/b", "", ".."} {
		if _, err := h.runs.PutOutput(h.ctx, a.Lease, name, strings.NewReader("x"), 0); problem.CodeOf(err) != problem.CodeConflict {
			t.Errorf("output name %q: %v", name, err)
		}
	}
	if _, err := h.runs.PutOutput(h.ctx, a.Lease, "big.bin", strings.NewReader("0123456789"), 5); problem.CodeOf(err) != problem.CodePayloadTooLarge {
		t.Fatalf("output over its cap: %v", err)
	}
}

func TestFailureAndRetry(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanFree, 100)
	submitted := h.submitJob(t, acc, `{"timeout":60}`)
	h.run(t, job.ClassCPU, workqueue.Result{ComputeMs: 200, Failure: exitFailure("boom")}, false)
	failed := h.job(t, submitted.ID)
	if failed.Status != job.StatusFailed || failed.Error.Code != problem.CodeRunnerError || *failed.Error.Detail != "boom" {
		t.Fatalf("failed job: %+v", failed)
	}
	if !strings.Contains(strings.Join(h.drain(t), "\n"), `"event":"job.failed"`) {
		t.Fatal("no job.failed event")
	}
	retry, err := h.submit.Retry(h.ctx, acc, failed.ID)
	if err != nil || retry.RetryOf != failed.ID || retry.Status != job.StatusWaiting || string(retry.Params) != `{"timeout":60}` {
		t.Fatalf("retry: %+v %v", retry, err)
	}
	if _, err := h.submit.Retry(h.ctx, acc, retry.ID); problem.CodeOf(err) != problem.CodeConflict {
		t.Fatalf("retry of a waiting job: %v", err)
	}
}

// The one rule from run outcome to error code lives in the core: each failure kind a runner
// reports becomes one code, retryable or not.
func TestFailureKindsBecomeCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f         workqueue.Failure
		code      problem.Code
		retryable bool
		msg       string
	}{
		{workqueue.Failure{Kind: workqueue.KindExit, Message: "ffmpeg exited with status 1", Detail: "x"}, problem.CodeRunnerError, false, "status 1"},
		{workqueue.Failure{Kind: workqueue.KindTimeout}, problem.CodeRunnerTimeout, false, "time limit"},
		{workqueue.Failure{Kind: workqueue.KindStalled, Message: "ffmpeg wrote no frame, media time or byte for 60 seconds and was stopped"}, problem.CodeRunnerStalled, true, "60 seconds"},
		{workqueue.Failure{Kind: workqueue.KindStalled}, problem.CodeRunnerStalled, true, "no progress"},
		{workqueue.Failure{Kind: workqueue.KindFetch, Message: "input https://x/a.mp4 could not be fetched: the server answered 404"}, problem.CodeInputFetchFailed, true, "404"},
		{workqueue.Failure{Kind: workqueue.KindInvalid, Message: "flag -x is not allowed"}, problem.CodeValidation, false, "-x"},
		{workqueue.Failure{Kind: workqueue.KindLimit, Limit: "job_bytes", Max: 1000}, problem.CodeLimitExceeded, false, "1000 bytes (job_bytes)"},
		{workqueue.Failure{Kind: workqueue.KindLimit, Limit: "job_files", Max: 1000}, problem.CodeLimitExceeded, false, "1000 files (job_files)"},
		{workqueue.Failure{Kind: workqueue.KindNoOutput}, problem.CodeRunnerError, false, "no output"},
		{workqueue.Failure{Kind: workqueue.KindInternal, Message: "storing the outputs"}, problem.CodeInternal, true, "storing the outputs"},
		{workqueue.Failure{Kind: workqueue.KindHandBack}, problem.CodeRunnerLost, true, "stopped"},
		{workqueue.Failure{Kind: "something new"}, problem.CodeInternal, true, "retried"},
		{workqueue.Failure{Kind: workqueue.KindExit, Message: "ffmpeg exited with status 1", Step: 2, Steps: 3}, problem.CodeRunnerError, false, "step 2 of 3: ffmpeg exited with status 1"},
		{workqueue.Failure{Kind: workqueue.KindLimit, Limit: "job_files", Max: 9, Step: 3, Steps: 3}, problem.CodeLimitExceeded, false, "step 3 of 3: the job wrote more than its limit of 9 files"},
		{workqueue.Failure{Kind: workqueue.KindTimeout, Step: 1, Steps: 1}, problem.CodeRunnerTimeout, false, "the job ran past"},
		{workqueue.Failure{Kind: workqueue.KindInternal, Message: "storing the outputs", Step: 1, Steps: 2}, problem.CodeInternal, true, "the runner failed"},
	}
	for _, tc := range tests {
		e := tc.f.Error()
		if e.Code != tc.code || e.Retryable != tc.retryable || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s: %+v; want %s retryable %v with %q", tc.f.Kind, e, tc.code, tc.retryable, tc.msg)
		}
	}
}

func TestEmptyResultFails(t *testing.T) {
	t.Parallel()
	h := setup(t)
	j := h.submitJob(t, h.open(t, account.PlanFree, 10), `{}`)
	h.run(t, job.ClassCPU, workqueue.Result{ComputeMs: 10}, false)
	if got := h.job(t, j.ID); got.Status != job.StatusFailed || got.Error.Code != problem.CodeRunnerError || !strings.Contains(got.Error.Message, "no output") {
		t.Fatalf("job: %+v", got.Error)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	waiting := h.submitJob(t, acc, `{}`)
	v, err := h.cancel.Cancel(h.ctx, acc, waiting.ID)
	if err != nil || v.Status != job.StatusCancelled || v.Cost == nil || v.Cost.Amount != 0 {
		t.Fatalf("cancel waiting: %+v %v", v, err)
	}
	if as, _ := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 5}); len(as) != 0 {
		t.Fatal("a cancelled job was dispatched")
	}
	if _, err := h.cancel.Cancel(h.ctx, acc, waiting.ID); problem.CodeOf(err) != problem.CodeConflict {
		t.Fatalf("second cancel: %v", err)
	}
	if len(h.hints.Stopped()) != 0 {
		t.Fatal("a job no runner held was stopped")
	}

	running := h.submitJob(t, acc, `{}`)
	a := h.claim(t, job.ClassCPU)
	h.beat(t, a.Lease, 0, true)
	h.clock.Advance(2500 * time.Millisecond)
	v, err = h.cancel.Cancel(h.ctx, acc, running.ID)
	if err != nil || v.Status != job.StatusCancelled || v.Cost == nil || v.Cost.Amount != 3 {
		t.Fatalf("cancel running: %+v %v", v.Cost, err)
	}
	if got := h.hints.Stopped(); len(got) != 1 || got[0] != running.ID {
		t.Fatalf("stops: %v", got)
	}
	// The runner hears it at its next heartbeat, and its report changes nothing.
	if ack := h.beat(t, a.Lease, 0.6, true); !ack.Cancelled {
		t.Fatal("the heartbeat of a cancelled job does not say so")
	}
	if err := h.runs.Report(h.ctx, a.Lease, workqueue.Result{ComputeMs: 2600, Started: true, Failure: &workqueue.Failure{Kind: workqueue.KindCancelled}}); err != nil {
		t.Fatalf("report of the killed run: %v", err)
	}
	if j := h.job(t, running.ID); j.Status != job.StatusCancelled || j.Cost.Amount != 3 || j.ComputeMs != 2500 {
		t.Fatalf("cancelled running job: %s %+v %d", j.Status, j.Cost, j.ComputeMs)
	}
	events := strings.Join(h.drain(t), "\n")
	if strings.Count(events, `"event":"job.cancelled"`) != 2 || !strings.Contains(events, `"amount":3`) {
		t.Fatalf("events: %s", events)
	}
}

func TestSweepActsOnLostRunners(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	lost, neverStarted, alive := h.submitJob(t, acc, `{}`), h.submitJob(t, acc, `{}`), h.submitJob(t, acc, `{}`)
	a1, a2, a3 := h.claim(t, job.ClassCPU), h.claim(t, job.ClassCPU), h.claim(t, job.ClassCPU)
	h.beat(t, a1.Lease, 0, true) // its compute began
	h.beat(t, a2.Lease, 0, false)
	h.clock.Advance(50 * time.Second)
	h.beat(t, a3.Lease, 0.1, false)
	h.clock.Advance(20 * time.Second)
	n, err := h.runs.Sweep(h.ctx)
	if err != nil || n != 2 {
		t.Fatalf("Sweep: %d %v", n, err)
	}
	j := h.job(t, lost.ID)
	if j.Status != job.StatusFailed || j.Error.Code != problem.CodeRunnerLost || !j.Error.Retryable || j.Cost.Amount != 0 {
		t.Fatalf("lost job: %s %+v %+v", j.Status, j.Error, j.Cost)
	}
	requeued := h.job(t, neverStarted.ID)
	if requeued.Status != job.StatusWaiting || requeued.Requeues != 1 {
		t.Fatalf("job whose compute never began: %s, %d requeues", requeued.Status, requeued.Requeues)
	}
	if a := h.job(t, alive.ID); a.Status != job.StatusRunning || a.Progress != 0.1 {
		t.Fatalf("alive job: %s %v", a.Status, a.Progress)
	}
	// The old lease no longer holds; the requeued job is claimed again as a new attempt, by
	// the same runner (the only one) once other runners have had their turn.
	if err := h.runs.Report(h.ctx, a2.Lease, workqueue.Result{Data: json.RawMessage(`{}`)}); !errors.Is(err, workqueue.ErrLeaseRefused) {
		t.Fatalf("report on an expired lease: %v", err)
	}
	h.clock.Advance(job.RetryElsewhereFor)
	again := h.claim(t, job.ClassCPU)
	if again.Lease.JobID != neverStarted.ID || again.Lease.Attempt != a2.Lease.Attempt+1 {
		t.Fatalf("reclaimed %+v", again.Lease)
	}
	// Lost a second time: no more requeues.
	h.beat(t, again.Lease, 0, false)
	h.clock.Advance(2 * lease)
	h.beat(t, a3.Lease, 0.2, false)
	if n, err := h.runs.Sweep(h.ctx); err != nil || n != 1 {
		t.Fatalf("second sweep: %d %v", n, err)
	}
	if j := h.job(t, neverStarted.ID); j.Status != job.StatusFailed || j.Error.Code != problem.CodeRunnerLost {
		t.Fatalf("twice lost: %s %+v", j.Status, j.Error)
	}
	if strings.Count(strings.Join(h.drain(t), "\n"), "RUNNER_LOST") != 2 {
		t.Fatal("job.failed events of lost runners")
	}
}

// TestLongPollTakesTheJobOnceItStopsAvoidingTheRunner: a lone runner whose job was handed back
// long-polls; no other runner claims it, and nothing wakes the poll when the job stops avoiding
// the runner, so the poll claims again every Recheck and takes it then.
func TestLongPollTakesTheJobOnceItStopsAvoidingTheRunner(t *testing.T) {
	t.Parallel()
	h := setupOptions(t, servicetest.Options{Recheck: 5 * time.Millisecond})
	acc := h.open(t, account.PlanPro, 100)
	j := h.submitJob(t, acc, `{}`)
	a := h.claim(t, job.ClassCPU)
	h.beat(t, a.Lease, 0, true)
	if err := h.runs.Report(h.ctx, a.Lease, workqueue.Result{Started: true, Failure: &workqueue.Failure{Kind: workqueue.KindHandBack}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []workqueue.Assignment, 1)
	go func() {
		as, _ := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: "test", Wait: time.Minute})
		got <- as
	}()
	h.clock.Advance(job.RetryElsewhereFor)
	select {
	case as := <-got:
		if len(as) != 1 || as[0].Lease.JobID != j.ID {
			t.Fatalf("the long poll took %+v, want %s", as, j.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long poll did not take the job once it stopped avoiding the runner")
	}
}

// A stopping runner hands its job back: it is queued again once, for another runner first,
// then fails RUNNER_LOST.
func TestHandBack(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	j := h.submitJob(t, acc, `{}`)
	for attempt, want := range []job.Status{job.StatusWaiting, job.StatusFailed} {
		if attempt > 0 {
			if as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: "test"}); err != nil || len(as) != 0 {
				t.Fatalf("the runner that handed the job back claimed %v (%v) at once", as, err)
			}
			h.clock.Advance(job.RetryElsewhereFor)
		}
		a := h.claim(t, job.ClassCPU)
		h.beat(t, a.Lease, 0, true)
		if err := h.runs.Report(h.ctx, a.Lease, workqueue.Result{ComputeMs: 900, Started: true,
			Failure: &workqueue.Failure{Kind: workqueue.KindHandBack}}); err != nil {
			t.Fatal(err)
		}
		got := h.job(t, j.ID)
		if got.Status != want {
			t.Fatalf("hand-back %d: %s, want %s", attempt+1, got.Status, want)
		}
		if want == job.StatusFailed && (got.Error.Code != problem.CodeRunnerLost || got.Cost.Amount != 0) {
			t.Fatalf("second hand-back: %+v %+v", got.Error, got.Cost)
		}
	}
}

// Claim waits for work when asked to, and a submit wakes it.
func TestClaimWaitsForWork(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 100)
	got := make(chan []workqueue.Assignment)
	go func() {
		as, _ := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: time.Minute})
		got <- as
	}()
	j := h.submitJob(t, acc, `{}`)
	if as := <-got; len(as) != 1 || as[0].Lease.JobID != j.ID {
		t.Fatalf("waiting claim got %v", as)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Millisecond)
	defer cancel()
	if as, err := h.runs.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Wait: time.Minute}); err != nil || len(as) != 0 {
		t.Fatalf("claim with nothing waiting: %v %v", as, err)
	}
}

func TestUploadCap(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc, other := h.open(t, account.PlanFree, 10), h.open(t, account.PlanPro, 10)
	as, err := h.uploads.Upload(h.ctx, acc, "a.srt", "text/plain", strings.NewReader("1234"))
	if err != nil || as.Size != 4 || as.AccountID != acc.ID || h.uploads.URL(as.ID) != "https://api.test/assets/"+as.ID+"/content" {
		t.Fatalf("upload: %+v %v", as, err)
	}
	if _, err := h.blobs.Open(h.ctx, blob.AssetKey(acc.ID, as.ID)); err != nil {
		t.Fatalf("asset not under its account: %v", err)
	}
	if _, err := h.uploads.Upload(h.ctx, acc, "big", "", strings.NewReader(strings.Repeat("x", 11))); problem.CodeOf(err) != problem.CodePayloadTooLarge {
		t.Fatalf("oversized upload: %v", err)
	}
	if _, _, err := h.uploads.Open(h.ctx, other, as.ID); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("other account's asset: %v", err)
	}
}

func TestRelayRetriesFailedHandlers(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.submitJob(t, h.open(t, account.PlanFree, 10), `{}`)
	calls := 0
	h.relay.Handlers[service.TopicEvents] = func(context.Context, job.Message) error {
		calls++
		if calls == 1 {
			return fmt.Errorf("receiver down")
		}
		return nil
	}
	a := h.claim(t, job.ClassCPU)
	h.beat(t, a.Lease, 0, false)
	if n, err := h.relay.Drain(h.ctx); n != 0 || err != nil || calls != 1 {
		t.Fatalf("first drain: %d %v calls %d", n, err, calls)
	}
	if n, _ := h.relay.Drain(h.ctx); n != 0 {
		t.Fatal("a failed message came back before its lease")
	}
	h.clock.Advance(time.Minute)
	if n, err := h.relay.Drain(h.ctx); n != 1 || err != nil || calls != 2 {
		t.Fatalf("after the lease: %d %v calls %d", n, err, calls)
	}
}

// countingOutbox is an outbox of messages in memory that counts the relay's calls.
type countingOutbox struct {
	msgs         []job.Message
	claims, acks int
	acked        []string
}

func (o *countingOutbox) ClaimMessages(_ context.Context, p job.ClaimMessagesParams) ([]job.Message, error) {
	o.claims++
	n := min(p.Limit, len(o.msgs))
	out := o.msgs[:n]
	o.msgs = o.msgs[n:]
	return out, nil
}

func (o *countingOutbox) AckMessages(_ context.Context, keys []string) error {
	o.acks++
	o.acked = append(o.acked, keys...)
	return nil
}

func (o *countingOutbox) RetryMessage(context.Context, string, time.Time) error { return nil }

// The relay acknowledges a batch's handled messages in one write, and a batch shorter than
// its limit ends the pass: 70 messages take two claims and two acknowledgements, not 71 and 70.
func TestRelayDrainsInBatches(t *testing.T) {
	t.Parallel()
	ob := &countingOutbox{}
	for i := range 70 {
		topic := "events"
		if i == 3 {
			topic = "unknown" // kept for a later release's handler: not acknowledged
		}
		ob.msgs = append(ob.msgs, job.Message{Key: fmt.Sprint("m", i), Topic: topic})
	}
	failed := "m5"
	var handled []string
	r := &service.Relay{Outbox: ob, Clock: clock.System{}, Handlers: map[string]service.Handler{
		"events": func(_ context.Context, m job.Message) error {
			if m.Key == failed {
				return fmt.Errorf("receiver down")
			}
			handled = append(handled, m.Key)
			return nil
		}}}
	n, err := r.Drain(context.Background())
	if err != nil || n != 68 {
		t.Fatalf("Drain = %d, %v; want 68 handled", n, err)
	}
	if ob.claims != 2 || ob.acks != 2 {
		t.Fatalf("%d claims and %d acknowledgements, want 2 and 2", ob.claims, ob.acks)
	}
	if d := cmp.Diff(handled, ob.acked); d != "" {
		t.Fatalf("acknowledged (-handled +acked):\n%s", d)
	}
}

// The balance is checked again at dispatch: a job whose account can no longer pay fails,
// uncharged, with INSUFFICIENT_CREDITS.
func TestUnfundedJobsFailAtDispatch(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 1)
	j := h.submitJob(t, acc, `{}`)
	if _, err := h.credits.AddCredits(h.ctx, service.Credit{AccountID: acc.ID, Kind: billing.KindAdjustment, Amount: -1}); err != nil {
		t.Fatal(err)
	}
	if as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1}); err != nil || len(as) != 0 {
		t.Fatalf("claim: %v %v", as, err)
	}
	if got := h.job(t, j.ID); got.Status != job.StatusFailed || got.Error.Code != problem.CodeInsufficientCredits || got.Cost.Amount != 0 {
		t.Fatalf("unfunded job: %s %+v", got.Status, got.Error)
	}
}

// Runs is the in-process work queue: the embedded default passes the suite every transport does.
func TestRunsPassesTheWorkQueueSuite(t *testing.T) {
	t.Parallel()
	workqueuetest.TestQueue(t, workqueuetest.Features{}, func(t *testing.T) workqueuetest.Harness {
		types, err := jobtype.NewRegistry(ffmpegjob.Type{})
		if err != nil {
			t.Fatal(err)
		}
		h := servicetest.New(t, servicetest.Options{Types: types})
		return h.QueueHarness(t, h.Runs)
	})
}

// An account that can no longer pay has its whole queue failed at the first dispatch, in one
// bulk change, not one job per claim.
func TestUnfundedQueueFailsInBulk(t *testing.T) {
	t.Parallel()
	h := setup(t)
	acc := h.open(t, account.PlanPro, 10)
	other := h.open(t, account.PlanPro, 100)
	var ids []string
	for range 150 {
		ids = append(ids, h.submitJob(t, acc, `{}`).ID)
	}
	gpu := h.submitJob(t, acc, `{"gpu":true}`) // a gpu job waits for gpu runners: its queue is not this one
	paid := h.submitJob(t, other, `{}`)
	if _, err := h.credits.AddCredits(h.ctx, service.Credit{AccountID: acc.ID, Kind: billing.KindAdjustment, Amount: -10}); err != nil {
		t.Fatal(err)
	}
	as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Lease.JobID != paid.ID {
		t.Fatalf("claim took %v; want only the funded account's job", as)
	}
	for _, id := range ids {
		if j := h.job(t, id); j.Status != job.StatusFailed || j.Error.Code != problem.CodeInsufficientCredits || j.Cost.Amount != 0 {
			t.Fatalf("job %s: %s %+v", id, j.Status, j.Error)
		}
	}
	if j := h.job(t, gpu.ID); j.Status != job.StatusWaiting {
		t.Fatalf("the gpu job is %s", j.Status)
	}
	if n := strings.Count(strings.Join(h.drain(t), "\n"), "INSUFFICIENT_CREDITS"); n != 150 {
		t.Fatalf("%d job.failed events, want 150", n)
	}
}

// Capacity says whether a class has a runner: one that claimed within a minute.
func TestCapacity(t *testing.T) {
	t.Parallel()
	h := setup(t)
	caps, err := h.runs.Capacity(h.ctx)
	if err != nil || caps[job.ClassCPU] || caps[job.ClassGPU] {
		t.Fatalf("before any claim: %v %v", caps, err)
	}
	if _, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: job.ClassGPU, Max: 1, Worker: "gpu-1"}); err != nil {
		t.Fatal(err)
	}
	if caps, _ := h.runs.Capacity(h.ctx); caps[job.ClassCPU] || !caps[job.ClassGPU] {
		t.Fatalf("after a gpu claim: %v", caps)
	}
	h.clock.Advance(2 * time.Minute)
	if caps, _ := h.runs.Capacity(h.ctx); caps[job.ClassGPU] {
		t.Fatalf("a gpu runner silent for two minutes still counts: %v", caps)
	}
}
