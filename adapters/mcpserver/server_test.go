package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/adapters/mcpserver"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/validator"
)

// toolNames are the spec's six tools and validate_command, in the order tools/list gives them:
// by name.
var toolNames = []string{"get_account", "get_job", "get_preset", "get_queue", "list_destinations", "list_jobs", "list_presets", "probe_media", "save_preset", "set_job_priority", "submit_job", "upload_media", "validate_command"}

// call calls a tool and decodes its structured content into out (when not nil).
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res
}

// mustSucceed calls a tool that must not fail.
func mustSucceed(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	res := call(t, cs, name, args, out)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", name, args, text(res))
	}
	return res
}

// toolError calls a tool that must fail, and returns its { code, message }.
func toolError(t *testing.T, cs *mcp.ClientSession, name string, args any) mcpserver.ToolError {
	t.Helper()
	var te mcpserver.ToolError
	res := call(t, cs, name, args, &te)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, want an error: %s", name, args, text(res))
	}
	if !strings.HasPrefix(text(res), string(te.Code)+": "+te.Message) {
		t.Errorf("%s: text %q does not carry %s: %s", name, text(res), te.Code, te.Message)
	}
	return te
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestListTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			cs := mustConnect(t, b.url, b.key, p.version)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if len(tool.Description) < 100 || tool.InputSchema == nil || tool.OutputSchema == nil {
					t.Errorf("tool %s: description %q, input schema %v, output schema %v", tool.Name, tool.Description, tool.InputSchema, tool.OutputSchema)
				}
			}
			if diff := cmp.Diff(toolNames, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolsAnswerAsREST(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			cs := mustConnect(t, b.url, b.key, p.version)

			var acct mcpserver.Account
			mustSucceed(t, cs, "get_account", map[string]any{}, &acct)
			want := mcpserver.Account{ID: b.acct.ID, Plan: "free", CreatedAt: b.acct.CreatedAt.UnixMilli(),
				Limits:  mcpserver.Limits{RequestsPerMinute: 30, ExecutionCapSeconds: 300, Concurrency: 1, JobBytes: 4 << 30, JobFiles: 1000, StallSeconds: 60},
				Balance: billing.Cost(600),
				Usage:   mcpserver.Usage{Since: billing.MonthStart(b.h.Clock.Now()).UnixMilli(), Spent: billing.Cost(0)}}
			if diff := cmp.Diff(want, acct); diff != "" {
				t.Errorf("get_account (-want +got):\n%s", diff)
			}

			var up mcpserver.Upload
			mustSucceed(t, cs, "upload_media", map[string]any{"content": base64.StdEncoding.EncodeToString([]byte(srt)), "name": "subs.srt"}, &up)
			if up.URL != b.h.Uploads.URL(up.ID) || up.Size != int64(len(srt)) || up.Name != "subs.srt" {
				t.Errorf("upload_media answered %+v", up)
			}
			// A declared type is not taken: the bytes say what the upload is.
			var declared mcpserver.Upload
			mustSucceed(t, cs, "upload_media", map[string]any{"content": base64.StdEncoding.EncodeToString([]byte("<html><script>x</script>")),
				"name": "page.mp4", "contentType": "video/mp4"}, &declared)
			if declared.ContentType != "text/html; charset=utf-8" {
				t.Errorf("upload_media of HTML declared video/mp4 stored as %q", declared.ContentType)
			}
			var fetched mcpserver.Upload
			mustSucceed(t, cs, "upload_media", map[string]any{"url": b.media.URL + "/clip.srt"}, &fetched)
			if fetched.Name != "clip.srt" || fetched.ContentType != "application/x-subrip" || fetched.Size != int64(len(srt)) {
				t.Errorf("upload_media by url answered %+v", fetched)
			}

			var sub mcpserver.SubmittedJob
			res := mustSucceed(t, cs, "submit_job", map[string]any{"type": "ffmpeg",
				"inputs": map[string]any{"subs.srt": up.URL},
				"params": map[string]any{"command": "ffmpeg -f lavfi -i testsrc=duration=1 -vf subtitles=subs.srt out.mp4"}}, &sub)
			if sub.Status != job.StatusWaiting || !strings.HasPrefix(sub.ID, "job_") || !strings.Contains(text(res), "get_job") {
				t.Fatalf("submit_job answered %+v: %s", sub, text(res))
			}

			var got map[string]any
			mustSucceed(t, cs, "get_job", map[string]any{"id": sub.ID}, &got)
			rest, err := b.h.Jobs.Get(context.Background(), b.acct, sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asJSON(t, rest), got); diff != "" {
				t.Errorf("get_job is not GET /jobs/{id}'s data (-rest +mcp):\n%s", diff)
			}
			// With wait, as GET /jobs/{id}?wait=: no runner runs here, so the job is still
			// waiting when its second is up.
			var waited service.View
			mustSucceed(t, cs, "get_job", map[string]any{"id": sub.ID, "wait": 1}, &waited)
			if waited.ID != sub.ID || waited.Status != job.StatusWaiting {
				t.Errorf("get_job with wait answered %s %s, want %s waiting", waited.ID, waited.Status, sub.ID)
			}
			// A wait ends when the job does: cancelled while get_job waits, it answers cancelled.
			ended := make(chan service.View, 1)
			go func() {
				var v service.View
				if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_job",
					Arguments: map[string]any{"id": sub.ID, "wait": 60}}); err == nil && !res.IsError {
					raw, _ := json.Marshal(res.StructuredContent)
					_ = json.Unmarshal(raw, &v)
				}
				ended <- v
			}()
			for b.waits.Waiting() == 0 {
				time.Sleep(time.Millisecond) // a wait on state: get_job's wait on the job
			}
			if _, err := b.h.Cancel.Cancel(context.Background(), b.acct, sub.ID); err != nil {
				t.Fatal(err)
			}
			if v := <-ended; v.Status != job.StatusCancelled {
				t.Errorf("get_job waiting on the job answered %q at its cancel, want cancelled", v.Status)
			}

			var page mcpserver.JobPage
			mustSucceed(t, cs, "list_jobs", map[string]any{"type": "ffmpeg", "limit": 100}, &page)
			found := false
			for _, v := range page.Data {
				found = found || v.ID == sub.ID
			}
			if !found {
				t.Errorf("list_jobs does not list %s: %+v", sub.ID, page)
			}

			// No runner runs here, so probe_media answers with the job to poll. The submit gate
			// of this harness opens no private range, so the source is on a public name.
			var probe mcpserver.Probe
			res = mustSucceed(t, cs, "probe_media", map[string]any{"source": "https://media.example/clip.mp4"}, &probe)
			if probe.Status != job.StatusWaiting || probe.Data != nil || !strings.Contains(text(res), probe.JobID) {
				t.Errorf("probe_media answered %+v: %s", probe, text(res))
			}
		})
	}
}

