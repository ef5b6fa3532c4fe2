package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

const destSecret = "s3cr3t-never-shown"

func destParams() destination.Params {
	return destination.Params{Name: "exports", Endpoint: "https://s3.example.com", Bucket: "exports", Region: "us-east-1",
		Prefix: "media", PathStyle: true, AccessKeyID: "AKIAEXAMPLE1234", SecretAccessKey: destSecret}
}

func (h *harness) destination(t *testing.T, a account.Account) destination.Destination {
	t.Helper()
	d, err := h.Destinations.Create(h.ctx, a, destParams())
	if err != nil {
		t.Fatalf("Create destination: %v", err)
	}
	return d
}

// completeWithDestination submits a test job naming dest with path, and runs it to complete
// with two files, relaying its events.
func (h *harness) completeWithDestination(t *testing.T, a account.Account, dest destination.Destination, path string) *job.Job {
	t.Helper()
	j, err := h.submit.Submit(h.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(`{}`),
		Destination: &destination.Request{ID: dest.ID, Path: path}})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	h.run(t, job.ClassCPU, workqueue.Result{ComputeMs: 1000, Files: []job.File{{Path: "out.mp4", Type: job.FileVideo, Size: 7},
		{Path: "thumb.png", Type: job.FileImage, Size: 3}}}, false)
	h.drain(t)
	return j
}

// deliveryEvents are the job.delivered and job.delivery_failed events relayed so far.
func deliveryEvents(events []string) []service.Event {
	var out []service.Event
	for _, e := range events {
		var ev service.Event
		if json.Unmarshal([]byte(e), &ev) == nil && ev.Delivery != nil {
			out = append(out, ev)
		}
	}
	return out
}

func (h *harness) deliverDue(t *testing.T) {
	t.Helper()
	if _, err := h.Destinations.DeliverDue(h.ctx); err != nil {
		t.Fatalf("DeliverDue: %v", err)
	}
	h.drain(t)
}

func (h *harness) charges(t *testing.T, accountID, jobID string) int {
	t.Helper()
	page, err := h.ledger.Entries(h.ctx, billing.EntriesParams{AccountID: accountID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range page.Entries {
		if e.Kind == billing.KindCharge && e.JobID == jobID {
			n++
		}
	}
	return n
}

// TestCreateDestination: a destination is saved once its test write passes, its secret sealed
// (never in the store in clear); a refusal names the field at fault, never quotes the secret,
// and saves nothing.
func TestCreateDestination(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		edit      func(*destination.Params)
		fail      error
		wantField string
		wantMsg   string
	}{
		{name: "saved"},
		{name: "no name", edit: func(p *destination.Params) { p.Name = "" }, wantField: "name"},
		{name: "endpoint not http", edit: func(p *destination.Params) { p.Endpoint = "ftp://s3.example.com" }, wantField: "endpoint"},
		{name: "endpoint with user", edit: func(p *destination.Params) { p.Endpoint = "https://u:p@s3.example.com" }, wantField: "endpoint"},
		{name: "bucket upper case", edit: func(p *destination.Params) { p.Bucket = "Exports" }, wantField: "bucket"},
		{name: "no region", edit: func(p *destination.Params) { p.Region = "" }, wantField: "region", wantMsg: "required"},
		{name: "region with a space", edit: func(p *destination.Params) { p.Region = "us east 1" }, wantField: "region", wantMsg: `"us east 1" is not a region name`},
		{name: "NUL in the name", edit: func(p *destination.Params) { p.Name = "a\x00b" }, wantField: "name"},
		{name: "NUL in the region", edit: func(p *destination.Params) { p.Region = "us\x00" }, wantField: "region"},
		{name: "control character in the prefix", edit: func(p *destination.Params) { p.Prefix = "a\x01b" }, wantField: "prefix"},
		{name: "prefix climbs", edit: func(p *destination.Params) { p.Prefix = "../up" }, wantField: "prefix"},
		{name: "prefix placeholder", edit: func(p *destination.Params) { p.Prefix = "{job_id}" }, wantField: "prefix"},
		{name: "no key", edit: func(p *destination.Params) { p.AccessKeyID = "" }, wantField: "accessKeyId"},
		{name: "no secret", edit: func(p *destination.Params) { p.SecretAccessKey = "" }, wantField: "secretAccessKey"},
		{name: "credentials refused", fail: destination.ErrCredentials, wantField: "accessKeyId", wantMsg: "accessKeyId/secretAccessKey"},
		{name: "no bucket", fail: destination.ErrNoBucket, wantField: "bucket", wantMsg: "test write"},
		{name: "unreachable", fail: errors.New("cannot connect: connection refused"), wantField: "endpoint", wantMsg: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t)
			a := h.open(t, account.PlanFree, 1000)
			p := destParams()
			if tt.edit != nil {
				tt.edit(&p)
			}
			h.Deliverer.Fail(tt.fail)
			d, err := h.Destinations.Create(h.ctx, a, p)
			saved, _ := h.Destinations.List(h.ctx, a)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				if len(saved) != 1 || saved[0].ID != d.ID || saved[0].Secret.KeyID != "test" ||
					strings.Contains(string(saved[0].Secret.Box), destSecret) || d.MaskedKeyID() != "***********1234" {
					t.Fatalf("saved %+v; want the destination, its secret sealed under the test key", saved)
				}
				if got := h.Deliverer.Targets(); len(got) != 1 || got[0].SecretAccessKey != destSecret || got[0].Bucket != "exports" {
					t.Fatalf("test write to %v; want one to the bucket with the secret", got)
				}
				return
			}
			var pr *problem.Problem
			if !errors.As(err, &pr) || pr.Code != problem.CodeValidation || pr.Field != tt.wantField || !strings.Contains(pr.Message, tt.wantMsg) {
				t.Fatalf("Create = %v; want VALIDATION_ERROR on %s saying %q", err, tt.wantField, tt.wantMsg)
			}
			if strings.Contains(pr.Message, destSecret) || len(saved) != 0 {
				t.Fatalf("refusal %q, saved %d; want no secret and nothing saved", pr.Message, len(saved))
			}
		})
	}
}

