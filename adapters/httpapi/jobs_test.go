package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

const goodCommand = "ffmpeg -i https://example.com/a.mp4 -c:v libx264 out.mp4"

func TestSubmitJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(t, request{method: "POST", path: "/jobs", key: b.key,
		body: []byte(`{"type":"ffmpeg","params":{"command":"` + goodCommand + `"}}`)})
	if res.status != http.StatusCreated {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	var got struct {
		ID     string     `json:"id"`
		Status job.Status `json:"status"`
	}
	res.data(t, &got)
	if got.Status != job.StatusWaiting || !strings.HasPrefix(got.ID, "job_") {
		t.Fatalf("data = %+v", got)
	}
	if loc := res.header.Get("Location"); loc != "/jobs/"+got.ID {
		t.Fatalf("Location = %q", loc)
	}
	if n := b.jobCount(t); n != 1 {
		t.Fatalf("store holds %d jobs, want 1", n)
	}
	// The job reads back with its request as submitted, a null inputs included.
	res = b.do(t, request{method: "POST", path: "/jobs", key: b.key,
		body: []byte(`{"type":"ffmpeg","inputs":null,"params":{"command":"` + goodCommand + `"}}`)})
	res.data(t, &got)
	if res = b.do(t, request{method: "GET", path: "/jobs/" + got.ID, key: b.key}); res.status != http.StatusOK {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
}

// A rejected POST /jobs answers the right code and stores nothing.
func TestSubmitJobRejections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		header   map[string]string
		noKey    bool
		badKey   bool
		status   int
		code     problem.Code
		mentions string
	}{
		{name: "unknown field", body: `{"type":"ffmpeg","params":{"command":"` + goodCommand + `"},"extra":1}`,
			status: 400, code: problem.CodeValidation, mentions: "extra"},
		{name: "wrong type of params", body: `{"type":"ffmpeg","params":"x"}`, status: 400, code: problem.CodeValidation, mentions: "params"},
		{name: "wrong type of type", body: `{"type":5}`, status: 400, code: problem.CodeValidation, mentions: "type"},
		{name: "unknown job type", body: `{"type":"nope"}`, status: 400, code: problem.CodeValidation, mentions: "nope"},
		{name: "disallowed flag", body: `{"type":"ffmpeg","params":{"command":"ffmpeg -i https://example.com/a.mp4 -filter_script x out.mp4"}}`,
			status: 400, code: problem.CodeValidation, mentions: "-filter_script"},
		{name: "input not in inputs", body: `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":{"command":"ffmpeg -i in.mp4 -vf subtitles=subs.srt out.mp4"}}`,
			status: 400, code: problem.CodeValidation, mentions: `"subs.srt"`},
		{name: "GPU on the Free plan", body: `{"type":"ffmpeg","params":{"command":"ffmpeg -i https://example.com/a.mp4 -c:v h264_nvenc out.mp4"}}`,
			status: 403, code: problem.CodePlanLimit, mentions: "Pro"},
		{name: "not JSON", body: `{"type":`, status: 400, code: problem.CodeValidation},
		{name: "empty body", body: ``, status: 400, code: problem.CodeValidation, mentions: "empty"},
		{name: "trailing data", body: `{"type":"ffmpeg"} {}`, status: 400, code: problem.CodeValidation},
		{name: "wrong Content-Type", body: `{"type":"ffmpeg"}`, header: map[string]string{"Content-Type": "text/plain"},
			status: 415, code: problem.CodeValidation, mentions: "Content-Type"},
		{name: "duplicate key", body: `{"type":"ffmpeg","params":{"command":"` + goodCommand + `","command":"ffmpeg -i x y.mp4"}}`,
			status: 400, code: problem.CodeValidation, mentions: `"params.command"`},
		{name: "oversized body", body: `{"type":"ffmpeg","params":{"command":"` + strings.Repeat("a", 8<<10) + `"}}`,
			status: 413, code: problem.CodePayloadTooLarge, mentions: "4096"},
		// encoding/json would keep U+FFFD in their place: an inline input saved other than sent.
		{name: "a byte that is not UTF-8", body: "{\"type\":\"ffmpeg\",\"params\":{\"command\":\"" + goodCommand + "\"},\"inputs\":{\"a.srt\":{\"content\":\"x\xff\"}}}",
			status: 400, code: problem.CodeValidation, mentions: "not UTF-8 text at byte"},
		{name: "half a surrogate pair", body: `{"type":"ffmpeg","params":{"command":"` + goodCommand + `"},"inputs":{"a.srt":{"content":"x\ud800y"}}}`,
			status: 400, code: problem.CodeValidation, mentions: "surrogate"},
		{name: "a low half first", body: `{"type":"ffmpeg","params":{"command":"` + goodCommand + `"},"inputs":{"a.srt":{"content":"\udc00\ud800"}}}`,
			status: 400, code: problem.CodeValidation, mentions: "surrogate"},
		{name: "no key", body: `{"type":"ffmpeg"}`, noKey: true, status: 401, code: problem.CodeUnauthorized},
		{name: "bad key", body: `{"type":"ffmpeg"}`, badKey: true, status: 401, code: problem.CodeUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			req := request{method: "POST", path: "/jobs", key: b.key, body: []byte(tt.body), header: tt.header}
			switch {
			case tt.noKey:
				req.key = ""
			case tt.badKey:
				req.key = "mj_notakey"
			}
			res := b.do(t, req)
			code, msg := res.errorBody(t)
			if res.status != tt.status || code != tt.code {
				t.Fatalf("got %d %s %q, want %d %s", res.status, code, msg, tt.status, tt.code)
			}
			if !strings.Contains(msg, tt.mentions) {
				t.Fatalf("message %q does not mention %q", msg, tt.mentions)
			}
			if tt.status == 401 && !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate = %q", res.header.Get("WWW-Authenticate"))
			}
			if n := b.jobCount(t); n != 0 {
				t.Fatalf("a rejected submit stored %d jobs", n)
			}
		})
	}
}

func TestGetJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	waiting := b.seedJob(t, job.StatusWaiting, nil)
	failed := b.seedJob(t, job.StatusFailed, nil)
	complete := b.seedJob(t, job.StatusComplete, map[string]string{"out.mp4": "0123456789"})

	tests := []struct {
		name   string
		id     string
		query  string
		key    string
		status int
		want   job.Status
	}{
		{"waiting", waiting.ID, "", b.key, 200, job.StatusWaiting},
		{"failed", failed.ID, "", b.key, 200, job.StatusFailed},
		{"complete", complete.ID, "", b.key, 200, job.StatusComplete},
		{"other account's job", waiting.ID, "", b.otherKey, 404, ""},
		{"missing job", "job_missing", "", b.key, 404, ""},
		{"no key", waiting.ID, "", "", 401, ""},
		// A long poll: an ended job answers at once, a running one after the wait as it stands.
		{"complete, waited for", complete.ID, "?wait=60", b.key, 200, job.StatusComplete},
		{"failed, waited for", failed.ID, "?wait=60", b.key, 200, job.StatusFailed},
		{"waiting, a wait of 0", waiting.ID, "?wait=0", b.key, 200, job.StatusWaiting},
		{"waiting, waited for a second", waiting.ID, "?wait=1", b.key, 200, job.StatusWaiting},
		{"other account's job, waited for", waiting.ID, "?wait=60", b.otherKey, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.do(t, request{method: "GET", path: "/jobs/" + tt.id + tt.query, key: tt.key})
			if res.status != tt.status {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			if tt.status != 200 {
				return
			}
			var v service.View
			res.data(t, &v)
			if v.ID != tt.id || v.Status != tt.want {
				t.Fatalf("got %s %s", v.ID, v.Status)
			}
			switch tt.want {
			case job.StatusFailed:
				if v.Error == nil || v.Error.Code != problem.CodeRunnerError {
					t.Fatalf("failed job error = %+v", v.Error)
				}
			case job.StatusComplete:
				if v.Output == nil || v.Output.File == nil || !strings.HasPrefix(v.Output.File.URL, b.url+"/dl/"+tt.id+"?token=") {
					t.Fatalf("complete job output = %+v", v.Output)
				}
			}
		})
	}
}

func TestListJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, b.seedJob(t, job.StatusWaiting, nil).ID)
		b.clock.Advance(1e9)
	}
	failed := b.seedJob(t, job.StatusFailed, nil)
	ids = append(ids, failed.ID)

	type page struct {
		Data       []service.View `json:"data"`
		Pagination struct {
			NextCursor *string `json:"nextCursor"`
		} `json:"pagination"`
	}
	list := func(t *testing.T, query string) (page, response) {
		t.Helper()
		res := b.do(t, request{method: "GET", path: "/jobs" + query, key: b.key})
		var p page
		if res.status == 200 {
			if err := jsonUnmarshal(res.body, &p); err != nil {
				t.Fatal(err)
			}
		}
		return p, res
	}

	t.Run("pages newest first", func(t *testing.T) {
		t.Parallel()
		var got []string
		query := "?limit=3"
		for pages := 0; ; pages++ {
			p, res := list(t, query)
			if res.status != 200 || pages > 3 {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			for _, v := range p.Data {
				got = append(got, v.ID)
			}
			if p.Pagination.NextCursor == nil {
				break
			}
			query = "?limit=3&cursor=" + *p.Pagination.NextCursor
		}
		want := []string{ids[3], ids[2], ids[1], ids[0]}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("listing (-want +got):\n%s", diff)
		}
	})
	t.Run("filters by status and type", func(t *testing.T) {
		t.Parallel()
		p, res := list(t, "?status=failed&type=ffmpeg")
		if res.status != 200 || len(p.Data) != 1 || p.Data[0].ID != failed.ID {
			t.Fatalf("status %d, body %s", res.status, res.body)
		}
	})
	t.Run("another account sees none", func(t *testing.T) {
		t.Parallel()
		res := b.do(t, request{method: "GET", path: "/jobs", key: b.otherKey})
		if res.status != 200 || string(res.body) != `{"data":[],"pagination":{"nextCursor":null}}`+"\n" {
			t.Fatalf("status %d, body %s", res.status, res.body)
		}
	})

	bad := []struct{ query, mentions string }{
		{"?status=done", "status"},
		{"?limit=0", "limit"},
		{"?limit=101", "limit"},
		{"?limit=ten", "limit"},
		{"?type=nope", "type"},
		{"?cursor=xyz", "cursor"},
		{"?sort=asc", "sort"},
		{"?status=failed&status=waiting", "status"},
	}
	for _, tt := range bad {
		t.Run("rejects "+tt.query, func(t *testing.T) {
			t.Parallel()
			_, res := list(t, tt.query)
			code, msg := res.errorBody(t)
			if res.status != 400 || code != problem.CodeValidation || !strings.Contains(msg, tt.mentions) {
				t.Fatalf("got %d %s %q, want 400 naming %s", res.status, code, msg, tt.mentions)
			}
		})
	}
}

// TestGetJobRejectsWait: a wait that is not a whole number of seconds from 0 to 60, or is given
// twice, is a VALIDATION_ERROR naming it.
func TestGetJobRejectsWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	waiting := b.seedJob(t, job.StatusWaiting, nil)
	for _, q := range []string{"?wait=-1", "?wait=61", "?wait=1.5", "?wait=soon", "?wait=", "?wait=1&wait=2"} {
		t.Run(q, func(t *testing.T) {
			t.Parallel()
			res := b.do(t, request{method: "GET", path: "/jobs/" + waiting.ID + q, key: b.key})
			code, msg := res.errorBody(t)
			if res.status != 400 || code != problem.CodeValidation || !strings.Contains(msg, "wait") {
				t.Fatalf("got %d %s %q, want 400 naming wait", res.status, code, msg)
			}
		})
	}
}