// TestPriorityToolsAnswerAsREST: submit_job takes priority, set_job_priority answers what
// POST /jobs/{id}/priority does and get_queue what GET /queue does, in claim order. Each protocol
// gets a service of its own, so the queue it reads is its own.
func TestPriorityToolsAnswerAsREST(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			cs := mustConnect(t, b.url, b.key, p.version)
			submit := func(priority string) string {
				t.Helper()
				args := map[string]any{"type": "ffmpeg", "params": map[string]any{"command": "ffmpeg -f lavfi -i testsrc=duration=1 out.mp4"}}
				if priority != "" {
					args["priority"] = priority
				}
				var sub mcpserver.SubmittedJob
				mustSucceed(t, cs, "submit_job", args, &sub)
				return sub.ID
			}
			first, low, second := submit(""), submit("low"), submit("normal")
			for id, want := range map[string]job.Priority{first: job.PriorityNormal, low: job.PriorityLow, second: job.PriorityNormal} {
				var got service.View
				mustSucceed(t, cs, "get_job", map[string]any{"id": id}, &got)
				if got.Priority != want {
					t.Errorf("job %s has priority %q, want %q", id, got.Priority, want)
				}
			}

			// low, raised to normal, is claimed after the two normal jobs older than it...
			var raised map[string]any
			res := mustSucceed(t, cs, "set_job_priority", map[string]any{"id": low, "priority": "normal"}, &raised)
			rest, err := b.h.Jobs.Get(context.Background(), b.acct, low)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asJSON(t, rest), raised); diff != "" {
				t.Errorf("set_job_priority is not POST /jobs/{id}/priority's data (-rest +mcp):\n%s", diff)
			}
			if rest.Priority != job.PriorityNormal || !strings.Contains(text(res), "normal") {
				t.Errorf("set_job_priority left %s at %q: %s", low, rest.Priority, text(res))
			}
			// ...and lowered again it goes behind them.
			mustSucceed(t, cs, "set_job_priority", map[string]any{"id": first, "priority": "low"}, nil)

			var q struct {
				Data []map[string]any `json:"data"`
			}
			mustSucceed(t, cs, "get_queue", map[string]any{}, &q)
			entries, err := b.h.Jobs.Queue(context.Background(), b.acct, 0)
			if err != nil {
				t.Fatal(err)
			}
			var wantQ []map[string]any
			for _, e := range entries {
				wantQ = append(wantQ, asJSON(t, e))
			}
			if diff := cmp.Diff(wantQ, q.Data); diff != "" {
				t.Errorf("get_queue is not GET /queue's data (-rest +mcp):\n%s", diff)
			}
			var order []string
			for _, e := range entries {
				order = append(order, e.Job.ID)
			}
			if diff := cmp.Diff([]string{low, second, first}, order); diff != "" {
				t.Errorf("queue order (-want +got):\n%s", diff)
			}
			mustSucceed(t, cs, "get_queue", map[string]any{"limit": 1}, &q)
			if len(q.Data) != 1 || q.Data[0]["position"] != 1.0 {
				t.Errorf("get_queue with limit 1 answered %v", q.Data)
			}

			// A job no longer waiting keeps its priority.
			if _, err := b.h.Cancel.Cancel(context.Background(), b.acct, second); err != nil {
				t.Fatal(err)
			}
			te := toolError(t, cs, "set_job_priority", map[string]any{"id": second, "priority": "low"})
			if te.Code != problem.CodeConflict || !strings.Contains(te.Message, "cancelled") {
				t.Errorf("set_job_priority on a cancelled job: %s: %s, want CONFLICT naming its status", te.Code, te.Message)
			}
			if v, _ := b.h.Jobs.Get(context.Background(), b.acct, second); v.Priority != job.PriorityNormal {
				t.Errorf("the cancelled job's priority became %q", v.Priority)
			}
		})
	}
}

