package runner

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Fonts is the set of font families libass can find through fontconfig inside the sandbox: the
// system's fonts under /usr. It implements captionburn.FontResolver.
type Fonts struct {
	families map[string]bool
}

// LoadFonts lists the installed families with fc-list once; a family is matched ignoring case.
func LoadFonts(ctx context.Context) (*Fonts, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "fc-list", "--format", "%{family}\t%{file}\n").Output()
	if err != nil {
		return nil, fmt.Errorf("fonts: fc-list: %w (install fontconfig)", err)
	}
	f := &Fonts{families: map[string]bool{}}
	for line := range strings.SplitSeq(string(out), "\n") {
		families, file, ok := strings.Cut(line, "\t")
		// Only /usr is mounted in the sandbox: a font elsewhere would not be found there.
		if !ok || !strings.HasPrefix(file, "/usr/") {
			continue
		}
		for fam := range strings.SplitSeq(families, ",") {
			if fam = strings.TrimSpace(fam); fam != "" {
				f.families[strings.ToLower(fam)] = true
			}
		}
	}
	return f, nil
}

// Has reports whether family is installed.
func (f *Fonts) Has(family string) bool {
	return f.families[strings.ToLower(strings.TrimSpace(family))]
}
