package jobtype_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

// TestDecodeStrictIntegralNumbers holds integer fields to JSON's numbers: one with a whole
// value is an integer however it is written, and reads back in plain decimal; any other is
// refused naming the field.
func TestDecodeStrictIntegralNumbers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		number  string
		want    int
		wantErr string
	}{
		{"480", 480, ""},
		{"480.0", 480, ""},
		{"480.000", 480, ""},
		{"4.8e2", 480, ""},
		{"4800E-1", 480, ""},
		{"48000e-2", 480, ""},
		{"1e2", 100, ""},
		{"-3.0", -3, ""},
		{"-0.0", 0, ""},
		{"0e5", 0, ""},
		{"480.5", 0, "params.n must be an integer, not number 480.5"},
		{"4.805e2", 0, "params.n must be an integer, not number 4.805e2"},
		{"4503599627370496.5", 0, "params.n must be an integer"},
		{"1e400", 0, "params.n must be an integer"},
		{`"480"`, 0, "params.n must be an integer, not string"},
	} {
		t.Run(tt.number, func(t *testing.T) {
			t.Parallel()
			var v struct {
				N   *int            `json:"n"`
				Raw json.RawMessage `json:"raw"`
			}
			err := jobtype.DecodeStrictAt("params.", []byte(`{"n": `+tt.number+`, "raw": {"x": [`+tt.number+`, "4.0"]}}`), &v)
			if tt.wantErr != "" {
				if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want VALIDATION_ERROR containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || v.N == nil || *v.N != tt.want {
				t.Fatalf("got %v %v, want %d", v.N, err, tt.want)
			}
			if want := `{"x": [` + jsonInt(tt.want) + `, "4.0"]}`; string(v.Raw) != want {
				t.Errorf("raw reads back %s, want %s", v.Raw, want)
			}
		})
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestHasFraction is the cheap pass that spares most bodies the decoder's: it must find every
// number written with a fraction or an exponent, and may pass over the rest.
func TestHasFraction(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body string
		want bool
	}{
		{`{"type": "ffmpeg", "params": {"timeout": 480, "ok": true, "no": false, "x": null}}`, false},
		{`{"command": "ffmpeg -ss 1.5 -t 2e1 in.mp4 out.mp4"}`, false},
		{`{"s": "a \" 1.5 \\", "n": 2}`, false},
		{`{"n": 480.0}`, true},
		{`{"n": 4e2}`, true},
		{`{"n": 4E2}`, true},
		{`[1, 2.5]`, true},
		{`{"s": "\\\\", "n": 1.0}`, true},
	} {
		if got := jobtype.HasFraction([]byte(tt.body)); got != tt.want {
			t.Errorf("HasFraction(%s) = %v, want %v", tt.body, got, tt.want)
		}
	}
}

// A body that is not JSON is not rewritten, so the byte its error names is the client's.
func TestSyntaxErrorOffsetAfterWholeNumbers(t *testing.T) {
	t.Parallel()
	body := `{"type":"ffmpeg","params":{"timeout": 1.000000000000000000000, "x": }}`
	_, err := jobtype.DecodeRequest([]byte(body))
	want := fmt.Sprintf("at byte %d", strings.Index(body, "}")+1)
	if problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want a VALIDATION_ERROR %s", err, want)
	}
}