func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestToolErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{maxInline: 8})
	cs := mustConnect(t, b.url, b.key, "")
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		code     problem.Code
		contains string
	}{
		{"disallowed flag", "submit_job", map[string]any{"type": "ffmpeg", "params": map[string]any{
			"command": "ffmpeg -i https://example.com/a.mp4 -filter_script f.txt out.mp4"}}, problem.CodeValidation, "-filter_script"},
		{"unknown type", "submit_job", map[string]any{"type": "nope"}, problem.CodeValidation, `"nope"`},
		{"unknown param", "submit_job", map[string]any{"type": "ffmpeg", "params": map[string]any{
			"command": "ffmpeg -f lavfi -i testsrc out.mp4", "bogus": 1}}, problem.CodeValidation, "bogus"},
		{"no job", "get_job", map[string]any{"id": "job_missing"}, problem.CodeNotFound, "job_missing"},
		{"no job, waited for", "get_job", map[string]any{"id": "job_missing", "wait": 30}, problem.CodeNotFound, "job_missing"},
		{"wait too long", "get_job", map[string]any{"id": "job_missing", "wait": 61}, problem.CodeValidation, "wait 61 must be a whole number of seconds from 0 to 60"},
		{"wait negative", "get_job", map[string]any{"id": "job_missing", "wait": -1}, problem.CodeValidation, "wait -1"},
		{"wait not a number", "get_job", map[string]any{"id": "job_missing", "wait": "soon"}, problem.CodeValidation, "wait"},
		{"unknown priority", "submit_job", map[string]any{"type": "ffmpeg", "priority": "urgent", "params": map[string]any{
			"command": "ffmpeg -f lavfi -i testsrc out.mp4"}}, problem.CodeValidation, `priority must be one of low, normal, high; got "urgent"`},
		{"high priority on Free", "submit_job", map[string]any{"type": "ffmpeg", "priority": "high", "params": map[string]any{
			"command": "ffmpeg -f lavfi -i testsrc out.mp4"}}, problem.CodePlanLimit, "priority high needs the Pro plan"},
		{"priority of no job", "set_job_priority", map[string]any{"id": "job_missing", "priority": "low"}, problem.CodeNotFound, "job_missing"},
		{"priority without id", "set_job_priority", map[string]any{"id": "", "priority": "low"}, problem.CodeValidation, "id is required"},
		{"missing priority", "set_job_priority", map[string]any{"id": "job_missing"}, problem.CodeValidation, "priority"},
		{"unknown priority change", "set_job_priority", map[string]any{"id": "job_missing", "priority": "urgent"}, problem.CodeValidation, `"urgent"`},
		{"high priority change on Free", "set_job_priority", map[string]any{"id": "job_missing", "priority": "high"}, problem.CodePlanLimit, "Pro plan"},
		{"queue limit too large", "get_queue", map[string]any{"limit": 1001}, problem.CodeValidation, "limit 1001 must be from 1 to 1000"},
		{"queue limit negative", "get_queue", map[string]any{"limit": -1}, problem.CodeValidation, "limit -1"},
		{"bad status", "list_jobs", map[string]any{"status": "done"}, problem.CodeValidation, `"done"`},
		{"both sources", "upload_media", map[string]any{"url": "https://example.com/a", "content": "aGk="}, problem.CodeValidation, "exactly one"},
		{"too large", "upload_media", map[string]any{"content": base64.StdEncoding.EncodeToString(make([]byte, 9))}, problem.CodePayloadTooLarge, "8 byte"},
		{"not base64", "upload_media", map[string]any{"content": "%%%"}, problem.CodeValidation, "base64"},
		{"loopback url", "upload_media", map[string]any{"url": "https://10.1.2.3/x"}, problem.CodeValidation, "private, loopback"},
		{"plain http", "upload_media", map[string]any{"url": "http://example.com/x"}, problem.CodeValidation, "https"},
		{"bad name", "upload_media", map[string]any{"content": "aGk=", "name": "../x"}, problem.CodeValidation, "plain file name"},
		{"probe local file", "probe_media", map[string]any{"source": "file:/etc/passwd"}, problem.CodeValidation, "file:/etc/passwd"},
		{"validate malformed inputs", "validate_command", map[string]any{"command": "ffmpeg -i a.mp4 out.mp4", "inputs": map[string]any{"a.mp4": 5}}, problem.CodeValidation, "inputs.a.mp4"},
		// Arguments that break the tool's input schema are refused the same way, naming the argument.
		{"argument of the wrong type", "get_job", map[string]any{"id": 5}, problem.CodeValidation, "id"},
		{"missing argument", "get_job", map[string]any{}, problem.CodeValidation, "id"},
		{"unknown argument", "list_jobs", map[string]any{"colour": "red"}, problem.CodeValidation, "colour"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			te := toolError(t, cs, tc.tool, tc.args)
			if te.Code != tc.code || !strings.Contains(te.Message, tc.contains) {
				t.Errorf("got %s: %s, want %s containing %q", te.Code, te.Message, tc.code, tc.contains)
			}
		})
	}
}

