package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/httpqueue"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// smallCapsPricing is the built-in pricing with every rate limit lifted and a job capped at 3
// files and 64 KiB, so that a worker can be caught passing both.
func smallCapsPricing(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "core", "billing", "pricing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, pl := range p["plans"].(map[string]any) {
		pl.(map[string]any)["requestsPerMinute"] = 100_000_000
		pl.(map[string]any)["jobFiles"] = 3
		pl.(map[string]any)["jobBytes"] = 64 << 10
	}
	out, _ := json.Marshal(p)
	path := filepath.Join(dir, "pricing-small.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A worker holds a credential, not the ledger: through the real binary, a worker that lies is
// charged what the control plane saw, its files are held to what it stored under the lease and
// to the plan's caps, it reads only its job's inputs, and a revoked worker is cut off with its
// running job ended free.
func TestWorkerIsNotBelieved(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		const adminToken = "admin-token-of-the-worker-trust-test"
		data := dataDir(t)
		srv := startServer(t, serverOpts{Backend: b, Data: data, Env: map[string]string{
			"MEDIAJOBS_RUNNER": "false", "MEDIAJOBS_WORKER_TOKEN": workerToken, "MEDIAJOBS_ADMIN_TOKEN": adminToken,
			"MEDIAJOBS_PRICING": smallCapsPricing(t, filepath.Dir(data))}})
		acc := createAccount(t, srv, "free")
		c := newClient(t, srv, acc.APIKey)
		ctx := context.Background()

		// An operator issues the credential; its token is shown once.
		out, errOut, code := admin(t, srv, "workers", "create", "--name", "box-7", "--class", "cpu")
		var created struct{ ID, Name, Class, Token string }
		if code != 0 || json.Unmarshal([]byte(out), &created) != nil || !strings.HasPrefix(created.Token, "mjw_") || created.Class != "cpu" {
			t.Fatalf("workers create: %d %q %q", code, out, errOut)
		}
		evil, err := httpqueue.New(httpqueue.Config{URL: srv.Base, Token: created.Token})
		if err != nil {
			t.Fatal(err)
		}
		claim := func() workqueue.Assignment {
			t.Helper()
			as, err := evil.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1, Worker: "evil", Version: "v6.6.6", Wait: 10 * time.Second})
			if err != nil || len(as) != 1 {
				t.Fatalf("claim: %v %v", as, err)
			}
			if _, err := evil.Heartbeat(ctx, workqueue.Beat{Lease: as[0].Lease, Executing: true}); err != nil {
				t.Fatal(err)
			}
			return as[0]
		}
		if _, err := evil.Claim(ctx, workqueue.ClaimParams{Class: job.ClassGPU, Max: 1}); err == nil || !strings.Contains(err.Error(), "FORBIDDEN") {
			t.Fatalf("a cpu credential claiming gpu work: %v", err)
		}

		// An absurd compute time is charged what the control plane observed.
		first := c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 out.mp4", nil, nil))
		a := claim()
		// The compute the control plane can see is wall time from the executing heartbeat:
		// let a second of it pass.
		time.Sleep(time.Second) // the compute itself, not a wait for a state
		if _, err := evil.PutOutput(ctx, a.Lease, "out.mp4", strings.NewReader("not really a video"), 0); err != nil {
			t.Fatal(err)
		}
		if err := evil.Report(ctx, a.Lease, workqueue.Result{Files: []job.File{{Path: "out.mp4", Size: 1 << 40}},
			ComputeMs: 1_000_000_000_000, Started: true}); err != nil {
			t.Fatalf("report: %v", err)
		}
		j := c.job(first)
		if j.Status != "complete" || j.Cost == nil || j.Cost.Amount < 1 || j.Cost.Amount > 30 {
			t.Fatalf("charged %+v for an absurd compute time (status %s)", j.Cost, j.Status)
		}

		// Lies about files are refused, and the job stays as it was.
		asset := c.uploadRaw("in.srt", []byte("1\n00:00:00,000 --> 00:00:01,000\nhi\n")).ID
		other := c.uploadRaw("other.srt", []byte("secret of the same account")).ID
		second := c.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 -i in.srt -map 0:v -map 1:s -c:s mov_text out.mp4",
			map[string]any{"in.srt": srv.Base + "/assets/" + asset + "/content"}, nil))
		a = claim()
		if r, err := evil.OpenAsset(ctx, a.Lease, asset); err != nil {
			t.Fatalf("its own input: %v", err)
		} else {
			r.Close()
		}
		if _, err := evil.OpenAsset(ctx, a.Lease, other); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("another upload of the account: %v, want 404", err)
		}
		if _, err := evil.PutOutput(ctx, a.Lease, "out.mp4", strings.NewReader("v"), 0); err != nil {
			t.Fatal(err)
		}
		for name, files := range map[string][]job.File{
			"a file it did not store": {{Path: "out.mp4"}, {Path: "extra.mp4"}},
			"a traversal name":        {{Path: "out.mp4"}, {Path: "../../" + acc.AccountID + "/jobs/x/out.mp4"}},
			"a host path":             {{Path: "/etc/passwd"}},
		} {
			err := evil.Report(ctx, a.Lease, workqueue.Result{Files: files, ComputeMs: 10, Started: true})
			if !errors.Is(err, workqueue.ErrLeaseRefused) {
				t.Errorf("%s: %v, want 409", name, err)
			}
			if j := c.job(second); j.Status != "running" {
				t.Fatalf("%s left the job %s", name, j.Status)
			}
		}
		for i := 1; i < 3; i++ {
			if _, err := evil.PutOutput(ctx, a.Lease, fmt.Sprintf("s%d.ts", i), strings.NewReader("s"), 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := evil.PutOutput(ctx, a.Lease, "s3.ts", strings.NewReader("s"), 0); err == nil || !strings.Contains(err.Error(), "413") {
			t.Fatalf("a fourth file on a 3-file plan: %v, want 413", err)
		}
		if _, err := evil.PutOutput(ctx, a.Lease, "s2.ts", bytes.NewReader(make([]byte, 64<<10)), 0); err == nil || !strings.Contains(err.Error(), "413") {
			t.Fatalf("bytes past the job's 64 KiB: %v, want 413", err)
		}
		if j := c.job(second); j.Status != "running" {
			t.Fatalf("refused uploads left the job %s", j.Status)
		}

		// The fleet as the operator sees it, on the CLI and the admin endpoint.
		out, errOut, code = admin(t, srv, "workers", "list", "--json")
		if code != 0 || !strings.Contains(out, `"name":"box-7"`) || !strings.Contains(out, `"runningJobs":1`) || !strings.Contains(out, `"version":"v6.6.6"`) {
			t.Fatalf("workers list: %d %s %s", code, out, errOut)
		}
		if e := c.do(http.MethodGet, "/internal/admin/workers", nil, nil).errorOf(t, http.StatusUnauthorized); e.Code != "UNAUTHORIZED" {
			t.Fatalf("the fleet with an API key: %+v", e)
		}
		op := c.as(adminToken)
		var fleet []struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			RunningJobs int    `json:"runningJobs"`
		}
		op.do(http.MethodGet, "/internal/admin/workers", nil, nil).decode(t, http.StatusOK, &fleet)
		if len(fleet) != 2 || fleet[0].ID != "wkr_env" || fleet[1].Name != "box-7" || fleet[1].RunningJobs != 1 {
			t.Fatalf("admin fleet: %+v", fleet)
		}

		// Revoked: its running job ends at once, free, and its calls are refused.
		if _, errOut, code := admin(t, srv, "workers", "revoke", "box-7"); code != 0 {
			t.Fatalf("workers revoke: %d %s", code, errOut)
		}
		j = c.job(second)
		if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_LOST" || j.Cost == nil || j.Cost.Amount != 0 {
			t.Fatalf("the revoked worker's job: %s %+v %+v", j.Status, j.Error, j.Cost)
		}
		if _, err := evil.Heartbeat(ctx, workqueue.Beat{Lease: a.Lease}); !errors.Is(err, httpqueue.ErrUnauthorized) {
			t.Fatalf("a revoked worker's heartbeat: %v", err)
		}
		if _, err := evil.Claim(ctx, workqueue.ClaimParams{Class: job.ClassCPU, Max: 1}); !errors.Is(err, httpqueue.ErrUnauthorized) {
			t.Fatalf("a revoked worker's claim: %v", err)
		}
		if !strings.Contains(srv.log.String(), `"worker":"box-7"`) {
			t.Fatalf("refusals are not logged with the worker's name:\n%s", tail(srv.log.String(), 3000))
		}
	})
}
