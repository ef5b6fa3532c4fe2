package contracts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// TestEventBodiesMatchTheDocument runs jobs to every event the service sends — running,
// completed, failed, cancelled, a batch's completion, a delivery to a destination and its
// failure — through the real use cases, and checks each delivery body against its schema in
// openapi.yaml (components and `webhooks`).
func TestEventBodiesMatchTheDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := contracts.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	h := servicetest.New(t, servicetest.Options{Types: types, DeliveryRetryDelays: []time.Duration{}})
	acct, _ := h.Open(t, "", account.PlanPro, 1000)
	if _, err := h.Webhooks.CreateWebhookEndpoint(ctx, acct, service.WebhookEndpointParams{Name: "all", URL: "https://hooks.example/in",
		SubscribedEvents: webhook.Events}); err != nil {
		t.Fatal(err)
	}
	req := jobtype.Request{Type: "ffmpeg", Params: json.RawMessage(`{"command":"ffmpeg -f lavfi -i testsrc=duration=1 out.mp4"}`)}
	claim := func() workqueue.Assignment {
		as, err := h.Runs.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1})
		if err != nil || len(as) != 1 {
			t.Fatalf("claim: %v %v", as, err)
		}
		if _, err := h.Runs.Heartbeat(ctx, workqueue.Beat{Lease: as[0].Lease, Executing: true}); err != nil {
			t.Fatal(err)
		}
		return as[0]
	}
	// complete, then failed, then cancelled while running, then a batch of one that completes.
	for _, res := range []workqueue.Result{
		{Files: []job.File{{Path: "out.mp4", Type: job.FileVideo, Size: 10, Meta: &job.Meta{Format: "mp4", Width: 64, Height: 48, DurationMs: 1000}}}, ComputeMs: 900},
		{ComputeMs: 300, Failure: &workqueue.Failure{Kind: workqueue.KindExit, Message: "ffmpeg exited with status 1", Detail: "boom"}},
	} {
		if _, err := h.Submit.Submit(ctx, acct, req); err != nil {
			t.Fatal(err)
		}
		a := claim()
		res.Started = true
		for _, f := range res.Files { // stored first: the report is held to what was stored
			if _, err := h.Runs.PutOutput(ctx, a.Lease, f.Path, bytes.NewReader(make([]byte, f.Size)), 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Runs.Report(ctx, a.Lease, res); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, _ := h.Submit.Submit(ctx, acct, req)
	claim()
	h.Clock.Advance(1500 * time.Millisecond)
	if _, err := h.Cancel.Cancel(ctx, acct, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Batches.Submit(ctx, acct, []jobtype.Request{req}); err != nil {
		t.Fatal(err)
	}
	a := claim()
	if err := h.Runs.Report(ctx, a.Lease, workqueue.Result{Data: json.RawMessage(`{"ok":true}`), ComputeMs: 10, Started: true}); err != nil {
		t.Fatal(err)
	}
	// Two jobs that name a destination: one delivered, one whose delivery fails (no retries).
	dest, err := h.Destinations.Create(ctx, acct, destination.Params{Name: "own", Endpoint: "https://s3.example.com", Bucket: "exports",
		Region: "us-east-1", AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	for _, fail := range []error{nil, errors.New("S3 answered NoSuchBucket")} {
		h.Deliverer.Fail(fail)
		delivered := req
		delivered.Destination = &destination.Request{ID: dest.ID, Path: "{job_id}/{name}"}
		if _, err := h.Submit.Submit(ctx, acct, delivered); err != nil {
			t.Fatal(err)
		}
		a := claim()
		if _, err := h.Runs.PutOutput(ctx, a.Lease, "out.mp4", bytes.NewReader(make([]byte, 10)), 0); err != nil {
			t.Fatal(err)
		}
		if err := h.Runs.Report(ctx, a.Lease, workqueue.Result{Files: []job.File{{Path: "out.mp4", Type: job.FileVideo, Size: 10}},
			ComputeMs: 10, Started: true}); err != nil {
			t.Fatal(err)
		}
		h.Drain(t)
		if _, err := h.Destinations.DeliverDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		h.Drain(t)
	}

	schemas := map[string]string{webhook.EventJobRunning: "JobRunningEvent", webhook.EventJobCompleted: "JobCompletedEvent",
		webhook.EventJobFailed: "JobFailedEvent", webhook.EventJobCancelled: "JobCancelledEvent",
		webhook.EventBatchCompleted: "BatchCompletedEvent", webhook.EventJobDelivered: "JobDeliveredEvent",
		webhook.EventJobDeliveryFailed: "JobDeliveryFailedEvent"}
	endpoints, _ := h.Hooks.ListEndpoints(ctx, acct.ID)
	page, err := h.Hooks.ListDeliveries(ctx, webhook.ListParams{EndpointID: endpoints[0].ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, d := range page.Deliveries {
		name := schemas[d.Event]
		if name == "" {
			t.Fatalf("delivery of an event the document does not name: %s", d.Event)
		}
		var body any
		if err := json.Unmarshal(d.Body, &body); err != nil {
			t.Fatal(err)
		}
		if err := doc.Components.Schemas[name].Value.VisitJSON(body); err != nil {
			t.Errorf("%s body does not match %s: %v\n%s", d.Event, name, err, d.Body)
		}
		if hook := doc.Webhooks[d.Event]; hook == nil || hook.Post == nil {
			t.Errorf("the document's webhooks section lacks %s", d.Event)
		}
		seen[d.Event]++
	}
	for ev := range schemas {
		if seen[ev] == 0 {
			t.Errorf("no %s delivery was made", ev)
		}
	}
}
