package extractmetadata_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/problem"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func TestPrepare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, inputs, params string
		assets               []string
		wantErr              string
		allow                []netip.Prefix
	}{
		{name: "url", inputs: `{"source":"https://example.com/a.mp4"}`},
		{name: "asset, empty params", inputs: `{"source":"https://api.test/assets/ast_9/content"}`, params: `{}`, assets: []string{"ast_9"}},
		{name: "missing", inputs: `{}`, wantErr: "inputs.source is required"},
		{name: "param", inputs: `{"source":"https://example.com/a.mp4"}`, params: `{"deep":true}`, wantErr: `"params.deep"`},
		{name: "local", inputs: `{"source":"file:/etc/passwd"}`, wantErr: "file:/etc/passwd"},
		{name: "loopback", inputs: `{"source":"https://127.0.0.1:8443/a.mp4"}`, wantErr: "non-public address 127.0.0.1 (loopback)"},
		{name: "loopback the operator opened", inputs: `{"source":"https://127.0.0.1:8443/a.mp4"}`, allow: loopback},
		{name: "private outside the opened range", inputs: `{"source":"https://10.0.0.1/a.mp4"}`, allow: loopback, wantErr: "10.0.0.1"},
		{name: "other input", inputs: `{"source":"https://example.com/a.mp4","x":"https://example.com/b"}`, wantErr: "inputs.x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := jobtype.Request{Type: extractmetadata.Name, Inputs: json.RawMessage(tc.inputs)}
			if tc.params != "" {
				req.Params = json.RawMessage(tc.params)
			}
			spec, err := extractmetadata.Type{}.Prepare(req, jobtype.Env{AssetURLPrefix: "https://api.test/assets/", AllowPrivateNetworks: tc.allow})
			if tc.wantErr != "" {
				if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want VALIDATION_ERROR containing %q", err, tc.wantErr)
				}
				return
			}
			if diff := cmp.Diff(jobtype.Spec{Class: job.ClassCPU, Timeout: extractmetadata.Timeout, Assets: tc.assets}, spec); err != nil || diff != "" {
				t.Fatal(err, diff)
			}
		})
	}
}
