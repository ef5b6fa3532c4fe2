package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
)

func TestValidateEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		body   string
		status int
		want   string // the data, or the error code
	}{
		{"valid, no key", `{"command":"` + goodCommand + `"}`, 200,
			`{"valid":true,"args":["-i","https://example.com/a.mp4","-c:v","libx264","out.mp4"],"inferredOutputFormat":"mp4"}`},
		{"invalid command is still 200", `{"command":"ffmpeg -i https://example.com/a.mp4 -filter_script x out.mp4"}`, 200,
			`{"valid":false,"error":"flag -filter_script is not allowed"}`},
		{"bare name is a required input", `{"command":"ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4"}`, 200,
			`{"valid":true,"args":["-i","in.mp4","-vf","scale=640:-2","out.mp4"],"inferredOutputFormat":"mp4","requiredInputs":["in.mp4"]}`},
		{"inputs given", `{"command":"ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4","inputs":{"in.mp4":"https://example.com/a.mp4","s.srt":{"content":"1"}}}`, 200,
			`{"valid":true,"args":["-i","in.mp4","-vf","subtitles=s.srt","out.mp4"],"inferredOutputFormat":"mp4"}`},
		{"some inputs missing", `{"command":"ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4","inputs":{"in.mp4":{"url":"https://example.com/a.mp4"}}}`, 200,
			`{"valid":true,"args":["-i","in.mp4","-vf","subtitles=s.srt","out.mp4"],"inferredOutputFormat":"mp4","requiredInputs":["s.srt"]}`},
		{"host path stays invalid", `{"command":"ffmpeg -i /etc/passwd out.mp4"}`, 200,
			`{"valid":false,"error":"input \"/etc/passwd\" is not allowed: it is not a bare file name (it contains a directory separator); inputs are https URLs, uploaded assets and bare names of staged inputs"}`},
		{"staged http url", `{"command":"ffmpeg -i in.mp4 out.mp4","inputs":{"in.mp4":"http://example.com/a.mp4"}}`, 200,
			`{"valid":false,"error":"input \"in.mp4\" url \"http://example.com/a.mp4\" is not allowed: only https URLs and uploaded assets"}`},
		{"malformed inputs", `{"command":"ffmpeg -i in.mp4 out.mp4","inputs":{"in.mp4":5}}`, 400, "VALIDATION_ERROR"},
		{"inputs not an object", `{"command":"ffmpeg -i in.mp4 out.mp4","inputs":[]}`, 400, "VALIDATION_ERROR"},
		{"unknown field", `{"command":"ffmpeg","x":1}`, 400, "VALIDATION_ERROR"},
		{"missing command", `{}`, 400, "VALIDATION_ERROR"},
		{"wrong type", `{"command":5}`, 400, "VALIDATION_ERROR"},
		{"not JSON", `command=ffmpeg`, 400, "VALIDATION_ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.do(t, request{method: "POST", path: "/ffmpeg/validate", body: []byte(tt.body)})
			if res.status != tt.status {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			if tt.status != 200 {
				if code, _ := res.errorBody(t); string(code) != tt.want {
					t.Fatalf("code %s, want %s", code, tt.want)
				}
				return
			}
			var got json.RawMessage
			res.data(t, &got)
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Fatalf("data (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(t, request{method: "GET", path: "/account", key: b.key})
	if res.status != 200 {
		t.Fatalf("status %d, body %s", res.status, res.body)
	}
	want := `{"data":{"id":"acct_a","plan":"free","limits":{"requestsPerMinute":30,"executionCapSeconds":300,"gpu":false,"concurrency":1,` +
		`"jobBytes":4294967296,"jobFiles":1000,"stallSeconds":60},` +
		`"balance":{"amount":1000,"currency":"credits","formatted":"1000 credits"},"usage":{"since":` + jsonInt(billing.MonthStart(t0).UnixMilli()) +
		`,"spent":{"amount":0,"currency":"credits","formatted":"0 credits"}},"workers":{"cpu":false,"gpu":false},"createdAt":` + jsonInt(t0.UnixMilli()) + `}}` + "\n"
	if diff := cmp.Diff(want, string(res.body)); diff != "" {
		t.Fatalf("body (-want +got):\n%s", diff)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if res := b.do(t, request{method: "GET", path: "/healthz"}); res.status != 200 {
		t.Fatalf("healthz %d", res.status)
	}
	if res := b.do(t, request{method: "GET", path: "/readyz"}); res.status != 200 {
		t.Fatalf("readyz %d", res.status)
	}
	res := b.do(t, request{method: "GET", path: "/openapi.json"})
	var doc map[string]any
	if err := json.Unmarshal(res.body, &doc); res.status != 200 || err != nil || doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json: %d %v", res.status, err)
	}

	b.ready.mu.Lock()
	b.ready.err = errors.New("dial tcp 10.0.0.5:5432: password authentication failed for user mediajobs")
	b.ready.mu.Unlock()
	res = b.do(t, request{method: "GET", path: "/readyz"})
	code, msg := res.errorBody(t)
	if res.status != 503 || code != problem.CodeUnavailable || res.header.Get("Retry-After") == "" ||
		strings.Contains(msg, "10.0.0.5") || strings.Contains(msg, "password") {
		t.Fatalf("not ready: %d %s %q", res.status, code, msg)
	}
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		method string
		path   string
		status int
		code   problem.Code
		allow  string
	}{
		{"unknown path", "GET", "/nope", 404, problem.CodeNotFound, ""},
		{"unknown nested path", "GET", "/jobs/job_a/nope", 404, problem.CodeNotFound, ""},
		{"trailing slash", "POST", "/jobs/", 404, problem.CodeNotFound, ""},
		{"unclean path", "GET", "/jobs//x", 404, problem.CodeNotFound, ""},
		// A segment of NULs alone panicked bunrouter's lookup; a NUL in an id reached SQLite.
		{"NUL segment", "GET", "/jobs/%00", 404, problem.CodeNotFound, ""},
		{"NUL segment, no key needed", "GET", "/dl/%00", 404, problem.CodeNotFound, ""},
		{"NUL in an id", "DELETE", "/webhook-endpoints/job_%00", 404, problem.CodeNotFound, ""},
		{"control character in an id", "GET", "/presets/x%01", 404, problem.CodeNotFound, ""},
		{"wrong method", "DELETE", "/jobs", 405, problem.CodeValidation, "POST, GET, HEAD"},
		{"wrong method on a job", "PUT", "/jobs/job_a", 405, problem.CodeValidation, "GET, HEAD"},
		{"GET on validate", "GET", "/ffmpeg/validate", 405, problem.CodeValidation, "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.do(t, request{method: tt.method, path: tt.path, key: b.key})
			code, msg := res.errorBody(t)
			if res.status != tt.status || code != tt.code || msg == "" {
				t.Fatalf("got %d %s %q, want %d %s", res.status, code, msg, tt.status, tt.code)
			}
			if got := res.header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
}

// Every GET answers HEAD with the GET's status and headers and no body.
func TestHeadAnswersAsGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		path, key string
		status    int
	}{
		{"/healthz", "", http.StatusOK},
		{"/account", "key", http.StatusOK},
		{"/jobs", "key", http.StatusOK},
		{"/jobs/job_missing", "key", http.StatusNotFound},
		{"/account", "", http.StatusUnauthorized},
	} {
		key := ""
		if tc.key != "" {
			key = b.key
		}
		head := b.do(t, request{method: http.MethodHead, path: tc.path, key: key})
		get := b.do(t, request{method: http.MethodGet, path: tc.path, key: key})
		if head.status != tc.status || get.status != tc.status || len(head.body) != 0 ||
			head.header.Get("Content-Type") != get.header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q (%d bytes); GET %d %q; want both %d, HEAD without a body",
				tc.path, head.status, head.header.Get("Content-Type"), len(head.body), get.status, get.header.Get("Content-Type"), tc.status)
		}
	}
}

