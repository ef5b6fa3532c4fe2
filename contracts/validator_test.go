package contracts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/core/problem"
)

func newValidator(t *testing.T) *contracts.ResponseValidator {
	t.Helper()
	v, err := contracts.NewResponseValidator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSampleResponses(t *testing.T) {
	t.Parallel()
	v := newValidator(t)
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	unauthorized := http.Header{"Content-Type": {"application/json"}, "Www-Authenticate": {"Bearer"}}
	const complete = `{"data":{"id":"job_a","type":"ffmpeg","status":"complete","createdAt":1,"completedAt":3,
		"output":{"data":null,"file":{"url":"https://x/dl/job_a?token=t","path":"out.mp4","type":"video","size":10,
		"meta":{"format":"mp4","width":640,"height":360,"durationMs":1000}},
		"files":[{"url":"https://x/dl/job_a?token=t","path":"out.mp4","type":"video","size":10}],"expiresAt":5},
		"cost":{"amount":3,"currency":"credits","formatted":"3 credits"}}}`
	tests := []struct {
		name    string
		method  string
		target  string
		status  int
		header  http.Header
		body    string
		wantErr bool
	}{
		{"submit", "POST", "/jobs", 201, http.Header{"Content-Type": {"application/json"}, "Location": {"/jobs/job_a"}},
			`{"data":{"id":"job_a","status":"waiting"}}`, false},
		{"submit with an extra field", "POST", "/jobs", 201, jsonCT, `{"data":{"id":"job_a","status":"waiting","x":1}}`, true},
		{"submit with a bad status", "POST", "/jobs", 201, jsonCT, `{"data":{"id":"job_a","status":"queued"}}`, true},
		{"complete job", "GET", "/jobs/job_a", 200, jsonCT, complete, false},
		{"failed job", "GET", "/jobs/job_a", 200, jsonCT, `{"data":{"id":"job_a","type":"ffmpeg","status":"failed","createdAt":1,
			"error":{"code":"RUNNER_ERROR","message":"ffmpeg exited 1","detail":"tail","retryable":false}}}`, false},
		{"failed job without detail", "GET", "/jobs/job_a", 200, jsonCT, `{"data":{"id":"job_a","type":"ffmpeg","status":"failed","createdAt":1,
			"error":{"code":"RUNNER_LOST","message":"lost","detail":null,"retryable":true}}}`, false},
		{"data-only output", "GET", "/jobs/job_a", 200, jsonCT, `{"data":{"id":"job_a","type":"extract.metadata","status":"complete","createdAt":1,
			"output":{"data":{"duration":1},"file":null,"files":[],"expiresAt":null}}}`, false},
		{"list", "GET", "/jobs?limit=1", 200, jsonCT, `{"data":[],"pagination":{"nextCursor":null}}`, false},
		{"list without pagination", "GET", "/jobs", 200, jsonCT, `{"data":[]}`, true},
		{"validate ok", "POST", "/ffmpeg/validate", 200, jsonCT, `{"data":{"valid":true,"args":["-i","a.mp4","b.mp4"],"inferredOutputFormat":"mp4"}}`, false},
		{"validate rejected", "POST", "/ffmpeg/validate", 200, jsonCT, `{"data":{"valid":false,"error":"flag -x is not allowed"}}`, false},
		{"validate mixed", "POST", "/ffmpeg/validate", 200, jsonCT, `{"data":{"valid":false,"args":[]}}`, true},
		{"error envelope", "GET", "/jobs/job_a", 404, jsonCT, `{"error":{"code":"NOT_FOUND","message":"job not found"}}`, false},
		{"unknown code", "GET", "/jobs/job_a", 404, jsonCT, `{"error":{"code":"NOPE","message":"x"}}`, true},
		{"undocumented status", "GET", "/jobs/job_a", 418, jsonCT, `{"error":{"code":"NOT_FOUND","message":"x"}}`, true},
		{"401 with WWW-Authenticate", "GET", "/account", 401, unauthorized, `{"error":{"code":"UNAUTHORIZED","message":"x"}}`, false},
		{"401 without WWW-Authenticate", "GET", "/account", 401, jsonCT, `{"error":{"code":"UNAUTHORIZED","message":"x"}}`, true},
		{"download", "GET", "/dl/job_a?token=t", 200, http.Header{"Content-Type": {"video/mp4"}, "Content-Length": {"10"}}, "0123456789", false},
		{"segment", "GET", "/v/job_a/tok/seg_001.ts", 206, http.Header{"Content-Type": {"video/mp2t"}, "Content-Range": {"bytes 0-1/10"}}, "01", false},
		{"unknown path", "GET", "/nope", 404, jsonCT, `{"error":{"code":"NOT_FOUND","message":"no route GET /nope"}}`, false},
		{"unknown path, not JSON", "GET", "/nope", 404, http.Header{"Content-Type": {"text/plain"}}, "404 page not found", true},
		{"wrong method", "DELETE", "/jobs", 405, jsonCT, `{"error":{"code":"VALIDATION_ERROR","message":"no"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tt.method, "http://127.0.0.1:8080"+tt.target, nil)
			err := v.ValidateBody(req, tt.status, tt.header, []byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ValidateBody error = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// The document's code enum is the code table of core/job.
func TestCodeEnumIsTheCodeTable(t *testing.T) {
	t.Parallel()
	doc := newValidator(t).Document()
	var got []string
	for _, c := range doc.Components.Schemas["Code"].Value.Enum {
		got = append(got, c.(string))
	}
	var want []string
	for _, c := range problem.Codes() {
		want = append(want, string(c))
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Code enum differs from problem.Codes() (-want +got):\n%s", diff)
	}
}

// Every error response of every operation is the error envelope.
func TestErrorResponsesUseTheEnvelope(t *testing.T) {
	t.Parallel()
	doc := newValidator(t).Document()
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				if status < "400" {
					continue
				}
				mt := resp.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/ErrorEnvelope" {
					t.Errorf("%s %s %s: not the ErrorEnvelope", method, path, status)
				}
			}
		}
	}
}
