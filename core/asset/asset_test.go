package asset_test

import (
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/problem"
)

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"clip.mp4", "subs en.srt", "é.wav", strings.Repeat("a", 255)} {
		if err := asset.CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{".", "..", "a/b", `a\b`, "../etc/passwd", "x\ny", "nul\x00", "bad\uFFFD", strings.Repeat("a", 256)} {
		if err := asset.CheckName(bad); problem.CodeOf(err) != problem.CodeValidation {
			t.Errorf("CheckName(%q) = %v, want VALIDATION_ERROR", bad, err)
		}
	}
}