// TestSubmitNamingADestination: a job's destination must be one of the account's, with a path
// template the parser accepts; a refusal names destination.id or destination.path and saves
// no job.
func TestSubmitNamingADestination(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a, other := h.open(t, account.PlanFree, 1000), h.open(t, account.PlanFree, 1000)
	mine, theirs := h.destination(t, a), h.destination(t, other)
	tests := []struct {
		name      string
		req       destination.Request
		wantField string
	}{
		{"default path", destination.Request{ID: mine.ID}, ""},
		{"template", destination.Request{ID: mine.ID, Path: "{date}/{preset}/{job_id}.{ext}/{name}"}, ""},
		{"no id", destination.Request{Path: "{name}"}, "destination.id"},
		{"unknown", destination.Request{ID: "dst_missing"}, "destination.id"},
		{"another account's", destination.Request{ID: theirs.ID}, "destination.id"},
		{"absolute", destination.Request{ID: mine.ID, Path: "/{name}"}, "destination.path"},
		{"climbs", destination.Request{ID: mine.ID, Path: "../{name}"}, "destination.path"},
		{"no name", destination.Request{ID: mine.ID, Path: "{job_id}.mp4"}, "destination.path"},
		{"unknown placeholder", destination.Request{ID: mine.ID, Path: "{user}/{name}"}, "destination.path"},
		{"unclosed", destination.Request{ID: mine.ID, Path: "{job_id/{name}"}, "destination.path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := h.store.List(h.ctx, job.ListParams{AccountID: a.ID, Limit: 100})
			j, err := h.submit.Submit(h.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(`{}`), Destination: &tt.req})
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Submit: %v", err)
				}
				st, err := h.Destinations.Status(h.ctx, a, j.ID)
				want := cmpOr(tt.req.Path, destination.DefaultPath)
				if err != nil || st == nil || st.Status != "pending" || st.Destination != mine.ID || st.Path != want {
					t.Fatalf("delivery %+v, %v; want pending to %s under %s", st, err, mine.ID, want)
				}
				return
			}
			var pr *problem.Problem
			if !errors.As(err, &pr) || pr.Code != problem.CodeValidation || pr.Field != tt.wantField {
				t.Fatalf("Submit = %v; want VALIDATION_ERROR on %s", err, tt.wantField)
			}
			if after, _ := h.store.List(h.ctx, job.ListParams{AccountID: a.ID, Limit: 100}); len(after.Jobs) != len(before.Jobs) {
				t.Fatalf("a refused job was saved")
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestDeliveryOfACompleteJob: a complete job's files are put under the template's keys
// (prefix first) and job.delivered names each key, size and ETag; GET shows it delivered.
func TestDeliveryOfACompleteJob(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanFree, 1000)
	d := h.destination(t, a)
	j := h.completeWithDestination(t, a, d, "{job_id}/{ext}/{name}")
	if got := h.job(t, j.ID); got.Status != job.StatusComplete {
		t.Fatalf("job %s", got.Status)
	}
	h.deliverDue(t)
	evs := deliveryEvents(h.Events())
	if len(evs) != 1 || evs[0].Event != "job.delivered" || evs[0].JobID != j.ID {
		t.Fatalf("delivery events %+v; want one job.delivered of %s", evs, j.ID)
	}
	files := evs[0].Delivery.Files
	wantKeys := []string{"media/" + j.ID + "/mp4/out.mp4", "media/" + j.ID + "/png/thumb.png"}
	if len(files) != 2 {
		t.Fatalf("files %+v; want 2", files)
	}
	for i, f := range files {
		b, ok := h.Deliverer.Object("exports", f.Key)
		if f.Key != wantKeys[i] || !ok || int64(len(b)) != f.Size || f.ETag == "" || f.Error != "" {
			t.Errorf("file %+v; want key %s, its %d bytes put, with an ETag", f, wantKeys[i], len(b))
		}
	}
	if st, _ := h.Destinations.Status(h.ctx, a, j.ID); st == nil || st.Status != "delivered" || st.Error != nil {
		t.Fatalf("status %+v; want delivered", st)
	}
	// Another pass finds nothing due and sends nothing again.
	h.deliverDue(t)
	if n := len(deliveryEvents(h.Events())); n != 1 {
		t.Fatalf("%d delivery events after a second pass; want 1", n)
	}
}