// The Authenticated seam runs after authentication, sees the account and rejects through
// WriteError; a panic anywhere becomes a generic 500.
func TestAuthenticatedMiddleware(t *testing.T) {
	t.Parallel()
	var seen []string
	limiter := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a, ok := httpapi.AccountFrom(r.Context())
			if !ok {
				panic("no account in the context")
			}
			seen = append(seen, a.ID)
			switch r.URL.Query().Get("mode") {
			case "limit":
				w.Header().Set("Retry-After", "7")
				httpapi.WriteError(w, r, problem.Reject(problem.CodeRateLimited, "rate limit of 30 requests per minute reached"))
			case "panic":
				panic("secret internal state")
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
	b := setup(t, setupOpts{authenticated: []httpapi.Middleware{limiter}})

	if res := b.do(t, request{method: "GET", path: "/jobs", key: b.key}); res.status != 200 {
		t.Fatalf("pass-through: %d %s", res.status, res.body)
	}
	res := b.do(t, request{method: "GET", path: "/jobs?mode=limit", key: b.key})
	if code, _ := res.errorBody(t); res.status != 429 || code != problem.CodeRateLimited || res.header.Get("Retry-After") != "7" {
		t.Fatalf("limited: %d %s", res.status, res.body)
	}
	res = b.do(t, request{method: "GET", path: "/jobs?mode=panic", key: b.key})
	if code, msg := res.errorBody(t); res.status != 500 || code != problem.CodeInternal || strings.Contains(msg, "secret") {
		t.Fatalf("panic: %d %s", res.status, res.body)
	}
	// The client gets the request ID to quote; the log keeps the cause under it.
	if id := res.header.Get("X-Request-Id"); !strings.HasPrefix(id, "req_") || !strings.Contains(string(res.body), "(request "+id+")") {
		t.Fatalf("panic: X-Request-Id %q, body %s; want the ID in the message", id, res.body)
	}
	given := b.do(t, request{method: "GET", path: "/jobs?mode=panic", key: b.key, header: map[string]string{"X-Request-Id": "proxy-123"}})
	if id := given.header.Get("X-Request-Id"); id != "proxy-123" || !strings.Contains(string(given.body), "(request proxy-123)") {
		t.Fatalf("a proxy's request ID: %q %s", id, given.body)
	}
	unsafe := b.do(t, request{method: "GET", path: "/jobs", key: b.key, header: map[string]string{"X-Request-Id": "<script>"}})
	if id := unsafe.header.Get("X-Request-Id"); !strings.HasPrefix(id, "req_") {
		t.Fatalf("an unsafe request ID was kept: %q", id)
	}
	// Unauthenticated routes never reach it.
	b.do(t, request{method: "GET", path: "/healthz"})
	if diff := cmp.Diff([]string{"acct_a", "acct_a", "acct_a", "acct_a", "acct_a"}, seen); diff != "" {
		t.Fatalf("middleware saw (-want +got):\n%s", diff)
	}
}

// Every route is in the OpenAPI document, and every operation of the document is a route.
func TestRoutesAreDocumented(t *testing.T) {
	t.Parallel()
	v, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	doc := v.Document()
	var routes, documented []string
	for _, r := range httpapi.Routes() {
		routes = append(routes, r.Method+" "+r.Path)
		op := doc.Paths.Find(r.Path).GetOperation(r.Method)
		if op == nil {
			continue
		}
		scheme := "bearer" // the document's default
		if op.Security != nil {
			scheme = ""
			for _, req := range *op.Security {
				for name := range req {
					scheme = name
				}
			}
		}
		want := map[bool]string{true: "bearer", false: ""}[r.Auth]
		if r.Worker {
			want = "workerToken"
		}
		if r.Admin {
			want = "adminToken"
		}
		if r.Session {
			want = "session"
		}
		if scheme != want {
			t.Errorf("%s %s: the route needs %q, but the document says %q", r.Method, r.Path, want, scheme)
		}
		// A route reads its query string exactly when the document gives it query parameters
		// (a worker's route reads none and is not checked).
		query := false
		for _, p := range append(op.Parameters, doc.Paths.Find(r.Path).Parameters...) {
			query = query || p.Value.In == "query"
		}
		if !r.Worker && r.Query != query {
			t.Errorf("%s %s: the route reads its query: %v; the document gives it query parameters: %v", r.Method, r.Path, r.Query, query)
		}
		if body := op.RequestBody != nil; !r.Worker && r.Method != http.MethodGet && r.Method != http.MethodHead && r.Body != body {
			t.Errorf("%s %s: the route reads a body: %v; the document gives it one: %v", r.Method, r.Path, r.Body, body)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	slices.Sort(routes)
	slices.Sort(documented)
	if diff := cmp.Diff(documented, routes); diff != "" {
		t.Fatalf("routes vs document (-document +routes):\n%s", diff)
	}
}

// JSON bodies are read whatever curl sends by default; other declared types are refused by name.
func TestRequestContentTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := []byte(`{"command":"` + goodCommand + `"}`)
	tests := []struct {
		contentType string
		status      int
		names       string
	}{
		{"application/json", 200, ""},
		{"application/json; charset=utf-8", 200, ""},
		{"application/vnd.api+json", 200, ""},
		{"-", 200, ""},                                 // no Content-Type at all
		{"application/x-www-form-urlencoded", 200, ""}, // curl -d without -H
		{"text/plain", 415, `"text/plain"`},
		{"multipart/form-data; boundary=x", 415, "multipart/form-data"},
		{"not a media type", 400, "not a media type"},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			t.Parallel()
			res := b.do(t, request{method: "POST", path: "/ffmpeg/validate", body: body,
				header: map[string]string{"Content-Type": tt.contentType}})
			if res.status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.status, tt.status, res.body)
			}
			if tt.status != 200 {
				code, msg := res.errorBody(t)
				if string(code) != "VALIDATION_ERROR" || !strings.Contains(string(msg), tt.names) {
					t.Fatalf("error %s %s, want VALIDATION_ERROR naming %s", code, msg, tt.names)
				}
			}
		})
	}
}