// An operation that takes no body or no query parameters refuses them, and does nothing: what it
// would ignore (?force=true, a JSON body) is the client's mistake. No body, or {}, is none.
func TestActionsRefuseWhatTheyWouldIgnore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name, query, body, contentType string
		want                           int
		mentions                       string
	}{
		{"a query parameter", "?force=true", "", "", 400, `"force"`},
		{"a JSON body", "", `{"reason":"x"}`, "application/json", 400, "reason"},
		{"a body that is not JSON", "", "garbage", "application/json", 400, ""},
		{"a body of another type", "", "not json", "image/png", 415, "Content-Type"},
		{"an empty object", "", `{}`, "application/json", 200, ""},
		{"nothing", "", "", "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := b.seedJob(t, job.StatusWaiting, nil)
			req := request{method: "POST", path: "/jobs/" + j.ID + "/cancel" + tc.query, key: b.key}
			if tc.body != "" {
				req.body, req.header = []byte(tc.body), map[string]string{"Content-Type": tc.contentType}
			}
			res := b.do(t, req)
			if res.status != tc.want {
				t.Fatalf("status %d, body %s; want %d", res.status, res.body, tc.want)
			}
			if tc.want == 200 {
				return
			}
			if _, msg := res.errorBody(t); !strings.Contains(msg, tc.mentions) {
				t.Errorf("message %q does not name %q", msg, tc.mentions)
			}
			var v service.View
			b.do(t, request{method: "GET", path: "/jobs/" + j.ID, key: b.key}).data(t, &v)
			if v.Status != job.StatusWaiting {
				t.Errorf("a refused cancel left the job %s", v.Status)
			}
		})
	}
	for _, path := range []string{"/destinations?bogus=1", "/presets?limit=2", "/webhook-endpoints?limit=5", "/api-keys?x=1", "/account?x=1"} {
		res := b.do(t, request{method: "GET", path: path, key: b.key})
		if code, _ := res.errorBody(t); res.status != 400 || code != problem.CodeValidation {
			t.Errorf("GET %s: %d %s; want 400 VALIDATION_ERROR", path, res.status, code)
		}
	}
}

func TestCancelJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		status job.Status
		key    string
		want   int
		code   problem.Code
	}{
		{"waiting", job.StatusWaiting, b.key, 200, ""},
		{"running", job.StatusRunning, b.key, 200, ""},
		{"complete is terminal", job.StatusComplete, b.key, 409, problem.CodeConflict},
		{"cancelled is terminal", job.StatusCancelled, b.key, 409, problem.CodeConflict},
		{"other account's job", job.StatusWaiting, b.otherKey, 404, problem.CodeNotFound},
		{"no key", job.StatusWaiting, "", 401, problem.CodeUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := b.seedJob(t, tt.status, map[string]string{"out.mp4": "x"})
			res := b.do(t, request{method: "POST", path: "/jobs/" + j.ID + "/cancel", key: tt.key})
			if res.status != tt.want {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			if tt.want != 200 {
				if code, msg := res.errorBody(t); code != tt.code || (tt.want == 409 && !strings.Contains(msg, j.ID)) {
					t.Fatalf("error %s %q", code, msg)
				}
				return
			}
			var v service.View
			res.data(t, &v)
			if v.Status != job.StatusCancelled {
				t.Fatalf("status after cancel = %s", v.Status)
			}
		})
	}
}

func TestRetryJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failed := b.seedJob(t, job.StatusFailed, nil)
	waiting := b.seedJob(t, job.StatusWaiting, nil)

	res := b.do(t, request{method: "POST", path: "/jobs/" + failed.ID + "/retry", key: b.key})
	if res.status != http.StatusCreated {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	var got struct {
		ID      string     `json:"id"`
		Status  job.Status `json:"status"`
		RetryOf string     `json:"retryOf"`
	}
	res.data(t, &got)
	if got.RetryOf != failed.ID || got.Status != job.StatusWaiting || got.ID == failed.ID {
		t.Fatalf("retry = %+v", got)
	}

	for _, tt := range []struct {
		name, id, key string
		status        int
	}{
		{"waiting job", waiting.ID, b.key, 409},
		{"other account's job", failed.ID, b.otherKey, 404},
		{"missing job", "job_missing", b.key, 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.do(t, request{method: "POST", path: fmt.Sprintf("/jobs/%s/retry", tt.id), key: tt.key})
			if res.status != tt.status {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
		})
	}
}

// GET /jobs/{id} echoes the request, without the secrets of presigned input URLs.
func TestGetJobRedactsInputURLs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4?token=s3cret&X-Amz-Signature=zz9sig"},` +
		`"params":{"command":"ffmpeg -i in.mp4 -i https://example.com/b.mp4?sig=hidden -c:v libx264 out.mp4"}}`
	res := b.do(t, request{method: "POST", path: "/jobs", key: b.key, body: []byte(body)})
	var cr struct{ ID string }
	res.data(t, &cr)
	got := b.do(t, request{method: "GET", path: "/jobs/" + cr.ID, key: b.key})
	var v struct {
		Inputs map[string]string `json:"inputs"`
		Params struct{ Command string }
	}
	got.data(t, &v)
	if v.Inputs["in.mp4"] != "https://example.com/a.mp4?X-Amz-Signature=REDACTED&token=REDACTED" {
		t.Errorf("inputs echoed as %v", v.Inputs)
	}
	if !strings.Contains(v.Params.Command, "https://example.com/b.mp4?sig=REDACTED") {
		t.Errorf("command echoed as %q", v.Params.Command)
	}
	for _, secret := range []string{"s3cret", "zz9sig", "hidden"} {
		if strings.Contains(string(got.body), secret) {
			t.Errorf("GET /jobs/{id} shows %q: %s", secret, got.body)
		}
	}
}

// TestSubmitJobIntegralNumbers holds every integer field to one rule: a JSON number with a
// whole value is an integer however it is written, stored and echoed in plain decimal; any
// other number is refused naming the field, and stores nothing.
func TestSubmitJobIntegralNumbers(t *testing.T) {
	t.Parallel()
	const preset = `{"name":"small","command":"ffmpeg -i in.mp4 -crf {{crf}} out.mp4","variables":{"crf":{"type":"integer","default":20.0,"min":18,"max":4e1}}}`
	for _, tt := range []struct {
		name, body string
		field      string // the echoed params field, or the refused one
		want       string // its echo, or "" when refused
	}{
		{"timeout", `{"type":"ffmpeg","params":{"command":"` + goodCommand + `","timeout":60}}`, "timeout", "60"},
		{"timeout with a fraction", `{"type":"ffmpeg","params":{"command":"` + goodCommand + `","timeout":60.0}}`, "timeout", "60"},
		{"timeout with an exponent", `{"type":"ffmpeg","params":{"command":"` + goodCommand + `","timeout":6e1}}`, "timeout", "60"},
		{"variable with a fraction", `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":{"preset":"small","variables":{"crf":30.0}}}`, "command", `"ffmpeg -i in.mp4 -crf 30 out.mp4"`},
		{"variable default with a fraction", `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":{"preset":"small"}}`, "command", `"ffmpeg -i in.mp4 -crf 20 out.mp4"`},
		{"timeout not whole", `{"type":"ffmpeg","params":{"command":"` + goodCommand + `","timeout":60.5}}`, "params.timeout", ""},
		{"variable not whole", `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":{"preset":"small","variables":{"crf":30.5}}}`, "params.variables.crf", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var j struct{ Params map[string]json.RawMessage }
			if !submitBesidePreset(t, preset, tt.body, map[bool]string{true: tt.field}[tt.want == ""], &j) {
				return
			}
			if got := string(j.Params[tt.field]); got != tt.want {
				t.Errorf("params.%s echoed as %s, want %s", tt.field, got, tt.want)
			}
		})
	}
}