// TestValidateCommand: validate_command answers what POST /ffmpeg/validate does.
func TestValidateCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs := mustConnect(t, b.url, b.key, "")
	tests := []struct {
		name   string
		args   map[string]any
		want   mcpserver.Validation
		inputs map[string]validator.Input
		// valid and refusal, when set, are the answer expected besides the native one's.
		valid   bool
		refusal string
	}{
		{name: "required inputs", args: map[string]any{"command": "ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4"}},
		{name: "with inputs", args: map[string]any{"command": "ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4",
			"inputs": map[string]any{"in.mp4": "https://example.com/a.mp4", "s.srt": map[string]any{"content": "1"}}},
			inputs: map[string]validator.Input{"in.mp4": {URL: "https://example.com/a.mp4"}, "s.srt": {Inline: true, ContentSize: 1}}},
		{name: "invalid", args: map[string]any{"command": "ffmpeg -i /etc/passwd out.mp4"}},
		{name: "input in the operator's range", args: map[string]any{"command": "ffmpeg -i in.mp4 out.mp4",
			"inputs": map[string]any{"in.mp4": "https://127.0.0.1:8443/a.mp4"}},
			inputs: map[string]validator.Input{"in.mp4": {URL: "https://127.0.0.1:8443/a.mp4"}}, valid: true},
		{name: "input outside the operator's range", args: map[string]any{"command": "ffmpeg -i in.mp4 out.mp4",
			"inputs": map[string]any{"in.mp4": "https://10.0.0.1/a.mp4"}},
			inputs: map[string]validator.Input{"in.mp4": {URL: "https://10.0.0.1/a.mp4"}}, refusal: "non-public address 10.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got mcpserver.Validation
			mustSucceed(t, cs, "validate_command", tc.args, &got)
			r := validator.Validate(tc.args["command"].(string), validator.Options{Inputs: tc.inputs, AssetURLPrefix: b.url + "/assets/",
				AllowPrivateNetworks: allowed})
			want := mcpserver.Validation{Valid: r.Valid, Args: r.Args, InferredOutputFormat: r.InferredOutputFormat, RequiredInputs: r.RequiredInputs, Error: r.Error}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("validate_command (-native +mcp):\n%s", diff)
			}
			if (tc.valid && !got.Valid) || (tc.refusal != "" && (got.Valid || !strings.Contains(got.Error, tc.refusal))) {
				t.Errorf("validate_command answered valid %v, error %q", got.Valid, got.Error)
			}
		})
	}
}

