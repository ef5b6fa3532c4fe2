package sandboxtest

import (
	"bytes"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// TestStderr: a program's standard error reaches Spec.Stderr whole, what its filters print
// included (an analysis job reads it there), while Result.StderrTail still keeps its end.
func TestStderr(t *testing.T, f Features, newRunner Constructor) {
	t.Parallel()
	var stderr bytes.Buffer
	// Verbose logging makes far more than the tail's 2 KB; volumedetect prints its measure last.
	res := run(t, newRunner(t), sandbox.Spec{Stderr: &stderr, Args: []string{"-nostdin", "-loglevel", "verbose",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-af", "volumedetect", "-f", "null", "-"}})

	if res.ExitCode != 0 {
		t.Fatalf("ExitCode = %d: %s", res.ExitCode, res.StderrTail)
	}
	got := stderr.Bytes()
	if len(got) <= sandbox.StderrTailBytes {
		t.Errorf("Spec.Stderr got %d bytes, want the whole stderr, more than the tail's %d", len(got), sandbox.StderrTailBytes)
	}
	if !bytes.HasSuffix(got, res.StderrTail) || len(res.StderrTail) == 0 {
		t.Errorf("StderrTail is not the end of what Spec.Stderr got:\ntail: %q\nend: %q", res.StderrTail, got[max(0, len(got)-200):])
	}
	for _, want := range []string{"Parsed_volumedetect_0", "mean_volume:", "max_volume:"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("Spec.Stderr lacks %q:\n%s", want, got[max(0, len(got)-2000):])
		}
	}
}