// TestValidateEndpointCorpus runs the real-world commands and the attacks through POST
// /ffmpeg/validate, with and without an inputs map, and the shared corpus with its inputs: the
// endpoint answers what the validator does.
func TestValidateEndpointCorpus(t *testing.T) {
	t.Parallel()
	// Room for the corpus' inline inputs, up to one over the 64 KB limit.
	b := setup(t, setupOpts{maxJSONBody: 1 << 20})
	prefix := b.url + "/assets/"
	corpus, err := validatortest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		command string
		inputs  map[string]validator.Input
	}
	shared, err := validatortest.Runs()
	if err != nil {
		t.Fatal(err)
	}
	var runs []run
	for _, r := range shared {
		runs = append(runs, run{r.Command, r.Options.Inputs})
	}
	for _, c := range corpus {
		// The endpoint takes inputs; compute, timeout and outputFormat are a job's alone, and a
		// negative content size has no JSON form.
		expressible := c.Options.Compute == "" && c.Options.Timeout == 0 && c.Options.OutputFormat == "" && c.Options.AssetURLPrefix == ""
		for _, in := range c.Options.Inputs {
			expressible = expressible && in.ContentSize >= 0
		}
		if expressible {
			runs = append(runs, run{c.Command, c.Options.Inputs})
		}
	}
	for _, r := range runs {
		// A job's inputs for the request: a URL string, or content of the size the options say.
		jobInputs := map[string]any{}
		for name, in := range r.inputs {
			if in.Inline {
				jobInputs[name] = map[string]string{"content": strings.Repeat("x", in.ContentSize)}
			} else {
				jobInputs[name] = in.URL
			}
		}
		req := map[string]any{"command": r.command}
		if r.inputs != nil {
			req["inputs"] = jobInputs
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		res := b.do(t, request{method: "POST", path: "/ffmpeg/validate", body: body})
		if res.status != http.StatusOK {
			t.Fatalf("%q: status %d, body %s", r.command, res.status, res.body)
		}
		var got json.RawMessage
		res.data(t, &got)
		want, err := json.Marshal(validator.Validate(r.command, validator.Options{Inputs: r.inputs, AssetURLPrefix: prefix}))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("POST /ffmpeg/validate %s\n got  %s\n want %s", body, got, want)
		}
	}
}
