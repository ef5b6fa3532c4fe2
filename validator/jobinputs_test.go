package validator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseJobInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string
		want    map[string]Input
		wantErr string
	}{
		{name: "absent", json: ``},
		{name: "null", json: `null`},
		{name: "empty", json: `{}`, want: map[string]Input{}},
		{name: "url shorthand", json: `{"in.mp4":"https://h/a.mp4"}`, want: map[string]Input{"in.mp4": {URL: "https://h/a.mp4"}}},
		{name: "url object", json: `{"in.mp4":{"url":"https://h/a.mp4"}}`, want: map[string]Input{"in.mp4": {URL: "https://h/a.mp4"}}},
		{name: "content", json: `{"s.srt":{"content":"1\n00:00:00,000 --> 00:00:01,000\nhé\n"}}`, want: map[string]Input{"s.srt": {Inline: true, ContentSize: 36}}},
		{name: "not an object", json: `[1]`, wantErr: "inputs must be an object"},
		{name: "number", json: `{"a":5}`, wantErr: "inputs.a must be a URL string"},
		{name: "both", json: `{"a":{"url":"https://h/a","content":"x"}}`, wantErr: "inputs.a has both url and content"},
		{name: "neither", json: `{"a":{}}`, wantErr: "inputs.a needs url or content"},
		{name: "unknown field", json: `{"a":{"path":"/etc/passwd"}}`, wantErr: "inputs.a must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseJobInputs([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseJobInputs(%s) error %v, want %q", tt.json, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("ParseJobInputs(%s) (-want +got):\n%s", tt.json, diff)
			}
		})
	}
}