// TestSubmitJobNulls takes a null field of a job's inputs or params for one not given: an
// optional one takes its default and is not echoed, a required one is a 400 naming it.
func TestSubmitJobNulls(t *testing.T) {
	t.Parallel()
	const preset = `{"name":"small","command":"ffmpeg -i in.mp4 -crf {{crf}} out.mp4","variables":{"crf":{"type":"integer","min":18,"max":40}}}`
	for _, tt := range []struct {
		name, body string
		want       string // the params echoed, or the field a refusal names
		refused    bool
	}{
		{"optional params", `{"type":"ffmpeg","inputs":null,"params":{"command":"` + goodCommand + `","timeout":null,"outputFormat":null,"compute":null,"split":null}}`,
			`{"command":"` + goodCommand + `"}`, false},
		{"optional input field", `{"type":"ffmpeg","inputs":{"in.mp4":{"url":"https://example.com/a.mp4","content":null}},"params":{"command":"ffmpeg -i in.mp4 -f null -","timeout":null}}`,
			`{"command":"ffmpeg -i in.mp4 -f null -"}`, false},
		{"no nulls", `{"type":"ffmpeg","params":{ "command" : "` + goodCommand + `", "timeout": 60 }}`,
			`{"command":"` + goodCommand + `","timeout":60}`, false},
		{"required type", `{"type":null,"params":{"command":"` + goodCommand + `"}}`, "type", true},
		{"required params", `{"type":"ffmpeg","params":null}`, "params", true},
		{"required command", `{"type":"ffmpeg","params":{"command":null}}`, "params.command", true},
		{"required variable", `{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":{"preset":"small","variables":{"crf":null}}}`, "params.variables.crf", true},
		{"required input", `{"type":"ffmpeg","inputs":{"in.mp4":null},"params":{"command":"ffmpeg -i in.mp4 out.mp4"}}`, "in.mp4", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var j struct{ Inputs, Params json.RawMessage }
			if !submitBesidePreset(t, preset, tt.body, map[bool]string{true: tt.want}[tt.refused], &j) {
				return
			}
			if string(j.Params) != tt.want || bytes.Contains(j.Inputs, []byte("null")) {
				t.Errorf("echoed inputs %s params %s, want params %s and no null", j.Inputs, j.Params, tt.want)
			}
		})
	}
}

// submitBesidePreset submits body to a fresh API holding preset. With refused set, the submit
// must be a 400 naming it that stores no job, and it returns false; otherwise the job must be
// created, and it returns true with the job as GET /jobs/{id} reads it in job.
func submitBesidePreset(t *testing.T, preset, body, refused string, job any) bool {
	t.Helper()
	b := setup(t)
	if r := b.do(t, request{method: "POST", path: "/presets", key: b.key, body: []byte(preset)}); r.status != http.StatusCreated {
		t.Fatalf("create preset: %d %s", r.status, r.body)
	}
	res := b.do(t, request{method: "POST", path: "/jobs", key: b.key, body: []byte(body)})
	if refused != "" {
		if code, msg := res.errorBody(t); res.status != 400 || code != problem.CodeValidation || !strings.Contains(msg, refused) {
			t.Errorf("got %d %s %q, want 400 naming %s", res.status, code, msg, refused)
		}
		if n := b.jobCount(t); n != 0 {
			t.Errorf("a refused submit stored %d jobs", n)
		}
		return false
	}
	var created struct{ ID string }
	res.data(t, &created)
	if res.status != http.StatusCreated {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	b.do(t, request{method: "GET", path: "/jobs/" + created.ID, key: b.key}).data(t, job)
	return true
}
