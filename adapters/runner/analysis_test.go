package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fp(f float64) *float64 { return &f }

// parseLog runs log through an analysisLog in writes of chunk bytes (all at once when 0).
func parseLog(log []byte, chunk, max int) Analysis {
	l := newAnalysisLog(max)
	for len(log) > 0 {
		n := len(log)
		if chunk > 0 {
			n = min(chunk, n)
		}
		if w, err := l.Write(log[:n]); w != n || err != nil {
			panic("analysisLog.Write failed")
		}
		log = log[n:]
	}
	return l.analysis()
}

// TestAnalysisOfRealLogs parses the stderr of real FFmpeg runs (testdata/analysis/README.md
// says how each was made): 2 s of tone, 1.5 s of silence, 2 s of tone; 1 s of test pattern,
// 1 s of black, 1 s of test pattern.
func TestAnalysisOfRealLogs(t *testing.T) {
	t.Parallel()
	empty := func() Analysis { return newLogParser().a }
	tests := []struct {
		file string
		want func(a *Analysis)
	}{
		{"loudnorm.log", func(a *Analysis) {
			a.Loudnorm = []map[string]any{{"inputI": -22.19, "inputTp": -18.06, "inputLra": 1.4, "inputThresh": -32.33,
				"outputI": -15.17, "outputTp": -10.51, "outputLra": 2.4, "outputThresh": -25.28,
				"normalizationType": "dynamic", "targetOffset": -0.83}}
		}},
		{"ebur128.log", func(a *Analysis) {
			a.EBUR128 = []EBUR128{{Integrated: fp(-22.1), IntegratedThreshold: fp(-32.2), LoudnessRange: fp(1.2),
				LoudnessRangeThreshold: fp(-44.4), LoudnessRangeLow: fp(-24.8), LoudnessRangeHigh: fp(-23.5), TruePeak: fp(-18.1)}}
		}},
		{"silencedetect.log", func(a *Analysis) {
			a.Silences = []Interval{{Start: 2, End: fp(3.50002), Duration: fp(1.50002)}}
		}},
		{"volumedetect.log", func(a *Analysis) {
			a.Volumes = []Volume{{MeanVolume: fp(-22.5), MaxVolume: fp(-18.1)}}
		}},
		{"blackdetect.log", func(a *Analysis) {
			a.Blacks = []Interval{{Start: 1, End: fp(2), Duration: fp(1)}}
		}},
		{"scene.log", func(a *Analysis) {
			a.Frames = []Frame{{N: 0, PtsTime: 1}, {N: 1, PtsTime: 2}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			log, err := os.ReadFile(filepath.Join("testdata", "analysis", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			want := empty()
			tt.want(&want)
			want.Log = string(log)
			for _, chunk := range []int{0, 1, 7, 100} {
				if diff := cmp.Diff(want, parseLog(log, chunk, MaxAnalysisLogBytes)); diff != "" {
					t.Fatalf("in writes of %d bytes (-want +got):\n%s", chunk, diff)
				}
			}
		})
	}
}

func TestAnalysisOfLogLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, log string
		want      func(a *Analysis)
	}{
		{"silence still open at the end", "[silencedetect @ 0x1] silence_start: 4.5\n", func(a *Analysis) {
			a.Silences = []Interval{{Start: 4.5}}
		}},
		{"silence per channel", "[silencedetect @ 0x1] channel: 1 | silence_start: 1\n[silencedetect @ 0x1] channel: 1 | silence_end: 2 | silence_duration: 1\n", func(a *Analysis) {
			a.Silences = []Interval{{Start: 1, End: fp(2), Duration: fp(1)}}
		}},
		{"silence end without its start", "[silencedetect @ 0x1] silence_end: 3 | silence_duration: 1.5\n", func(a *Analysis) {
			a.Silences = []Interval{{Start: 1.5, End: fp(3), Duration: fp(1.5)}}
		}},
		{"two loudnorm blocks, one silent", "[Parsed_loudnorm_0 @ 0x1] \n{\n\t\"input_i\" : \"-inf\",\n\t\"target_offset\" : \"inf\"\n}\n[Parsed_loudnorm_1 @ 0x2] \n{\n\t\"input_i\" : \"-20.00\"\n}\n", func(a *Analysis) {
			a.Loudnorm = []map[string]any{{"inputI": "-inf", "targetOffset": "inf"}, {"inputI": -20.0}}
		}},
		{"loudnorm summary is left to the log", "[Parsed_loudnorm_0 @ 0x1] \nInput Integrated:    -22.2 LUFS\n", func(a *Analysis) {}},
		{"loudnorm block cut short", "[Parsed_loudnorm_0 @ 0x1] \n{\n\t\"input_i\" : \"-20.00\",\n", func(a *Analysis) {}},
		{"ebur128 sample peak and a silent input", "[Parsed_ebur128_0 @ 0x1] Summary:\n\n  Integrated loudness:\n    I:         -70.0 LUFS\n    Threshold:   -inf LUFS\n\n  Sample peak:\n    Peak:       -inf dBFS\n[out#0] done\n", func(a *Analysis) {
			a.EBUR128 = []EBUR128{{Integrated: fp(-70)}}
		}},
		{"showinfo config lines are not frames", "[Parsed_showinfo_0 @ 0x1] config in time_base: 1/25, frame_rate: 25/1\n[Parsed_showinfo_0 @ 0x1] n:   3 pts:  3 pts_time:0.12 duration: 1\n", func(a *Analysis) {
			a.Frames = []Frame{{N: 3, PtsTime: 0.12}}
		}},
		{"values that are not numbers", "[blackdetect @ 0x1] black_start:x black_end:2\n[Parsed_volumedetect_0 @ 0x1] max_volume: -1 dB\n[Parsed_showinfo_0 @ 0x1] n: -1 pts_time:1\n", func(a *Analysis) {}},
		{"carriage returns end lines", "[blackdetect @ 0x1] black_start:0 black_end:0.5 black_duration:0.5\r[Parsed_volumedetect_0 @ 0x1] mean_volume: -3 dB\r", func(a *Analysis) {
			a.Blacks = []Interval{{Start: 0, End: fp(0.5), Duration: fp(0.5)}}
			a.Volumes = []Volume{{MeanVolume: fp(-3)}}
		}},
		{"a name that only looks like a filter's", "[Parsed_silencedetectx_0 @ 0x1] silence_start: 1\n[blackdetect] black_start:1\n", func(a *Analysis) {
			a.Blacks = []Interval{{Start: 1}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := newLogParser().a
			tt.want(&want)
			want.Log = tt.log
			if diff := cmp.Diff(want, parseLog([]byte(tt.log), 0, MaxAnalysisLogBytes)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnalysisLogCap: past its cap the log is cut, on a UTF-8 boundary, and said to be; what
// comes after the cap is parsed all the same (ebur128 and loudnorm print their results last).
func TestAnalysisLogCap(t *testing.T) {
	t.Parallel()
	log := strings.Repeat("é", 100) + "\n[silencedetect @ 0x1] silence_start: 1\n"
	a := parseLog([]byte(log), 3, 51)
	if !a.LogTruncated || len(a.Log) > 51 || a.Log != strings.Repeat("é", 25) {
		t.Fatalf("log %q (%d bytes), truncated %v; want 25 é, truncated", a.Log, len(a.Log), a.LogTruncated)
	}
	if len(a.Silences) != 1 {
		t.Fatalf("silences %+v, want the one past the cap", a.Silences)
	}
	if b, err := json.Marshal(a); err != nil || !json.Valid(b) {
		t.Fatalf("json: %v", err)
	}
}

// TestAnalysisEntriesCapped: a log that prints more than maxAnalysisEntries frames keeps that
// many and says so.
func TestAnalysisEntriesCapped(t *testing.T) {
	t.Parallel()
	line := "[Parsed_showinfo_0 @ 0x1] n: 1 pts_time:1\n"
	a := parseLog([]byte(strings.Repeat(line, maxAnalysisEntries+5)), 0, 1024)
	if len(a.Frames) != maxAnalysisEntries || !a.Truncated {
		t.Fatalf("%d frames, truncated %v; want %d, truncated", len(a.Frames), a.Truncated, maxAnalysisEntries)
	}
}

// FuzzAnalysisLog: FFmpeg's log is untrusted (filters print what the media makes them print).
// Whatever it holds and however it is written, parsing never panics, answers valid JSON within
// the caps, and gives the same answer written at once or in pieces.
func FuzzAnalysisLog(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "analysis"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", "analysis", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(5))
	}
	f.Add([]byte("[Parsed_loudnorm_0 @ 0x1] {\"input_i\":\"1e999\"}\n}\n"), uint8(1))
	f.Add([]byte("[Parsed_ebur128_0 @ 0x1] Summary:\n  True peak:\n    Peak: nan dBFS\n"), uint8(2))
	f.Fuzz(func(t *testing.T, log []byte, chunk uint8) {
		const max = 4096
		whole := parseLog(log, 0, max)
		pieces := parseLog(log, int(chunk)+1, max)
		if diff := cmp.Diff(whole, pieces); diff != "" {
			t.Fatalf("at once and in writes of %d differ (-whole +pieces):\n%s", int(chunk)+1, diff)
		}
		if len(whole.Log) > max*3 { // ToValidUTF8 may widen a bad byte to U+FFFD's three
			t.Fatalf("log of %d bytes past the cap of %d", len(whole.Log), max)
		}
		b, err := json.Marshal(whole)
		if err != nil || !json.Valid(b) {
			t.Fatalf("json %s: %v", b, err)
		}
	})
}
