package destination_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/destination"
)

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, wantErr string
	}{
		{"default", destination.DefaultPath, ""},
		{"every placeholder", "{date}/{preset}/{job_id}-{name}.{ext}", ""},
		{"literal text", "exports/final/{name}", ""},
		{"empty", "", "is empty"},
		{"absolute", "/{job_id}/{name}", "absolute"},
		{"dot dot", "{job_id}/../{name}", `".." segment`},
		{"dot", "./{name}", `"." segment`},
		{"double slash", "{job_id}//{name}", "empty segment"},
		{"trailing slash", "{name}/", "empty segment"},
		{"unknown placeholder", "{job_id}/{account}/{name}", "{account} is not a placeholder"},
		{"unclosed", "{job_id/{name}", "without its }"},
		{"unopened", "job_id}/{name}", "without its {"},
		{"empty placeholder", "{}/{name}", "{} is not a placeholder"},
		{"no name", "{job_id}/{ext}", "does not use {name}"},
		{"backslash", `{job_id}\{name}`, "backslash"},
		{"control", "{job_id}\n{name}", "control character"},
		{"too long", strings.Repeat("a", destination.MaxPathLen) + "{name}", "at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := destination.ParseTemplate(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseTemplate(%q) = %v; want nil", tt.in, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseTemplate(%q) = %v; want an error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 11, 28, 23, 30, 0, 0, time.FixedZone("x", -3600))
	tests := []struct {
		name, prefix, tmpl string
		vars               destination.Vars
		want               string
	}{
		{"default", "", destination.DefaultPath, destination.Vars{JobID: "job_1", Name: "out.mp4"}, "job_1/out.mp4"},
		{"prefix", "media/", destination.DefaultPath, destination.Vars{JobID: "job_1", Name: "out.mp4"}, "media/job_1/out.mp4"},
		{"prefix without slash", "media", "{name}", destination.Vars{Name: "a.png"}, "media/a.png"},
		{"ext and date in UTC", "", "{date}/{job_id}.{ext}/{name}", destination.Vars{JobID: "job_1", Name: "clip.webm", Date: day}, "2026-11-29/job_1.webm/clip.webm"},
		{"no ext", "", "{ext}/{name}", destination.Vars{Name: "README"}, "README"},
		{"empty preset drops its segment", "", "{preset}/{name}", destination.Vars{Name: "out.mp4"}, "out.mp4"},
		{"preset", "", "{preset}/{name}", destination.Vars{Name: "out.mp4", Preset: "web-720p"}, "web-720p/out.mp4"},
		{"name in a subdirectory", "", "{job_id}/{name}", destination.Vars{JobID: "job_1", Name: "hls/seg_001.ts"}, "job_1/hls/seg_001.ts"},
		{"a value never climbs", "", "{preset}/{name}", destination.Vars{Name: "out.mp4", Preset: ".."}, "out.mp4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tp, err := destination.ParseTemplate(tt.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if got := destination.Key(tt.prefix, tp, tt.vars); got != tt.want {
				t.Fatalf("Key = %q; want %q", got, tt.want)
			}
		})
	}
}

// FuzzParseTemplate: a template is a client's text. Whatever it is, parsing never panics, and a
// template that parses expands, for any safe values, to a relative key without "." or ".."
// segments or empty ones.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{destination.DefaultPath, "{date}/{preset}/{job_id}-{name}.{ext}", "{", "}", "{{name}}", "../{name}", "a//{name}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := destination.ParseTemplate(s)
		if err != nil {
			return
		}
		if tp.String() != s {
			t.Fatalf("String() = %q; want %q", tp.String(), s)
		}
		k := tp.Expand(destination.Vars{JobID: "job_1", Name: "out.mp4", Date: time.Unix(0, 0)})
		if k == "" || strings.HasPrefix(k, "/") || len(k) > 2*destination.MaxPathLen+64*10 {
			t.Fatalf("template %q expands to %q", s, k)
		}
		for seg := range strings.SplitSeq(k, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("template %q expands to %q, with segment %q", s, k, seg)
			}
		}
	})
}
