package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPriorityOverCLIAndMCP: the CLI's run --priority, jobs priority and queue, and the MCP tools
// submit_job with priority, set_job_priority and get_queue, through the binary, on both stores.
// No runner runs, so every job waits.
func TestPriorityOverCLIAndMCP(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{"MEDIAJOBS_RUNNER": "false"}})
		pro, free := createAccount(t, s, "pro"), createAccount(t, s, "free")
		api := newClient(t, s, pro.APIKey)
		cli := func(key string, args ...string) cliResult {
			t.Helper()
			return mediajobs(t, "", []string{"MEDIAJOBS_SERVER=" + s.Base, "MEDIAJOBS_API_KEY=" + key}, args...)
		}
		type entry struct {
			Position int    `json:"position"`
			Class    string `json:"class"`
			Job      struct {
				ID       string `json:"id"`
				Priority string `json:"priority"`
				Status   string `json:"status"`
			} `json:"job"`
		}
		queue := func() []entry {
			t.Helper()
			var q []entry
			api.do(http.MethodGet, "/queue", nil, nil).decode(t, http.StatusOK, &q)
			return q
		}

		// run --priority submits the job with it; Ctrl-C then cancels it.
		run := exec.Command(binary, "run", "--priority", "low", "ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 one.png")
		run.Dir = t.TempDir()
		run.Env = cliEnv("MEDIAJOBS_SERVER="+s.Base, "MEDIAJOBS_API_KEY="+pro.APIKey)
		var runErr bytes.Buffer
		run.Stderr = &runErr
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		var q []entry
		for deadline := time.Now().Add(time.Minute); len(q) == 0; q = queue() {
			if time.Now().After(deadline) {
				_ = run.Process.Kill()
				t.Fatalf("run --priority low submitted nothing in a minute: %s", runErr.String())
			}
			time.Sleep(100 * time.Millisecond) // the poll interval of a wait for the job to be submitted
		}
		low := q[0].Job.ID
		if len(q) != 1 || q[0].Job.Priority != "low" || q[0].Position != 1 || q[0].Class != "cpu" {
			t.Fatalf("queue after run --priority low: %+v", q)
		}
		if err := run.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := run.Wait(); run.ProcessState.ExitCode() != 130 {
			t.Fatalf("run after Ctrl-C: %v, exit %d: %s", err, run.ProcessState.ExitCode(), runErr.String())
		}
		if j := api.job(low); j.Status != "cancelled" {
			t.Fatalf("run's job after Ctrl-C is %s", j.Status)
		}

		job := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 frame.png", nil, nil)
		first, second := api.submit(job), api.submit(job)

		// jobs priority moves the second job ahead of the first.
		r := cli(pro.APIKey, "jobs", "priority", second, "high")
		var v struct {
			ID       string `json:"id"`
			Priority string `json:"priority"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); r.code != 0 || err != nil || v.ID != second || v.Priority != "high" {
			t.Fatalf("jobs priority %s high: exit %d, %v\n%s%s", second, r.code, err, r.stdout, r.stderr)
		}
		r = cli(pro.APIKey, "queue")
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "POSITION  CLASS  JOB") ||
			strings.Join(strings.Fields(lines[1])[:4], " ") != "1 cpu "+second+" high" ||
			strings.Join(strings.Fields(lines[2])[:4], " ") != "2 cpu "+first+" normal" {
			t.Fatalf("queue: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = cli(pro.APIKey, "queue", "--json", "--limit", "1")
		var page struct {
			Data []entry `json:"data"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &page); r.code != 0 || err != nil || len(page.Data) != 1 || page.Data[0].Job.ID != second {
			t.Fatalf("queue --json --limit 1: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		if r = cli(free.APIKey, "queue"); r.code != 0 || r.stdout != "no waiting jobs\n" {
			t.Fatalf("another account's queue: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}

		// The service's refusals, which change nothing.
		for _, tc := range []struct {
			name, key, id, priority, want string
		}{
			{"another account's job", free.APIKey, first, "low", "NOT_FOUND"},
			{"high on Free", free.APIKey, first, "high", "PLAN_LIMIT: priority high needs the Pro plan"},
			{"a job no longer waiting", pro.APIKey, low, "normal", "CONFLICT: job " + low + " is cancelled"},
		} {
			if r := cli(tc.key, "jobs", "priority", tc.id, tc.priority); r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%s: exit %d, stderr %q; want 1 and %q", tc.name, r.code, r.stderr, tc.want)
			}
		}
		api.do(http.MethodGet, "/jobs/"+first, nil, nil).decode(t, http.StatusOK, &v)
		if v.Priority != "normal" {
			t.Errorf("refusals changed %s's priority to %q", first, v.Priority)
		}

		// MCP: a job submitted low goes last; raised to high, it goes second, after the older high one.
		cs, err := mcpConnect(t, s, pro.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		var sub created
		mcpOK(t, cs, "submit_job", map[string]any{"type": "ffmpeg", "priority": "low", "params": job["params"]}, &sub)
		var mq struct {
			Data []entry `json:"data"`
		}
		mcpOK(t, cs, "get_queue", map[string]any{}, &mq)
		if len(mq.Data) != 3 || mq.Data[2].Job.ID != sub.ID || mq.Data[2].Job.Priority != "low" || mq.Data[2].Position != 3 {
			t.Fatalf("get_queue after a low submit: %+v", mq.Data)
		}
		mcpOK(t, cs, "set_job_priority", map[string]any{"id": sub.ID, "priority": "high"}, &v)
		mcpOK(t, cs, "get_queue", map[string]any{"limit": 2}, &mq)
		if v.Priority != "high" || len(mq.Data) != 2 || mq.Data[0].Job.ID != second || mq.Data[1].Job.ID != sub.ID || mq.Data[1].Position != 2 {
			t.Fatalf("set_job_priority answered %+v; get_queue then %+v", v, mq.Data)
		}
		freeCS, err := mcpConnect(t, s, free.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		if te := mcpErr(t, freeCS, "submit_job", map[string]any{"type": "ffmpeg", "priority": "high", "params": job["params"]}); te.Code != "PLAN_LIMIT" {
			t.Errorf("submit_job high on Free: %+v", te)
		}
		if te := mcpErr(t, cs, "set_job_priority", map[string]any{"id": low, "priority": "low"}); te.Code != "CONFLICT" {
			t.Errorf("set_job_priority on a cancelled job: %+v", te)
		}
	})
}
