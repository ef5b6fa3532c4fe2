package integration

import (
	"net/http"
	"strings"
	"testing"
)

// TestPriorityAndFairShare: with one account holding 500 waiting normal jobs, another account's
// single job is claimed within 3 jobs on one worker slot; a high job overtakes the waiting normal
// ones; POST /jobs/{id}/priority and GET /queue work, with their refusals. The test is the one
// worker slot: it claims through the worker API one job at a time, and each claimed job is
// cancelled by its owner before the next claim, as a finished job frees its slot.
func TestPriorityAndFairShare(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b,
			Env: map[string]string{"MEDIAJOBS_RUNNER": "false", "MEDIAJOBS_WORKER_TOKEN": workerToken}})
		accA, accB := createAccount(t, srv, "free"), createAccount(t, srv, "pro")
		a := newClient(t, srv, accA.APIKey)
		bc := a.as(accB.APIKey)
		slot := a.as(workerToken)
		job := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 frame.png", nil, nil)

		var aJobs []string
		hundred := make([]any, 100)
		for i := range hundred {
			hundred[i] = job
		}
		for range 5 {
			var cr struct {
				Jobs []struct {
					ID string `json:"id"`
				} `json:"jobs"`
			}
			a.do(http.MethodPost, "/batches", map[string]any{"jobs": hundred, "priority": "normal"}, nil).decode(t, http.StatusCreated, &cr)
			for _, j := range cr.Jobs {
				aJobs = append(aJobs, j.ID)
			}
		}
		owner := map[string]*client{}
		for _, id := range aJobs {
			owner[id] = a
		}
		// claim takes the next job on the one slot and frees the slot again.
		claim := func() string {
			t.Helper()
			var work []struct {
				Lease struct {
					JobID string `json:"jobId"`
				} `json:"lease"`
			}
			slot.do(http.MethodPost, "/internal/runner/claim", map[string]any{"class": "cpu", "max": 1, "worker": "priority-test"}, nil).decode(t, http.StatusOK, &work)
			if len(work) != 1 {
				t.Fatalf("claim answered %d jobs, want 1", len(work))
			}
			id := work[0].Lease.JobID
			c, ok := owner[id]
			if !ok {
				t.Fatalf("claimed %s, a job the test did not submit", id)
			}
			c.do(http.MethodPost, "/jobs/"+id+"/cancel", nil, nil).decode(t, http.StatusOK, nil)
			return id
		}
		submit := func(c *client, priority string) string {
			t.Helper()
			body := map[string]any{}
			for k, v := range job {
				body[k] = v
			}
			body["priority"] = priority
			var cr struct {
				ID string `json:"id"`
			}
			c.do(http.MethodPost, "/jobs", body, nil).decode(t, http.StatusCreated, &cr)
			owner[cr.ID] = c
			return cr.ID
		}
		type entry struct {
			ID       string
			Priority string
			Class    string
			Position int
		}
		queue := func(c *client, query string) []entry {
			t.Helper()
			var q []struct {
				Position int    `json:"position"`
				Class    string `json:"class"`
				Job      struct {
					ID       string `json:"id"`
					Priority string `json:"priority"`
					Status   string `json:"status"`
				} `json:"job"`
			}
			c.do(http.MethodGet, "/queue"+query, nil, nil).decode(t, http.StatusOK, &q)
			out := make([]entry, len(q))
			for i, e := range q {
				if e.Job.Status != "waiting" {
					t.Fatalf("queue shows a %s job", e.Job.Status)
				}
				out[i] = entry{e.Job.ID, e.Job.Priority, e.Class, e.Position}
			}
			return out
		}

		// A batch's jobs are as old as one another: their IDs order them.
		firstA := claim()
		if owner[firstA] != a {
			t.Fatalf("first claim took %s, not one of account A's", firstA)
		}
		single := submit(bc, "normal")
		if q := queue(bc, ""); len(q) != 1 || q[0].ID != single || q[0].Position != 1 || q[0].Priority != "normal" || q[0].Class != "cpu" {
			t.Fatalf("B's queue: %+v, want its one job at position 1 (A was served last)", q)
		}
		var seen []string
		for len(seen) < 3 {
			id := claim()
			seen = append(seen, id)
			if id == single {
				break
			}
		}
		if seen[len(seen)-1] != single {
			t.Fatalf("B's job %s was not among the 3 claims after it was submitted: %v", single, seen)
		}

		// A high job overtakes every waiting normal one.
		high := submit(bc, "high")
		if got := claim(); got != high {
			t.Fatalf("claim after a high job took %s, want the high job %s", got, high)
		}

		// A's queue: its waiting jobs in claim order, positions counting every account's.
		q := queue(a, "?limit=3")
		if len(q) != 3 || q[0].Position != 1 || q[1].Position != 2 || q[2].Position != 3 {
			t.Fatalf("A's queue: %+v, want its first 3 jobs at positions 1 to 3", q)
		}
		other := submit(bc, "normal")
		if q := queue(bc, ""); len(q) != 1 || q[0].ID != other || q[0].Position != 2 {
			t.Fatalf("B's queue: %+v, want its job second, after A's next (B was served last)", q)
		}
		// Moving A's next job to low puts it behind every normal job.
		next := queue(a, "?limit=1")[0].ID
		var v struct {
			ID       string `json:"id"`
			Priority string `json:"priority"`
		}
		a.do(http.MethodPost, "/jobs/"+next+"/priority", map[string]any{"priority": "low"}, nil).decode(t, http.StatusOK, &v)
		if v.ID != next || v.Priority != "low" {
			t.Fatalf("POST /jobs/%s/priority answered %+v", next, v)
		}
		// 499 of A's jobs and B's one wait; the low one is last of all.
		if q := queue(a, "?limit=1000"); len(q) != len(aJobs)-1 || q[len(q)-1].ID != next || q[len(q)-1].Position != len(aJobs) {
			t.Fatalf("A's queue holds %d jobs, the last %+v; want %d, the low one last at %d", len(q), q[len(q)-1], len(aJobs)-1, len(aJobs))
		}
		// A's next normal job, then B's: the accounts take turns.
		if q := queue(bc, ""); len(q) != 1 || q[0].Position != 2 {
			t.Fatalf("B's queue after A's next went low: %+v, want position 2", q)
		}
		if got := claim(); owner[got] != a || got == next {
			t.Fatalf("claim took %s, want one of A's normal jobs", got)
		}
		if got := claim(); got != other {
			t.Fatalf("claim took %s, want B's %s", got, other)
		}

		// Refusals, which change nothing.
		for _, tc := range []struct {
			name   string
			c      *client
			id     string
			body   string
			status int
			code   string
			says   string
		}{
			{"unknown value", a, next, `{"priority":"urgent"}`, 400, "VALIDATION_ERROR", `priority must be one of low, normal, high; got "urgent"`},
			{"missing", a, next, `{}`, 400, "VALIDATION_ERROR", "priority is required"},
			{"not a string", a, next, `{"priority":2}`, 400, "VALIDATION_ERROR", "priority must be a string"},
			{"high on Free", a, next, `{"priority":"high"}`, 403, "PLAN_LIMIT", "priority high needs the Pro plan"},
			{"another account's job", bc, next, `{"priority":"high"}`, 404, "NOT_FOUND", next},
			{"no such job", a, "job_nope", `{"priority":"low"}`, 404, "NOT_FOUND", "job_nope"},
			{"not waiting", a, firstA, `{"priority":"low"}`, 409, "CONFLICT", "is cancelled; only a waiting job's priority can change"},
		} {
			e := tc.c.do(http.MethodPost, "/jobs/"+tc.id+"/priority", []byte(tc.body), http.Header{"Content-Type": {"application/json"}}).errorOf(t, tc.status)
			if e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
				t.Errorf("%s: %s %q, want %s mentioning %q", tc.name, e.Code, e.Message, tc.code, tc.says)
			}
		}
		a.do(http.MethodGet, "/jobs/"+next, nil, nil).decode(t, http.StatusOK, &v)
		if v.Priority != "low" {
			t.Errorf("refusals changed the job's priority to %s", v.Priority)
		}
		for _, query := range []string{"?limit=0", "?limit=1001", "?limit=x", "?cursor=a"} {
			if e := a.do(http.MethodGet, "/queue"+query, nil, nil).errorOf(t, 400); e.Code != "VALIDATION_ERROR" {
				t.Errorf("GET /queue%s: %s, want VALIDATION_ERROR", query, e.Code)
			}
		}
		// A job submitted high on Free, or with an unknown priority, is refused and not saved.
		for _, tc := range []struct {
			priority string
			status   int
		}{{"high", 403}, {"soon", 400}} {
			body := map[string]any{"priority": tc.priority}
			for k, val := range job {
				body[k] = val
			}
			if e := a.do(http.MethodPost, "/jobs", body, nil).errorOf(t, tc.status); !strings.Contains(e.Message, "priority") {
				t.Errorf("submit with priority %s: %q does not name priority", tc.priority, e.Message)
			}
		}
		if q := queue(a, "?limit=1000"); len(q) != len(aJobs)-2 {
			t.Fatalf("refused submits saved jobs: A has %d waiting, want %d", len(q), len(aJobs)-2)
		}
	})
}