// TestDeliveryFailureRetriesThenFails: a failing destination is tried after each retry delay;
// the last failure emits job.delivery_failed, the job staying complete and charged once; a
// redelivery once it is mended delivers, in a round of its own.
func TestDeliveryFailureRetriesThenFails(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanFree, 1000)
	d := h.destination(t, a)
	h.Deliverer.Fail(errors.New("S3 answered NoSuchBucket"))
	j := h.completeWithDestination(t, a, d, "")
	cost := h.job(t, j.ID).Cost
	for i, wait := range []time.Duration{0, time.Second, 2 * time.Second} {
		h.clock.Advance(wait)
		h.deliverDue(t)
		st, _ := h.Destinations.Status(h.ctx, a, j.ID)
		wantState := "pending"
		if i == 2 {
			wantState = "failed"
		}
		if st == nil || st.Status != wantState || st.Error == nil || !strings.Contains(*st.Error, "2 of 2 files were not delivered") {
			t.Fatalf("after attempt %d: %+v; want %s with the error", i+1, st, wantState)
		}
		// Not due again before its delay.
		h.deliverDue(t)
	}
	evs := deliveryEvents(h.Events())
	if len(evs) != 1 || evs[0].Event != "job.delivery_failed" || evs[0].Delivery.Status != "failed" {
		t.Fatalf("events %+v; want one job.delivery_failed", evs)
	}
	if got := h.job(t, j.ID); got.Status != job.StatusComplete || got.Cost == nil || *got.Cost != *cost || h.charges(t, a.ID, j.ID) != 1 {
		t.Fatalf("job %s costing %+v with %d charges; want complete, %+v, charged once", got.Status, got.Cost, h.charges(t, a.ID, j.ID), cost)
	}

	h.Deliverer.Fail(nil)
	v, err := h.Destinations.Redeliver(h.ctx, a, j.ID)
	if err != nil || v.Status != "pending" {
		t.Fatalf("Redeliver = %+v, %v; want pending", v, err)
	}
	if _, err := h.Destinations.Redeliver(h.ctx, a, j.ID); !isCode(err, problem.CodeConflict) {
		t.Fatalf("Redeliver while pending = %v; want CONFLICT", err)
	}
	h.deliverDue(t)
	evs = deliveryEvents(h.Events())
	if len(evs) != 2 || evs[1].Event != "job.delivered" || len(evs[1].Delivery.Files) != 2 {
		t.Fatalf("events %+v; want job.delivered after the redelivery", evs)
	}
	if h.charges(t, a.ID, j.ID) != 1 {
		t.Fatal("the redelivery charged the job again")
	}
}

func isCode(err error, c problem.Code) bool {
	var pr *problem.Problem
	return errors.As(err, &pr) && pr.Code == c
}

