package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/account/accounttest"
	"github.com/mediajobs/mediajobs/core/asset/assettest"
	"github.com/mediajobs/mediajobs/core/batch/batchtest"
	"github.com/mediajobs/mediajobs/core/billing/billingtest"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/blob/blobtest"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/webhook/webhooktest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// testType accepts params {"gpu":bool,"timeout":int,"asset":string}.
type testType struct{}

func (testType) Name() string { return "test" }
func (testType) Prepare(req jobtype.Request, env jobtype.Env) (jobtype.Spec, error) {
	var p struct {
		GPU     bool   `json:"gpu"`
		Timeout int    `json:"timeout"`
		Asset   string `json:"asset"`
	}
	if len(req.Params) > 0 {
		if err := jobtype.DecodeStrictAt("params.", req.Params, &p); err != nil {
			return jobtype.Spec{}, err
		}
	}
	spec := jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second}
	if p.GPU {
		spec.Class = job.ClassGPU
	}
	if p.Timeout > 0 {
		spec.Timeout = time.Duration(p.Timeout) * time.Second
	}
	if p.Asset != "" {
		spec.Assets = []string{p.Asset}
	}
	return spec, nil
}

// harness is servicetest's, with the names these tests use.
type harness struct {
	*servicetest.Harness
	ctx      context.Context
	clock    *clocktest.Fake
	store    *batchtest.Memory
	accounts *accounttest.Memory
	assets   *assettest.Memory
	ledger   *billingtest.Memory
	hooks    *webhooktest.Memory
	blobs    *blobtest.Memory
	hints    *servicetest.Hints
	tokens   workqueue.Tokens

	auth     *service.Auth
	submit   *service.Submit
	jobs     *service.Jobs
	cancel   *service.Cancel
	runs     *service.Runs
	uploads  *service.Uploads
	batches  *service.Batches
	credits  *service.Credits
	webhooks *service.Webhooks
	fanOut   *service.FanOut
	relay    *service.Relay
}

const lease = time.Minute

func setup(t *testing.T) *harness { t.Helper(); return setupWith(t, nil) }

// setupWith is setup with an observer of the use cases; nil observes nothing.
func setupWith(t *testing.T, obs service.Observer) *harness {
	t.Helper()
	return setupOptions(t, servicetest.Options{Observer: obs})
}

// setupOptions is setup with the harness's options changed by o's non-zero fields (Observer,
// Recheck, Split, Blobs).
func setupOptions(t *testing.T, o servicetest.Options) *harness {
	t.Helper()
	reg, err := jobtype.NewRegistry(testType{}, ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	blobs := blobtest.NewMemory()
	var store blob.Store = blobs
	if o.Blobs != nil {
		store = o.Blobs // the test reads it itself; h.blobs is unused
	}
	s := servicetest.New(t, servicetest.Options{Types: reg, Blobs: store, MaxUpload: 10, Lease: lease, Observer: o.Observer, Recheck: o.Recheck, Waits: o.Waits, WaitRecheck: o.WaitRecheck, Split: o.Split})
	return &harness{Harness: s, ctx: context.Background(), clock: s.Clock, store: s.Store, accounts: s.Accounts, assets: s.Assets,
		ledger: s.Ledger, hooks: s.Hooks, blobs: blobs, hints: s.Hints, tokens: s.Tokens,
		auth: s.Auth, submit: s.Submit, jobs: s.Jobs, cancel: s.Cancel, runs: s.Runs, uploads: s.Uploads, batches: s.Batches,
		credits: s.Credits, webhooks: s.Webhooks, fanOut: s.FanOut, relay: s.Relay}
}

// open makes an account of plan with the given balance.
func (h *harness) open(t *testing.T, plan account.Plan, balance int64) account.Account {
	t.Helper()
	a, _ := h.Open(t, "", plan, balance)
	return a
}

// drain runs the relay and returns every event it has handed on so far.
func (h *harness) drain(t *testing.T) []string { return h.Drain(t) }

func (h *harness) submitJob(t *testing.T, a account.Account, params string) *job.Job {
	t.Helper()
	j, err := h.submit.Submit(h.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(params)})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	// Jobs are claimed oldest first, ties broken by ID: keep submit order the claim order.
	h.clock.Advance(time.Millisecond)
	return j
}

func (h *harness) job(t *testing.T, id string) *job.Job {
	t.Helper()
	j, err := h.store.Get(h.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// claim takes one job of class from the queue.
func (h *harness) claim(t *testing.T, class job.Class) workqueue.Assignment {
	t.Helper()
	as, err := h.runs.Claim(h.ctx, workqueue.ClaimParams{Class: class, Max: 1, Worker: "test"})
	if err != nil || len(as) != 1 {
		t.Fatalf("Claim: %v %v", as, err)
	}
	return as[0]
}

// beat sends one heartbeat.
func (h *harness) beat(t *testing.T, l workqueue.Lease, progress float64, executing bool) workqueue.Ack {
	t.Helper()
	ack, err := h.runs.Heartbeat(h.ctx, workqueue.Beat{Lease: l, Progress: progress, Executing: executing})
	if err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	return ack
}

// run takes the next job of class through a runner: claimed, running, its compute begun, and
// res reported (twice when dup is set, as a re-sent result would be).
func (h *harness) run(t *testing.T, class job.Class, res workqueue.Result, dup bool) workqueue.Assignment {
	t.Helper()
	a := h.claim(t, class)
	h.beat(t, a.Lease, 0, false)
	h.beat(t, a.Lease, 0.5, true)
	// The compute takes the time the result says: the control plane bills no more than it saw.
	h.clock.Advance(time.Duration(res.ComputeMs) * time.Millisecond)
	res.Started = true
	if res.Failure == nil {
		h.storeFiles(t, a.Lease, res.Files)
	}
	for range 1 + btoi(dup) {
		if err := h.runs.Report(h.ctx, a.Lease, res); err != nil {
			t.Fatalf("Report: %v", err)
		}
	}
	return a
}

// storeFiles uploads the files a result will name, each of its size, as a runner does before it
// reports: the control plane holds the report to what was stored.
func (h *harness) storeFiles(t testing.TB, l workqueue.Lease, files []job.File) {
	t.Helper()
	for _, f := range files {
		if _, err := h.runs.PutOutput(h.ctx, l, f.Path, bytes.NewReader(make([]byte, f.Size)), 0); err != nil {
			t.Fatalf("PutOutput %s: %v", f.Path, err)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func exitFailure(detail string) *workqueue.Failure {
	return &workqueue.Failure{Kind: workqueue.KindExit, Message: "ffmpeg exited with status 1", Detail: detail}
}
