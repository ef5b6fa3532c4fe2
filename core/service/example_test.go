package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// The life of a job, with every port in memory: a submit through the gate, a runner's claim,
// heartbeat and result, then the charge and the job.completed event through the outbox.
// A real deployment swaps the memory adapters for SQLite or PostgreSQL and a sandboxed runner;
// the use cases are the same.
func Example() {
	ctx := context.Background()
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := servicetest.Compose(servicetest.Options{Types: types})
	if err != nil {
		fmt.Println(err)
		return
	}
	acc, _, err := h.OpenAccount(ctx, "acc_example", account.PlanFree, 100)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The client's side: POST /jobs. A refused request saves nothing.
	_, err = h.Submit.Submit(ctx, acc, jobtype.Request{Type: "ffmpeg",
		Params: json.RawMessage(`{"command":"ffmpeg -f lavfi -i testsrc -filter_script x out.mp4"}`)})
	fmt.Println("refused:", err)
	j, err := h.Submit.Submit(ctx, acc, jobtype.Request{Type: "ffmpeg",
		Params: json.RawMessage(`{"command":"ffmpeg -f lavfi -i testsrc=duration=2 -c:v libx264 out.mp4"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(j.ID, "job_"), j.Status, j.Class)

	// A runner's side: claim, say the FFmpeg step began, report what it wrote.
	as, err := h.Runs.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: "example"})
	if err != nil || len(as) != 1 {
		fmt.Println(as, err)
		return
	}
	if _, err := h.Runs.Heartbeat(ctx, workqueue.Beat{Lease: as[0].Lease, Progress: 0.5, Executing: true}); err != nil {
		fmt.Println(err)
		return
	}
	h.Clock.Advance(1200 * time.Millisecond) // FFmpeg runs; the control plane bills no more than it saw pass
	if _, err := h.Runs.PutOutput(ctx, as[0].Lease, "out.mp4", bytes.NewReader(make([]byte, 48213)), 0); err != nil {
		fmt.Println(err)
		return
	}
	err = h.Runs.Report(ctx, as[0].Lease, workqueue.Result{Started: true, ComputeMs: 1200,
		Files: []job.File{{Path: "out.mp4", Type: job.FileVideo, Size: 48213}}})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The outbox relay appends the charge (once) and hands on the event.
	if _, err := h.Relay.Drain(ctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range h.Events() {
		var ev struct{ Event string }
		_ = json.Unmarshal([]byte(e), &ev)
		fmt.Println("event:", ev.Event)
	}
	v, err := h.Jobs.Get(ctx, acc, j.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	balance, _ := h.Ledger.Balance(ctx, acc.ID)
	fmt.Println(v.Status, v.Output.File.Path, v.Cost.Formatted, "balance:", balance)
	// Output:
	// refused: flag -filter_script is not allowed
	// true waiting cpu
	// event: job.running
	// event: job.completed
	// complete out.mp4 2 credits balance: 98
}
