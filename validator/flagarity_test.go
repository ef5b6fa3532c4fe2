package validator

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestFlagArityMatchesFFmpeg asks the real FFmpeg, flag by flag, whether it reads a value after
// each allowlisted flag, and holds the table to its answer. A flag the table takes for a switch
// while FFmpeg reads a value shifts every word after it: `-f dash -autorotate 1 -i x` was an
// output named 1 to the checks and the DASH demuxer forced on input x to FFmpeg. FFmpeg says how
// it split the command at -v debug ("Reading option '-an' ... matched as option 'an' (disable
// audio) with argument '1'", the value a switch gets). A flag this FFmpeg does not know (one of
// a later release) ends its command there, so it shifts nothing.
func TestFlagArityMatchesFFmpeg(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatalf("ffmpeg (scripts/deps.sh installs it): %v", err)
	}
	const probe = "ARITYPROBE"
	argument := regexp.MustCompile(`with argument (?:'([^']*)'|([^ .]+))`)
	names := make([]string, 0, len(flagTable))
	for name := range flagTable {
		names = append(names, name)
	}
	slices.Sort(names)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		unknown []string
	)
	sem := make(chan struct{}, 4)
	for _, name := range names {
		spec := flagTable[name]
		if name == "v" || name == "loglevel" { // the probe's own -v debug: a level, checked below
			if !spec.takesValue() {
				t.Errorf("-%s: the table takes it for a switch", name)
			}
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out, _ := exec.Command("ffmpeg", "-v", "debug", "-hide_banner", "-"+name, probe).CombinedOutput()
			// What FFmpeg said of this option: from its "Reading option" to the next line that
			// reads one, or the end of the splitting.
			said, ok := strings.CutPrefix(string(out[max(0, strings.Index(string(out), "Reading option '-"+name+"'")):]), "Reading option '-"+name+"'")
			if !ok {
				t.Errorf("-%s: FFmpeg did not read it:\n%s", name, out)
				return
			}
			if end := strings.Index(said, "Reading option"); end >= 0 {
				said = said[:end]
			}
			if strings.Contains(said, "Unrecognized option") {
				mu.Lock()
				unknown = append(unknown, name)
				mu.Unlock()
				return
			}
			m := argument.FindStringSubmatch(said)
			if m == nil {
				t.Errorf("-%s: FFmpeg did not say how it read it:\n%s", name, out)
				return
			}
			if takes := m[1] == probe; takes != spec.takesValue() {
				t.Errorf("-%s: the table says it takes a value: %v; FFmpeg read %q after it", name, spec.takesValue(), m[1]+m[2])
			}
		})
	}
	wg.Wait()
	slices.Sort(unknown)
	t.Logf("%d flags checked; %d unknown to this FFmpeg (of later releases): %s", len(names), len(unknown), strings.Join(unknown, " "))
}
