package subtitle_test

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/subtitle"
)

func seeds(f *testing.F) {
	for _, name := range []string{"faults.srt", "sample.vtt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("1\n00:00:00,000 --> 00:00:01,000\n{\\fn/etc/passwd}x\n"))
	f.Add([]byte("WEBVTT\n\n00:00.000 --> 00:01.000 line:0\n<c>a</c>\\N{b\n"))
	f.Add([]byte("\x00\xff"))
}

// checkCues holds for every successful parse: valid times, text that libass shows literally.
func checkCues(t *testing.T, cues []subtitle.Cue) {
	lim := subtitle.DefaultLimits
	if len(cues) == 0 || len(cues) > lim.MaxCues {
		t.Fatalf("%d cues", len(cues))
	}
	for _, c := range cues {
		if c.End <= c.Start || c.Start < 0 {
			t.Fatalf("cue times %v..%v", c.Start, c.End)
		}
		if !utf8.ValidString(c.Text) || c.Text == "" {
			t.Fatalf("cue text %q", c.Text)
		}
		for l := range strings.SplitSeq(c.Text, "\n") {
			if utf8.RuneCountInString(l) > lim.MaxLineRunes {
				t.Fatalf("line of %d runes", utf8.RuneCountInString(l))
			}
		}
		esc := subtitle.Escape(c.Text)
		if strings.ContainsAny(esc, "{}\n") {
			t.Fatalf("escaped text %q can open an override block", esc)
		}
		for i := strings.IndexByte(esc, '\\'); i >= 0; i = strings.IndexByte(esc[i+1:], '\\') + i + 1 {
			if !strings.HasPrefix(esc[i+1:], "\u2060") && !strings.HasPrefix(esc[i+1:], "N") {
				t.Fatalf("escaped text %q has a live backslash", esc)
			}
			if strings.IndexByte(esc[i+1:], '\\') < 0 {
				break
			}
		}
	}
}

func FuzzParseSRT(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if cues, err := subtitle.ParseSRT(data, subtitle.Limits{}); err == nil {
			checkCues(t, cues)
		}
	})
}

func FuzzParseVTT(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if cues, err := subtitle.ParseVTT(data, subtitle.Limits{}); err == nil {
			checkCues(t, cues)
		}
	})
}

func FuzzParseTranscript(f *testing.F) {
	seeds(f)
	f.Add([]byte(`[{"word":"a","start":0,"end":1}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := subtitle.ParseTranscript(data, subtitle.Limits{})
		if err != nil {
			return
		}
		for _, w := range ws {
			if w.End < w.Start || w.Start < 0 {
				t.Fatalf("word %+v", w)
			}
		}
		_ = subtitle.WriteKaraoke(ws, subtitle.Karaoke{Style: subtitle.DefaultStyle, Lines: 2}, subtitle.Video{Width: 320, Height: 240})
	})
}

func FuzzCheckASS(f *testing.F) {
	f.Add([]byte("[Script Info]\n[Events]\nDialogue: 0,0:00:00.00,0:00:01.00,Default,,0,0,0,,hi\n"))
	f.Add([]byte("\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = subtitle.CheckASS(data, subtitle.Limits{})
	})
}
