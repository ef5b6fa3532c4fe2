package sandbox

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestTailWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"short", 8, []string{"abc", "def"}, "abcdef"},
		{"keeps the end", 4, []string{"abc", "def", "gh"}, "efgh"},
		{"one big write", 4, []string{"abcdefgh"}, "efgh"},
		// "é" is two bytes; a cut through it drops the orphaned continuation byte.
		{"cut inside a rune", 4, []string{"xxé", "abc"}, "abc"},
		{"cut before a rune", 5, []string{"xxé", "abc"}, "éabc"},
		{"4-byte rune cut", 4, []string{"a😀b"}, "b"},
		{"4-byte rune whole", 5, []string{"a😀b"}, "😀b"},
	}
	for _, tt := range tests {
		w := NewTailWriter(tt.max)
		for _, s := range tt.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tt.name, n, err)
			}
		}
		got := w.Bytes()
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if len(got) > tt.max || !utf8.Valid(got) {
			t.Errorf("%s: tail %q is over %d bytes or invalid UTF-8", tt.name, got, tt.max)
		}
	}
	w := NewTailWriter(StderrTailBytes)
	for range 1000 {
		w.Write([]byte(strings.Repeat("é", 7) + "\n"))
	}
	if got := w.Bytes(); len(got) > StderrTailBytes || !utf8.Valid(got) {
		t.Errorf("long stream: %d bytes, valid = %v", len(got), utf8.Valid(got))
	}
}
