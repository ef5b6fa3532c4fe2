package problem_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

// TestRejectQuotesShortened holds a rejection to quoting at most validator.MaxQuoted bytes of a
// value (%q), whole characters, while other verbs and short values print as given.
func TestRejectQuotesShortened(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 199) + "é" + strings.Repeat("b", 64<<10)
	for _, tt := range []struct {
		name, format string
		arg          any
		want         string
	}{
		{"short", "key %q", "abc", `key "abc"`},
		{"at the cap", "key %q", strings.Repeat("a", validator.MaxQuoted), `key "` + strings.Repeat("a", validator.MaxQuoted) + `"`},
		{"long", "key %q", long, `key "` + strings.Repeat("a", 199) + `…"`},
		{"long, %s", "list %s", long, "list " + long},
		{"not a string", "n %d", 7, "n 7"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg := problem.Reject(problem.CodeValidation, tt.format, tt.arg).Error()
			if msg != tt.want || !utf8.ValidString(msg) {
				t.Errorf("got %d bytes %.80q…, want %d bytes %.80q…", len(msg), msg, len(tt.want), tt.want)
			}
		})
	}
}
