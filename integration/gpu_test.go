package integration

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/httpqueue"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// TestGPUJobsGoToGPUWorkers: GPU work is routed by class, everywhere, GPU or not. A command
// that asks for NVENC (compute auto) or one submitted with compute gpu is a gpu job: with no
// GPU worker it waits, a CPU worker never takes it, GET /account says no GPU worker is online,
// and it can be cancelled for free. A GPU worker then claims it and is billed at the GPU rate.
//
// The GPU worker here is a fake (this machine has no GPU): the test speaks the worker protocol
// itself through httpqueue, as `mediajobs worker --class gpu` does, and stores an output made
// on the CPU. The real NVENC run is adapters/sandbox's TestRealGPU, where a GPU exists.
func TestGPUJobsGoToGPUWorkers(t *testing.T) {
	t.Parallel()
	srv := fleetServer(t, sqliteBackend, nil)
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	startWorker(t, srv.Base, 1)
	// The CPU worker is online once it has claimed: a CPU job shows it.
	if j := c.complete(ffmpegJob(trivialCommand, nil, nil)); j.Status != "complete" {
		t.Fatalf("cpu job: %s %s", j.Status, errorText(j))
	}

	nvenc := c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -c:v h264_nvenc -preset p1 out.mp4", nil, nil))
	time.Sleep(3 * time.Second) // the CPU worker long-polls all this while
	if j := c.job(nvenc); j.Status != "waiting" {
		t.Fatalf("an NVENC job with no GPU worker is %s, want waiting", j.Status)
	}
	var acct struct {
		Workers struct {
			CPU bool `json:"cpu"`
			GPU bool `json:"gpu"`
		} `json:"workers"`
	}
	c.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, &acct)
	if !acct.Workers.CPU || acct.Workers.GPU {
		t.Fatalf("account workers %+v, want cpu online and no gpu", acct.Workers)
	}
	var cancelled jobView
	c.do(http.MethodPost, "/jobs/"+nvenc+"/cancel", nil, nil).decode(t, http.StatusOK, &cancelled)
	if cancelled.Status != "cancelled" || cancelled.Cost == nil || cancelled.Cost.Amount != 0 {
		t.Fatalf("cancelled waiting GPU job: %s, cost %+v; want cancelled and free", cancelled.Status, cancelled.Cost)
	}

	forced := c.submit(ffmpegJob(trivialCommand, nil, map[string]any{"compute": "gpu"}))
	gpu, err := httpqueue.New(httpqueue.Config{URL: srv.Base, Token: workerToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := gpu.Claim(ctx, workqueue.ClaimParams{Class: job.ClassGPU, Max: 1, Worker: "fake-gpu", Wait: 10 * time.Second})
	if err != nil || len(got) != 1 || got[0].Lease.JobID != forced || got[0].Class != job.ClassGPU {
		t.Fatalf("gpu claim: %+v, %v; want the forced gpu job %s", got, err, forced)
	}
	c.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, &acct)
	if !acct.Workers.GPU {
		t.Errorf("account workers %+v after a gpu claim, want gpu online", acct.Workers)
	}
	dir := t.TempDir()
	if err := ffmpegBare(ctx, dir, trivialArgs...); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "out.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	lease := got[0].Lease
	if _, err := gpu.Heartbeat(ctx, workqueue.Beat{Lease: lease, Executing: true}); err != nil {
		t.Fatal(err)
	}
	// The fake GPU's run takes the 2.5 s it reports: the control plane bills no more compute
	// than it saw pass since the executing heartbeat.
	time.Sleep(2500 * time.Millisecond) // the compute itself, not a wait for a state
	n, err := gpu.PutOutput(ctx, lease, "out.mp4", bytes.NewReader(out), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// 2.5 s of GPU: 3 started seconds at the GPU rate (10 credits a second in the built-in pricing).
	if err := gpu.Report(ctx, lease, workqueue.Result{Started: true, ComputeMs: 2500,
		Files: []job.File{{Path: "out.mp4", Type: job.FileVideo, Size: n}}}); err != nil {
		t.Fatal(err)
	}
	j := c.waitTerminal(forced)
	if j.Status != "complete" || j.Cost == nil || j.Cost.Amount != 30 {
		t.Fatalf("gpu job: %s %s, cost %+v; want complete at 3 GPU seconds × 10 = 30", j.Status, errorText(j), j.Cost)
	}
	if body := c.mustGet(j.Output.File.URL); !bytes.Equal(body, out) {
		t.Errorf("gpu job output: %d bytes, want the %d stored", len(body), len(out))
	}
}
