package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// batchBundle is the harness, with every batch.job_done message the relay handed on.
type batchBundle struct {
	*harness
	mu       sync.Mutex
	jobsDone []job.Message
}

func batchSetup(t *testing.T) *batchBundle {
	t.Helper()
	b := &batchBundle{harness: setup(t)}
	b.relay.Handlers[service.TopicBatchJobDone] = func(ctx context.Context, m job.Message) error {
		b.mu.Lock()
		b.jobsDone = append(b.jobsDone, m)
		b.mu.Unlock()
		return b.batches.HandleJobDone(ctx, m)
	}
	return b
}

// deliveries returns the bodies of the endpoint's deliveries of event.
func (b *batchBundle) deliveries(t *testing.T, endpointID, event string) []string {
	t.Helper()
	page, err := b.hooks.ListDeliveries(b.ctx, webhook.ListParams{EndpointID: endpointID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range page.Deliveries {
		if d.Event == event {
			out = append(out, string(d.Body))
		}
	}
	return out
}

func reqs(params ...string) []jobtype.Request {
	out := make([]jobtype.Request, len(params))
	for i, p := range params {
		out[i] = jobtype.Request{Type: "test", Params: json.RawMessage(p)}
	}
	return out
}

func TestSubmitBatchGate(t *testing.T) {
	t.Parallel()
	many := make([]string, batch.MaxJobs+1)
	for i := range many {
		many[i] = `{}`
	}
	tests := []struct {
		name     string
		plan     account.Plan
		balance  int64
		reqs     []jobtype.Request
		wantCode problem.Code
		wantMsg  string
	}{
		{"three jobs", account.PlanFree, 3, reqs(`{}`, `{}`, `{}`), "", ""},
		{"a hundred jobs", account.PlanPro, 100, reqs(many[:100]...), "", ""},
		{"no jobs", account.PlanFree, 10, nil, problem.CodeValidation, "jobs must hold 1 to 100 jobs; it holds 0"},
		{"too many jobs", account.PlanPro, 1000, reqs(many...), problem.CodeValidation, "jobs must hold 1 to 100 jobs; it holds 101"},
		{"gpu on free names its index", account.PlanFree, 100, reqs(`{}`, `{"gpu":true}`), problem.CodePlanLimit, "jobs[1]: GPU jobs need the Pro plan"},
		{"timeout over the cap runs to the cap", account.PlanFree, 100, reqs(`{}`, `{}`, `{"timeout":301}`), "", ""},
		{"balance under the sum of minimum charges", account.PlanFree, 2, reqs(`{}`, `{}`, `{}`), problem.CodeInsufficientCredits,
			"does not cover the minimum charge of 3 credits for the batch's 3 jobs"},
		{"gpu minimum charges add up", account.PlanPro, 20, reqs(`{"gpu":true}`, `{"gpu":true}`, `{}`), problem.CodeInsufficientCredits, "21 credits"},
		{"plan before balance", account.PlanFree, 0, reqs(`{"gpu":true}`), problem.CodePlanLimit, "jobs[0]"},
		{"balance before validation", account.PlanFree, 1, reqs(`{}`, `{"x":1}`), problem.CodeInsufficientCredits, "2 credits"},
		{"unknown field", account.PlanFree, 100, reqs(`{}`, `{}`, `{"x":1}`), problem.CodeValidation, `field "jobs[2].params.x" is not allowed`},
		{"unknown type", account.PlanFree, 100, []jobtype.Request{{Type: "test"}, {Type: "nope"}}, problem.CodeValidation, `jobs[1].type "nope" is not a job type`},
		{"disallowed flag", account.PlanFree, 100, []jobtype.Request{{Type: "test"}, {Type: "test"}, {Type: "test"},
			{Type: "ffmpeg", Params: json.RawMessage(`{"command":"ffmpeg -filter_script f.txt -i https://example.com/a.mp4 out.mp4"}`)}},
			problem.CodeValidation, "jobs[3].params.command: flag -filter_script is not allowed"},
		{"missing asset", account.PlanFree, 100, reqs(`{}`, `{"asset":"ast_nope"}`), problem.CodeValidation, "jobs[1]: input https://api.test/assets/ast_nope/content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := batchSetup(t)
			a := b.open(t, tc.plan, tc.balance)
			got, jobs, err := b.batches.Submit(b.ctx, a, tc.reqs)
			if tc.wantCode == "" {
				if err != nil {
					t.Fatalf("SubmitBatch: %v", err)
				}
				if got.Total() != len(tc.reqs) || len(jobs) != len(tc.reqs) || got.Status != batch.StatusRunning {
					t.Fatalf("batch of %d jobs: total %d, %d jobs, status %s", len(tc.reqs), got.Total(), len(jobs), got.Status)
				}
				for i, j := range jobs {
					if limit := map[account.Plan]time.Duration{account.PlanFree: 300 * time.Second, account.PlanPro: 900 * time.Second}[tc.plan]; j.Timeout > limit {
						t.Fatalf("jobs[%d] runs for up to %s, past the %s plan's cap of %s", i, j.Timeout, tc.plan, limit)
					}
				}
				for i, j := range jobs {
					stored, err := b.store.Get(b.ctx, j.ID)
					if err != nil || stored.BatchID != got.ID || stored.Status != job.StatusWaiting || got.JobIDs[i] != j.ID {
						t.Fatalf("job %d: %+v %v", i, stored, err)
					}
				}
				return
			}
			if problem.CodeOf(err) != tc.wantCode || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("got %v (%s), want %s containing %q", err, problem.CodeOf(err), tc.wantCode, tc.wantMsg)
			}
			jobsPage, _ := b.store.List(b.ctx, job.ListParams{AccountID: a.ID})
			batches, _ := b.store.ListBatches(b.ctx, batch.ListParams{AccountID: a.ID})
			if len(jobsPage.Jobs) != 0 || len(batches.Batches) != 0 {
				t.Fatalf("a rejected batch stored %d jobs and %d batches", len(jobsPage.Jobs), len(batches.Batches))
			}
		})
	}
}

