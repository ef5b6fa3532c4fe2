package validator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		want    []string
		wantErr string // substring of the message; "" when the split succeeds
	}{
		{name: "plain words", command: "ffmpeg -i a.mp4 out.mp4", want: []string{"-i", "a.mp4", "out.mp4"}},
		{name: "runs of blanks", command: "ffmpeg \t -y   out.mp4 ", want: []string{"-y", "out.mp4"}},
		{name: "single quotes keep everything", command: `ffmpeg -vf 'a;b|c&d>e<f$(g)` + "`h`" + `' o.mp4`, want: []string{"-vf", "a;b|c&d>e<f$(g)`h`", "o.mp4"}},
		{name: "double quotes", command: `ffmpeg -metadata "title=A B" o.mp4`, want: []string{"-metadata", "title=A B", "o.mp4"}},
		{name: "escapes in double quotes", command: `ffmpeg -vf "a\"b\\c\$d\e" o`, want: []string{"-vf", `a"b\c$d\e`, "o"}},
		{name: "backslash outside quotes", command: `ffmpeg a\ b\;c o`, want: []string{"a b;c", "o"}},
		{name: "adjacent quotes join", command: `ffmpeg 'a'"b"c o`, want: []string{"abc", "o"}},
		{name: "empty quoted word", command: `ffmpeg '' o`, want: []string{"", "o"}},
		{name: "literal dollar", command: `ffmpeg "a $ b" a$ o`, want: []string{"a $ b", "a$", "o"}},
		{name: "dollar before closing quote", command: `ffmpeg "cost$" o`, want: []string{"cost$", "o"}},
		{name: "hash inside word", command: "ffmpeg -map 0:#0x101 o", want: []string{"-map", "0:#0x101", "o"}},
		{name: "brackets are literal", command: "ffmpeg -map [v] o", want: []string{"-map", "[v]", "o"}},
		{name: "only ffmpeg", command: "ffmpeg", want: []string{}},

		{name: "semicolon", command: "ffmpeg -i a; id", wantErr: `shell operator ";"`},
		{name: "pipe", command: "ffmpeg -i a | sh", wantErr: `shell operator "|"`},
		{name: "or", command: "ffmpeg -i a || sh", wantErr: `shell operator "||"`},
		{name: "and", command: "ffmpeg -i a && sh", wantErr: `shell operator "&&"`},
		{name: "redirect", command: "ffmpeg -i a > b", wantErr: `shell operator ">"`},
		{name: "fd redirect", command: "ffmpeg -i a >& b", wantErr: `shell operator ">&"`},
		{name: "input redirect", command: "ffmpeg < a", wantErr: `shell operator "<"`},
		{name: "subshell", command: "ffmpeg (a)", wantErr: `shell operator "("`},
		{name: "backtick", command: "ffmpeg `id`", wantErr: "command substitution"},
		{name: "dollar paren", command: "ffmpeg $(id)", wantErr: `"$("`},
		{name: "dollar brace", command: "ffmpeg ${A}", wantErr: `"${"`},
		{name: "dollar name", command: "ffmpeg $HOME", wantErr: `"$HOME"`},
		{name: "dollar digit", command: "ffmpeg a$1", wantErr: `"$1"`},
		{name: "dollar special", command: "ffmpeg a$$", wantErr: `"$$"`},
		{name: "dollar in double quotes", command: `ffmpeg "$(id)"`, wantErr: `"$("`},
		{name: "backtick in double quotes", command: "ffmpeg \"`id`\"", wantErr: "command substitution"},
		{name: "ansi c quote", command: `ffmpeg $'\x41'`, wantErr: `"$'"`},
		{name: "newline", command: "ffmpeg -i a\nid", wantErr: "newline"},
		{name: "nul", command: "ffmpeg a\x00b", wantErr: "control character"},
		{name: "control in quotes", command: "ffmpeg 'a\x07'", wantErr: "control character"},
		{name: "invalid utf8", command: "ffmpeg \xff", wantErr: "UTF-8"},
		{name: "unterminated single", command: "ffmpeg 'a", wantErr: "unterminated single"},
		{name: "unterminated double", command: `ffmpeg "a`, wantErr: "unterminated double"},
		{name: "trailing backslash", command: `ffmpeg a\`, wantErr: "trailing backslash"},
		{name: "comment", command: "ffmpeg a #b", wantErr: "comment"},
		{name: "tilde", command: "ffmpeg ~/a", wantErr: "tilde"},
		{name: "empty", command: "", wantErr: "empty"},
		{name: "not ffmpeg", command: "ffprobe a", wantErr: `not "ffprobe"`},
		{name: "path to ffmpeg", command: "/usr/bin/ffmpeg a", wantErr: "must start with ffmpeg"},
		{name: "too long", command: "ffmpeg " + strings.Repeat("a", MaxCommandBytes), wantErr: "byte limit"},
		{name: "too many args", command: "ffmpeg" + strings.Repeat(" -y", MaxArgs+1), wantErr: "more than 512 arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := split(tt.command)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("split(%q) = %q, want error containing %q", tt.command, got, tt.wantErr)
				}
				if err.Layer != layerSyntax || !strings.Contains(err.Message, tt.wantErr) {
					t.Fatalf("split(%q) error = %s %q, want syntax error containing %q", tt.command, err.Layer, err.Message, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("split(%q) error = %q", tt.command, err.Message)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("split(%q) mismatch (-want +got):\n%s", tt.command, diff)
			}
		})
	}
}

func TestSplitMaxArgsAccepted(t *testing.T) {
	t.Parallel()
	got, err := split("ffmpeg" + strings.Repeat(" -y", MaxArgs))
	if err != nil || len(got) != MaxArgs {
		t.Fatalf("split with %d arguments: %d words, error %v", MaxArgs, len(got), err)
	}
}
