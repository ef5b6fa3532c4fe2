package jobtype_test

import (
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

func TestCheckDuplicateKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body    string
		wantKey string // empty: accepted
	}{
		{`{"type":"ffmpeg","params":{"command":"x"}}`, ""},
		{`{"type":"ffmpeg","type":"caption.burn"}`, "type"},
		{`{"params":{"command":"a","command":"b"}}`, "params.command"},
		{`{"jobs":[{"type":"a"},{"type":"a","type":"b"}]}`, "jobs[1].type"},
		{`{"a":{"x":1},"b":{"x":1}}`, ""},
		{`[{"k":1},{"k":1}]`, ""},
		{`{"a":[1,{"b":2,"b":3}]}`, "a[1].b"},
		{`{"a":"\u0062","b":1,"\u0062":2}`, "b"},
		{`not json`, ""},
		{`{"a":1`, ""},
	}
	for _, tt := range tests {
		err := jobtype.CheckDuplicateKeys([]byte(tt.body))
		if tt.wantKey == "" {
			if err != nil {
				t.Errorf("%s: %v, want accepted", tt.body, err)
			}
			continue
		}
		p, ok := problem.As(err)
		if !ok || p.Code != problem.CodeValidation || !strings.Contains(p.Message, `"`+tt.wantKey+`"`) {
			t.Errorf("%s: %v, want VALIDATION_ERROR naming %q", tt.body, err, tt.wantKey)
		}
	}
	// Keys that are one to encoding/json (which folds case, Unicode's "ſ" and Kelvin sign
	// included) are one key.
	for body, key := range map[string]string{
		`{"steps":["a"],"\u017fteps":["b"]}`: "ſteps",
		`{"command":"a","COMMAND":"b"}`:      "COMMAND",
		`{"\u212aeep":["a"],"keep":["b"]}`:   "keep",
	} {
		if err := jobtype.CheckDuplicateKeys([]byte(body)); err == nil || !strings.Contains(err.Error(), `"`+key+`"`) {
			t.Errorf("%s: %v, want a duplicate naming %q", body, err, key)
		}
	}
	// Strict decoding refuses them, with the request's prefix.
	var v struct{ Params map[string]any }
	err := jobtype.DecodeStrictAt("jobs[3].", []byte(`{"params":{"a":1,"a":2}}`), &v)
	if err == nil || !strings.Contains(err.Error(), `"jobs[3].params.a"`) {
		t.Errorf("DecodeStrictAt: %v", err)
	}
}

func FuzzCheckDuplicateKeys(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":[{"b":1}]}`, `[]`, `{`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := jobtype.CheckDuplicateKeys(b)
		if err != nil && problem.CodeOf(err) != problem.CodeValidation {
			t.Fatalf("code %s", problem.CodeOf(err))
		}
	})
}

// A key the decoder would take for a field it is not spelt as is refused, naming the field's
// spelling: every reader of the stored JSON matches keys exactly. A field whose tag names no
// key takes its key in any case, as encoding/json reads it.
func TestDecodeStrictHoldsKeysToTheirSpelling(t *testing.T) {
	t.Parallel()
	type inner struct {
		URL string `json:"url"`
	}
	type params struct {
		Command  string           `json:"command"`
		Preset   *string          `json:"preset,omitempty"`
		Inputs   map[string]inner `json:"inputs"`
		Steps    []inner          `json:"steps"`
		Untagged int
	}
	for _, tc := range []struct {
		body, want string // want: part of the message; empty: accepted
	}{
		{`{"command":"x","preset":"p","inputs":{"A":{"url":"u"}},"steps":[{"url":"u"}],"untagged":1}`, ""},
		{`{"PRESET":"../../evil"}`, `key "params.PRESET": keys are case-sensitive; write "preset"`},
		{`{"\u017fteps":[]}`, `write "steps"`},
		{`{"inputs":{"a":{"URL":"u"}}}`, `key "params.inputs.a.URL"`},
		{`{"steps":[{"Url":"u"}]}`, `key "params.steps[0].Url"`},
		{`{"command":"x","Command":"y"}`, `duplicate key "params.Command"`},
	} {
		var p params
		err := jobtype.DecodeStrictAt("params.", []byte(tc.body), &p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tc.body, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal saying %s", tc.body, err, tc.want)
		}
	}
}
