package jobtype_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

type stubType struct{ name string }

func (s stubType) Name() string { return s.name }
func (s stubType) Prepare(jobtype.Request, jobtype.Env) (jobtype.Spec, error) {
	return jobtype.Spec{Class: job.ClassCPU, Timeout: time.Minute}, nil
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r, err := jobtype.NewRegistry(stubType{"ffmpeg"}, stubType{"caption.burn"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobtype.NewRegistry(stubType{"a"}, stubType{"a"}); err == nil {
		t.Fatal("duplicate type accepted")
	}
	if spec, err := r.Prepare(jobtype.Request{Type: "ffmpeg"}, jobtype.Env{}); err != nil || spec.Class != job.ClassCPU {
		t.Fatalf("Prepare: %+v %v", spec, err)
	}
	for _, tc := range []struct{ typ, want string }{
		{"", "type is required"},
		{"ffmpeg2", `type "ffmpeg2" is not a job type; one of: caption.burn, ffmpeg`},
	} {
		_, err := r.Prepare(jobtype.Request{Type: tc.typ}, jobtype.Env{})
		if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("type %q: %v, want VALIDATION_ERROR containing %q", tc.typ, err, tc.want)
		}
	}
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, wantErr string
	}{
		{"ok", `{"type":"ffmpeg","params":{"command":"ffmpeg"}}`, ""},
		{"ok with inputs", `{"type":"ffmpeg","inputs":{"a.srt":{"content":"x"}},"params":{}}`, ""},
		{"unknown field", `{"type":"ffmpeg","param":{}}`, `field "param" is not allowed`},
		{"wrong type", `{"type":7}`, "type must be a string, not number"},
		{"params not object", `{"type":"ffmpeg","params":[1]}`, "params must be an object"},
		{"inputs not object", `{"type":"ffmpeg","inputs":"x"}`, "inputs must be an object"},
		{"not an object", `[1,2]`, "body must be a JSON object"},
		{"empty", ``, "body is empty"},
		{"truncated", `{"type":"ff`, "truncated"},
		{"syntax", `{"type":}`, "not valid JSON"},
		{"trailing", `{"type":"ffmpeg"} {}`, "data after the JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := jobtype.DecodeRequest([]byte(tc.body))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("DecodeRequest: %v", err)
				}
				return
			}
			if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want VALIDATION_ERROR containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestDecodeRequestNulls leaves out the null members of inputs and params, nested ones too, and
// keeps a request with none byte for byte.
func TestDecodeRequestNulls(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, body, inputs, params string }{
		{"none", `{"type":"x","inputs":{"a":"u"},"params":{ "b" : "-f null -", "c": [null] }}`, `{"a":"u"}`, `{ "b" : "-f null -", "c": [null] }`},
		{"whole", `{"type":"x","inputs":null,"params":null}`, ``, ``},
		{"members", `{"type":"x","inputs":{"a":null,"b":{"url":"u","content":null}},"params":{"z":1,"y":null,"x":{"w":null,"v":"null"},"u":[null]}}`,
			`{"b":{"url":"u"}}`, `{"z":1,"x":{"v":"null"},"u":[null]}`},
		{"all", `{"type":"x","params":{"a":null}}`, ``, `{}`},
		{"spaced", `{"type":"x","params":{ "a" : null , "b" : "c" , "d" :null}}`, ``, `{"b":"c"}`},
		{"in arrays", `{"type":"x","params":{"l":[{"a":null,"b":[1, {"c":null}]}, null]}}`, ``, `{"l":[{"b":[1,{}]},null]}`},
		{"escaped keys", `{"type":"x","params":{"a\"b":null,"c\\":"d\"null"}}`, ``, `{"c\\":"d\"null"}`},
		{"huge number", `{"type":"x","params":{"a":null,"b":1e400,"c":123456789012345678901234567890}}`, ``, `{"b":1e400,"c":123456789012345678901234567890}`},
		{"deep", `{"type":"x","params":` + strings.Repeat(`{"a":`, 5000) + `null` + strings.Repeat(`}`, 5001),
			``, strings.Repeat(`{"a":`, 4999) + `{}` + strings.Repeat(`}`, 4999)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := jobtype.DecodeRequest([]byte(tt.body))
			if err != nil || string(req.Inputs) != tt.inputs || string(req.Params) != tt.params {
				t.Errorf("got inputs %s params %s %v; want %s and %s", req.Inputs, req.Params, err, tt.inputs, tt.params)
			}
		})
	}
}