// TestRedeliverRefusals: only the account's complete jobs that name a destination, with no
// delivery pending, are delivered again.
func TestRedeliverRefusals(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a, other := h.open(t, account.PlanFree, 1000), h.open(t, account.PlanFree, 1000)
	d := h.destination(t, a)
	waiting, err := h.submit.Submit(h.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(`{}`), Destination: &destination.Request{ID: d.ID}})
	if err != nil {
		t.Fatal(err)
	}
	plain := h.submitJob(t, a, `{}`)
	h.claim(t, job.ClassCPU) // waiting is claimed first, leaving plain
	tests := []struct {
		name string
		acct account.Account
		id   string
		want problem.Code
	}{
		{"not complete", a, waiting.ID, problem.CodeConflict},
		{"another account's", other, waiting.ID, problem.CodeNotFound},
		{"missing", a, "job_missing", problem.CodeNotFound},
		{"no destination, not complete", a, plain.ID, problem.CodeConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.Destinations.Redeliver(h.ctx, tt.acct, tt.id); !isCode(err, tt.want) {
				t.Fatalf("Redeliver = %v; want %s", err, tt.want)
			}
		})
	}
}

// TestFailedJobAndItsRetry: a failed job's delivery fails (nothing to deliver) without an
// event; its retry names the same destination and path, and delivers.
func TestFailedJobAndItsRetry(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanFree, 1000)
	d := h.destination(t, a)
	j, err := h.submit.Submit(h.ctx, a, jobtype.Request{Type: "test", Params: json.RawMessage(`{}`),
		Destination: &destination.Request{ID: d.ID, Path: "retried/{name}"}})
	if err != nil {
		t.Fatal(err)
	}
	h.run(t, job.ClassCPU, workqueue.Result{ComputeMs: 100, Failure: exitFailure("boom")}, false)
	h.drain(t)
	if st, _ := h.Destinations.Status(h.ctx, a, j.ID); st == nil || st.Status != "failed" {
		t.Fatalf("failed job's delivery %+v; want failed", st)
	}
	retry, err := h.submit.Retry(h.ctx, a, j.ID)
	if err != nil {
		t.Fatalf("Retry: %v", err)
	}
	st, _ := h.Destinations.Status(h.ctx, a, retry.ID)
	if st == nil || st.Destination != d.ID || st.Path != "retried/{name}" {
		t.Fatalf("retry's delivery %+v; want the failed job's destination and path", st)
	}
}

// TestDeleteDestination: a destination named by a delivery to make is CONFLICT; another
// account's is NOT_FOUND; one whose deliveries are over is deleted.
func TestDeleteDestination(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a, other := h.open(t, account.PlanFree, 1000), h.open(t, account.PlanFree, 1000)
	d := h.destination(t, a)
	j := h.completeWithDestination(t, a, d, "")
	if err := h.Destinations.Delete(h.ctx, other, d.ID); !isCode(err, problem.CodeNotFound) {
		t.Fatalf("Delete of another account's = %v; want NOT_FOUND", err)
	}
	if err := h.Destinations.Delete(h.ctx, a, d.ID); !isCode(err, problem.CodeConflict) {
		t.Fatalf("Delete in use = %v; want CONFLICT", err)
	}
	h.deliverDue(t)
	if st, _ := h.Destinations.Status(h.ctx, a, j.ID); st.Status != "delivered" {
		t.Fatalf("status %s", st.Status)
	}
	if err := h.Destinations.Delete(h.ctx, a, d.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := h.Destinations.Get(h.ctx, a, d.ID); !isCode(err, problem.CodeNotFound) {
		t.Fatalf("Get after Delete = %v; want NOT_FOUND", err)
	}
}

// TestResealUnderANewKey: a rotation (a new key first, the old one kept) re-seals every
// secret under the new key, and the secret still opens.
func TestResealUnderANewKey(t *testing.T) {
	t.Parallel()
	h := setup(t)
	a := h.open(t, account.PlanFree, 1000)
	d := h.destination(t, a)
	next, err := destination.NewKeyring(destination.SecretKey{ID: "next", Secret: []byte(strings.Repeat("n", 32))},
		destination.SecretKey{ID: "test", Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := service.NewDestinations(service.DestinationsPorts{Store: h.DestinationStore, Jobs: h.store, Blobs: h.blobs,
		Deliverer: h.Deliverer, Keys: next, URLs: acceptURLs{}, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	for want := range []int{1, 0} {
		n, err := rotated.Reseal(h.ctx)
		if err != nil || n != 1-want {
			t.Fatalf("Reseal = %d, %v; want %d", n, err, 1-want)
		}
	}
	got, _ := h.DestinationStore.GetDestination(h.ctx, d.ID)
	if secret, err := next.Open(got.Secret, d.ID); got.Secret.KeyID != "next" || err != nil || secret != destSecret {
		t.Fatalf("after Reseal: key %s, open %v", got.Secret.KeyID, err)
	}
}

type acceptURLs struct{}

func (acceptURLs) CheckURL(context.Context, string) error { return nil }
