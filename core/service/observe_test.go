package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
)

// recorder is an Observer that writes down what it hears.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *recorder) JobSubmitted(j *job.Job) { r.add("submitted %s %s", j.Type, j.Class) }
func (r *recorder) SubmitRejected(err error) {
	layer := "-"
	var v *validator.Error
	if errors.As(err, &v) {
		layer = v.Layer
	}
	r.add("rejected %s", layer)
}
func (r *recorder) JobDispatched(j *job.Job, waited time.Duration) {
	r.add("dispatched %s after %s", j.Type, waited)
}
func (r *recorder) JobFinished(j *job.Job) {
	code := "-"
	if j.Error != nil {
		code = string(j.Error.Code)
	}
	r.add("finished %s %s %s %dms cost %d", j.Type, j.Status, code, j.ComputeMs, j.Cost.Amount)
}

// TestObserver: the use cases tell the observer what they committed, and nothing they refused
// for an internal reason or rolled back.
func TestObserver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg, err := jobtype.NewRegistry(testType{}, ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h := servicetest.New(t, servicetest.Options{Types: reg, Observer: rec})
	acc, _ := h.Open(t, "acc_obs", account.PlanFree, 1000)

	if _, err := h.Submit.Submit(ctx, acc, jobtype.Request{Type: "ffmpeg",
		Params: json.RawMessage(`{"command":"ffmpeg -f lavfi -i testsrc -filter_script x out.mp4"}`)}); err == nil {
		t.Fatal("a disallowed flag was accepted")
	}
	if _, err := h.Submit.Submit(ctx, acc, jobtype.Request{Type: "test", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(3 * time.Second)
	as, err := h.Runs.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: "w"})
	if err != nil || len(as) != 1 {
		t.Fatalf("Claim: %v %v", as, err)
	}
	h.Clock.Advance(1500 * time.Millisecond) // the run takes the time it reports
	if err := h.Runs.Report(ctx, as[0].Lease, workqueue.Result{ComputeMs: 1500, Started: true, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// A second report of the same result changes nothing and is not heard again.
	if err := h.Runs.Report(ctx, as[0].Lease, workqueue.Result{ComputeMs: 1500, Started: true, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	j2, err := h.Submit.Submit(ctx, acc, jobtype.Request{Type: "test", Params: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Cancel.Cancel(ctx, acc, j2.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rejected flags",
		"submitted test cpu",
		"dispatched test after 3s",
		"finished test complete - 1500ms cost 2",
		"submitted test cpu",
		"finished test cancelled - 0ms cost 0",
	}
	if d := cmp.Diff(want, rec.log); d != "" {
		t.Errorf("observer heard (-want +got):\n%s", d)
	}
}