// post sends one raw JSON-RPC request to the endpoint.
func post(t *testing.T, target string, header map[string]string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		header string
	}{
		{"no header", ""},
		{"basic", "Basic dXNlcjpwYXNz"},
		{"wrong key", "Bearer mj_live_wrongwrongwrong"},
		{"not a key", "Bearer x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tc.header != "" {
				h["Authorization"] = tc.header
			}
			resp := post(t, b.url, h)
			var e struct {
				Error mcpserver.ToolError `json:"error"`
			}
			body, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusUnauthorized ||
				e.Error.Code != problem.CodeUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("got %d %q WWW-Authenticate %q, want 401 UNAUTHORIZED with a Bearer challenge", resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("SDK client with a wrong key", func(t *testing.T) {
		t.Parallel()
		for _, p := range protocols {
			if _, err := connect(t, b.url, "mj_wrong", p.version); err == nil {
				t.Errorf("%s: connected with a wrong key", p.name)
			}
		}
	})
}

func TestDNSRebindingProtection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	auth := "Bearer " + b.key
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"loopback host", map[string]string{"Authorization": auth}, http.StatusOK},
		{"localhost name", map[string]string{"Authorization": auth, "Host": "localhost"}, http.StatusOK},
		{"rebound host", map[string]string{"Authorization": auth, "Host": "evil.example:80"}, http.StatusForbidden},
		{"rebound host without a key", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"cross-origin browser", map[string]string{"Authorization": auth, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if resp := post(t, b.url, tc.header); resp.StatusCode != tc.want {
				body, _ := io.ReadAll(resp.Body)
				t.Errorf("got %d %s, want %d", resp.StatusCode, body, tc.want)
			}
		})
	}
}

// TestJSONRPCErrors: what the protocol refuses is answered in JSON-RPC, not plain text.
func TestJSONRPCErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantID     string
		wantCode   int
	}{
		{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"tools/nope"}`, http.StatusOK, "7", -32601},
		{"not JSON", `not json`, http.StatusBadRequest, "null", -32700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodPost, b.url, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+b.key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var got struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			raw, _ := io.ReadAll(res.Body)
			if err := json.Unmarshal(raw, &got); err != nil || res.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q %s: not a JSON-RPC answer: %v", res.StatusCode, res.Header.Get("Content-Type"), raw, err)
			}
			if res.StatusCode != tt.wantStatus || got.JSONRPC != "2.0" || string(got.ID) != tt.wantID ||
				got.Error.Code != tt.wantCode || got.Error.Message == "" {
				t.Errorf("%d %s, want status %d, id %s, code %d", res.StatusCode, raw, tt.wantStatus, tt.wantID, tt.wantCode)
			}
		})
	}
	// Tools still work through the same path.
	cs := mustConnect(t, b.url, b.key, "")
	mustSucceed(t, cs, "get_account", map[string]any{}, nil)
}
