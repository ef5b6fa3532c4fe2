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
