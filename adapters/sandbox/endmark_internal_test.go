package sandbox

import (
	"bytes"
	"testing"
)

// TestEndWriter: the launcher's end mark is found wherever the stream's writes split it, taken
// out, and what came before it is passed on whole; on stderr the exit code after it is read.
func TestEndWriter(t *testing.T) {
	t.Parallel()
	mark := NewEndMark()
	for _, tc := range []struct {
		name     string
		writes   []string
		withCode bool
		want     string
		code     int
		ended    bool
	}{
		{"mark alone", []string{mark}, false, "", -1, true},
		{"output then mark", []string{"progress=end\n", mark}, false, "progress=end\n", -1, true},
		{"mark split across writes", []string{"abc" + mark[:5], mark[5:20], mark[20:]}, false, "abc", -1, true},
		{"output and mark in one write", []string{"tail of the log" + mark + "137\n"}, true, "tail of the log", 137, true},
		{"code split from the mark", []string{"x" + mark, "1", "\n"}, true, "x", 1, true},
		{"no mark: output held back is flushed", []string{"last bytes"}, false, "last bytes", -1, false},
		{"a part of the mark is output", []string{mark[:10] + "!", "more"}, false, mark[:10] + "!more", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := &endWriter{next: &out}
			ended := false
			e.expect(mark, tc.withCode, func() { ended = true })
			for _, w := range tc.writes {
				if n, err := e.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if !ended {
				e.flush()
			}
			if ended != tc.ended || out.String() != tc.want {
				t.Errorf("ended %v, passed on %q; want %v, %q", ended, out.String(), tc.ended, tc.want)
			}
			if tc.withCode && e.exitCode() != tc.code {
				t.Errorf("exit code %d, want %d", e.exitCode(), tc.code)
			}
		})
	}
}