// finishAll runs the batch's waiting jobs, claimed one at a time, to the results given in
// order: nil completes a job, an error fails it.
func (b *batchBundle) finishAll(t *testing.T, results ...*workqueue.Failure) {
	t.Helper()
	for _, f := range results {
		a := b.claim(t, job.ClassCPU)
		res := workqueue.Result{ComputeMs: 1500, Started: true, Data: json.RawMessage(`{"ok":true}`), Failure: f}
		b.clock.Advance(time.Second)
		if err := b.runs.Report(b.ctx, a.Lease, res); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBatchCountsEveryOutcome(t *testing.T) {
	t.Parallel()
	b := batchSetup(t)
	a := b.open(t, account.PlanPro, 1000)
	ep, err := b.webhooks.CreateWebhookEndpoint(b.ctx, a, service.WebhookEndpointParams{Name: "batches", URL: "https://hooks.example.com/in",
		SubscribedEvents: []string{webhook.EventBatchCompleted}})
	if err != nil {
		t.Fatal(err)
	}
	created := b.clock.Now()
	bat, jobs, err := b.batches.Submit(b.ctx, a, reqs(`{}`, `{}`, `{}`, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	// The last job is cancelled while it waits; the others complete, fail, complete.
	b.clock.Advance(time.Second)
	if _, err := b.cancel.Cancel(b.ctx, a, jobs[3].ID); err != nil {
		t.Fatal(err)
	}
	b.finishAll(t, nil, exitFailure("exit 1"))
	b.drain(t)
	v, err := b.batches.Get(b.ctx, a, bat.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := service.BatchView{ID: bat.ID, Status: batch.StatusRunning, Total: 4, Succeeded: 1, Failed: 1, Cancelled: 1,
		Jobs: bat.JobIDs, CreatedAt: created.UnixMilli()}
	if d := cmp.Diff(want, v); d != "" {
		t.Fatalf("batch with a job left (-want +got):\n%s", d)
	}
	if got := b.deliveries(t, ep.ID, webhook.EventBatchCompleted); len(got) != 0 {
		t.Fatalf("batch.completed sent before the last job finished: %v", got)
	}

	b.finishAll(t, nil)
	done := b.clock.Now()
	b.drain(t)
	v, err = b.batches.Get(b.ctx, a, bat.ID)
	if err != nil {
		t.Fatal(err)
	}
	completedAt := done.UnixMilli()
	want.Status, want.Succeeded, want.CompletedAt = batch.StatusComplete, 2, &completedAt
	if d := cmp.Diff(want, v); d != "" {
		t.Fatalf("finished batch (-want +got):\n%s", d)
	}
	bodies := b.deliveries(t, ep.ID, webhook.EventBatchCompleted)
	if len(bodies) != 1 {
		t.Fatalf("%d batch.completed deliveries, want 1", len(bodies))
	}
	var got service.BatchEvent
	if err := json.Unmarshal([]byte(bodies[0]), &got); err != nil {
		t.Fatal(err)
	}
	wantEvent := service.BatchEvent{Event: "batch.completed", BatchID: bat.ID, Total: 4, Succeeded: 2, Failed: 1, Cancelled: 1,
		Timing: service.BatchTiming{CreatedAt: created.UnixMilli(), CompletedAt: completedAt}}
	if d := cmp.Diff(wantEvent, got); d != "" {
		t.Fatalf("batch.completed body (-want +got):\n%s", d)
	}
	// Every job shows its batch.
	for _, id := range bat.JobIDs {
		jv, err := b.jobs.Get(b.ctx, a, id)
		if err != nil || jv.BatchID != bat.ID {
			t.Fatalf("job %s: batchId %q, %v", id, jv.BatchID, err)
		}
	}
}

func TestBatchCompletedExactlyOnce(t *testing.T) {
	t.Parallel()
	b := batchSetup(t)
	a := b.open(t, account.PlanPro, 1000)
	ep, err := b.webhooks.CreateWebhookEndpoint(b.ctx, a, service.WebhookEndpointParams{Name: "all", URL: "https://hooks.example.com/in",
		SubscribedEvents: webhook.Events})
	if err != nil {
		t.Fatal(err)
	}
	bat, _, err := b.batches.Submit(b.ctx, a, reqs(`{}`, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	b.finishAll(t, nil, nil)
	b.drain(t)
	if len(b.jobsDone) != 2 {
		t.Fatalf("%d batch.job_done messages, want 2", len(b.jobsDone))
	}
	// The relay hands every message on again, as after a crash before its ack; a result
	// reported twice emits nothing new.
	for _, m := range b.jobsDone {
		if err := b.batches.HandleJobDone(b.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	b.drain(t)
	v, err := b.batches.Get(b.ctx, a, bat.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Succeeded != 2 || v.Status != batch.StatusComplete {
		t.Fatalf("after repeated messages: %+v", v)
	}
	if got := b.deliveries(t, ep.ID, webhook.EventBatchCompleted); len(got) != 1 {
		t.Fatalf("%d batch.completed deliveries, want 1", len(got))
	}
	// A batch.completed message handed to FanOut twice still makes one delivery.
	msg := job.Message{Key: service.BatchCompletedKey(bat.ID), Topic: service.TopicEvents,
		Payload: []byte(`{"event":"batch.completed","batchId":"` + bat.ID + `","total":2,"succeeded":2,"failed":0,"cancelled":0,"timing":{"createdAt":0,"completedAt":0}}`)}
	if err := b.fanOut.Handle(b.ctx, msg); err != nil {
		t.Fatal(err)
	}
	if got := b.deliveries(t, ep.ID, webhook.EventBatchCompleted); len(got) != 1 {
		t.Fatalf("%d batch.completed deliveries after a repeated fan-out, want 1", len(got))
	}
}

func TestSweptJobCountsInItsBatch(t *testing.T) {
	t.Parallel()
	b := batchSetup(t)
	a := b.open(t, account.PlanFree, 100)
	bat, _, err := b.batches.Submit(b.ctx, a, reqs(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	as := b.claim(t, job.ClassCPU)
	b.beat(t, as.Lease, 0, true)
	b.clock.Advance(2 * time.Minute)
	if n, err := b.runs.Sweep(b.ctx); err != nil || n != 1 {
		t.Fatalf("Sweep: %d %v", n, err)
	}
	b.drain(t)
	v, err := b.batches.Get(b.ctx, a, bat.ID)
	if err != nil || v.Status != batch.StatusComplete || v.Failed != 1 {
		t.Fatalf("batch of a lost job: %+v %v", v, err)
	}
}

func TestBatchesOfOtherAccountsAreNotFound(t *testing.T) {
	t.Parallel()
	b := batchSetup(t)
	a := b.open(t, account.PlanFree, 100)
	other := b.open(t, account.PlanFree, 100)
	bat, _, err := b.batches.Submit(b.ctx, a, reqs(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who account.Account
		id  string
	}{{other, bat.ID}, {a, "bat_missing"}} {
		if _, err := b.batches.Get(b.ctx, tc.who, tc.id); problem.CodeOf(err) != problem.CodeNotFound {
			t.Errorf("GetBatch %s as %s: %v, want NOT_FOUND", tc.id, tc.who.ID, err)
		}
	}
	views, next, err := b.batches.List(b.ctx, other, batch.ListParams{})
	if err != nil || len(views) != 0 || next != "" {
		t.Fatalf("other account's listing: %v %q %v", views, next, err)
	}
	views, _, err = b.batches.List(b.ctx, a, batch.ListParams{})
	if err != nil || len(views) != 1 || views[0].ID != bat.ID {
		t.Fatalf("owner's listing: %v %v", views, err)
	}
}
