package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// batchBody is a POST /batches body of n good ffmpeg jobs.
func batchBody(n int) string {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = `{"type":"ffmpeg","params":{"command":"` + goodCommand + `"}}`
	}
	return `{"jobs":[` + strings.Join(jobs, ",") + `]}`
}

func (b *testBundle) batchCount(t *testing.T) int {
	t.Helper()
	page, err := b.jobs.ListBatches(context.Background(), batch.ListParams{AccountID: b.acct.ID, Limit: job.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Batches)
}

func TestSubmitBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(t, request{method: "POST", path: "/batches", key: b.key, body: []byte(batchBody(3))})
	if res.status != http.StatusCreated {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	var got struct {
		ID     string       `json:"id"`
		Status batch.Status `json:"status"`
		Total  int          `json:"total"`
		Jobs   []struct {
			ID     string     `json:"id"`
			Status job.Status `json:"status"`
		} `json:"jobs"`
	}
	res.data(t, &got)
	if !strings.HasPrefix(got.ID, "bat_") || got.Status != batch.StatusRunning || got.Total != 3 || len(got.Jobs) != 3 {
		t.Fatalf("data = %+v", got)
	}
	if loc := res.header.Get("Location"); loc != "/batches/"+got.ID {
		t.Fatalf("Location = %q", loc)
	}
	var ids []string
	for _, j := range got.Jobs {
		ids = append(ids, j.ID)
		res := b.do(t, request{method: "GET", path: "/jobs/" + j.ID, key: b.key})
		var v service.View
		res.data(t, &v)
		if v.BatchID != got.ID || v.Status != job.StatusWaiting {
			t.Fatalf("job %s: batchId %q, status %s", j.ID, v.BatchID, v.Status)
		}
	}

	res = b.do(t, request{method: "GET", path: "/batches/" + got.ID, key: b.key})
	var view service.BatchView
	res.data(t, &view)
	want := service.BatchView{ID: got.ID, Status: batch.StatusRunning, Total: 3, Jobs: ids, CreatedAt: t0.UnixMilli()}
	if d := cmp.Diff(want, view); d != "" {
		t.Fatalf("GET /batches/{id} (-want +got):\n%s", d)
	}

	// Cancelling every job completes the batch once the relay has counted them.
	for _, id := range ids {
		if res := b.do(t, request{method: "POST", path: "/jobs/" + id + "/cancel", key: b.key}); res.status != http.StatusOK {
			t.Fatalf("cancel: %d %s", res.status, res.body)
		}
	}
	b.h.Drain(t)
	res = b.do(t, request{method: "GET", path: "/batches/" + got.ID, key: b.key})
	res.data(t, &view)
	done := t0.UnixMilli()
	want.Status, want.Cancelled, want.CompletedAt = batch.StatusComplete, 3, &done
	if d := cmp.Diff(want, view); d != "" {
		t.Fatalf("GET /batches/{id} after cancels (-want +got):\n%s", d)
	}

	// Another account's batch, and a missing one, are 404.
	for _, key := range []string{b.otherKey, b.key} {
		path := "/batches/" + got.ID
		if key == b.key {
			path = "/batches/bat_missing"
		}
		res := b.do(t, request{method: "GET", path: path, key: key})
		if code, _ := res.errorBody(t); res.status != http.StatusNotFound || code != problem.CodeNotFound {
			t.Fatalf("GET %s: %d %s", path, res.status, res.body)
		}
	}
}

// A rejected POST /batches answers the right code, names the job, and stores nothing.
func TestSubmitBatchRejections(t *testing.T) {
	t.Parallel()
	bad := `{"type":"ffmpeg","params":{"command":"ffmpeg -filter_script f.txt -i https://example.com/a.mp4 out.mp4"}}`
	good := `{"type":"ffmpeg","params":{"command":"` + goodCommand + `"}}`
	tests := []struct {
		name     string
		body     string
		status   int
		code     problem.Code
		mentions string
	}{
		{"no jobs field", `{}`, 400, problem.CodeValidation, "jobs is required"},
		{"null jobs", `{"jobs":null}`, 400, problem.CodeValidation, "jobs is required"},
		{"empty", `{"jobs":[]}`, 400, problem.CodeValidation, "1 to 100 jobs; it holds 0"},
		{"too many", `{"jobs":[` + strings.TrimSuffix(strings.Repeat(`{},`, 101), ",") + `]}`, 400, problem.CodeValidation, "it holds 101"},
		{"unknown field", `{"jobs":[` + good + `],"urgency":1}`, 400, problem.CodeValidation, `field "urgency" is not allowed`},
		{"priority not a string", `{"jobs":[` + good + `],"priority":1}`, 400, problem.CodeValidation, "priority must be a string"},
		{"unknown priority", `{"jobs":[` + good + `],"priority":"urgent"}`, 400, problem.CodeValidation, `priority must be one of low, normal, high; got "urgent"`},
		{"high on Free", `{"jobs":[` + good + `],"priority":"high"}`, 403, problem.CodePlanLimit, "priority high needs the Pro plan"},
		{"unknown priority of a job", `{"jobs":[` + good + `,{"type":"ffmpeg","priority":"top"}]}`, 400, problem.CodeValidation, `jobs[1].priority must be one of low, normal, high; got "top"`},
		{"jobs not an array", `{"jobs":{}}`, 400, problem.CodeValidation, "jobs must be an array"},
		{"job not an object", `{"jobs":[` + good + `,3]}`, 400, problem.CodeValidation, "jobs[1] must be a JSON object"},
		{"unknown field in a job", `{"jobs":[` + good + `,{"type":"ffmpeg","prio":1}]}`, 400, problem.CodeValidation, `field "jobs[1].prio" is not allowed`},
		{"params not an object", `{"jobs":[{"type":"ffmpeg","params":[]}]}`, 400, problem.CodeValidation, "jobs[0].params must be an object"},
		{"disallowed flag", `{"jobs":[` + strings.Repeat(good+",", 3) + bad + `]}`, 400, problem.CodeValidation,
			"jobs[3].params.command: flag -filter_script is not allowed"},
		{"gpu on free", `{"jobs":[` + good + `,{"type":"ffmpeg","params":{"command":"ffmpeg -i https://example.com/a.mp4 -c:v h264_nvenc out.mp4"}}]}`,
			403, problem.CodePlanLimit, "jobs[1]: GPU jobs need the Pro plan"},
		{"not JSON", `{"jobs":[`, 400, problem.CodeValidation, "body is truncated JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			res := b.do(t, request{method: "POST", path: "/batches", key: b.key, body: []byte(tc.body)})
			code, msg := res.errorBody(t)
			if res.status != tc.status || code != tc.code || !strings.Contains(msg, tc.mentions) {
				t.Fatalf("got %d %s %q, want %d %s mentioning %q", res.status, code, msg, tc.status, tc.code, tc.mentions)
			}
			if n, m := b.jobCount(t), b.batchCount(t); n != 0 || m != 0 {
				t.Fatalf("a rejected batch stored %d jobs and %d batches", n, m)
			}
		})
	}
}

func TestListBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	for range 3 {
		res := b.do(t, request{method: "POST", path: "/batches", key: b.key, body: []byte(batchBody(1))})
		var c struct {
			ID string `json:"id"`
		}
		res.data(t, &c)
		want = append([]string{c.ID}, want...)
		b.clock.Advance(time.Millisecond)
	}
	var got []string
	path := "/batches?limit=2"
	for range 5 {
		res := b.do(t, request{method: "GET", path: path, key: b.key})
		if res.status != http.StatusOK {
			t.Fatalf("status %d %s", res.status, res.body)
		}
		var page struct {
			Data       []service.BatchView `json:"data"`
			Pagination struct {
				NextCursor *string `json:"nextCursor"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(res.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Data {
			got = append(got, v.ID)
		}
		if page.Pagination.NextCursor == nil {
			break
		}
		path = "/batches?limit=2&cursor=" + *page.Pagination.NextCursor
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("listing (-want +got):\n%s", d)
	}
	// Another account sees none; bad queries are named.
	res := b.do(t, request{method: "GET", path: "/batches", key: b.otherKey})
	if string(res.body) != `{"data":[],"pagination":{"nextCursor":null}}`+"\n" {
		t.Fatalf("other account's listing: %s", res.body)
	}
	for query, mentions := range map[string]string{
		"status=running": `"status" is not known`,
		"limit=0":        `limit "0"`,
		"cursor=nope":    `cursor "nope"`,
	} {
		res := b.do(t, request{method: "GET", path: "/batches?" + query, key: b.key})
		if code, msg := res.errorBody(t); res.status != 400 || code != problem.CodeValidation || !strings.Contains(msg, mentions) {
			t.Errorf("%s: %d %s %q, want 400 mentioning %q", query, res.status, code, msg, mentions)
		}
	}
}
