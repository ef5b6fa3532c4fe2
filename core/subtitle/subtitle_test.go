package subtitle_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/subtitle"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data []byte
		want []subtitle.Cue
	}{
		{"srt faults", read(t, "faults.srt"), []subtitle.Cue{
			{Start: ms(1000), End: ms(2500), Text: "Hello world"},
			{Start: ms(2000), End: ms(4000), Text: "Second line\nred"},
			{Start: ms(5500), End: ms(6000), Text: "no blank before, none after"},
		}},
		{"vtt", read(t, "sample.vtt"), []subtitle.Cue{
			{Start: ms(1000), End: ms(2000), Text: "Hi there & welcome"},
			{Start: ms(3000), End: ms(4250), Text: "bold a < b"},
		}},
		{"overlap sorted, empty and reversed dropped", []byte("2\n00:00:03,000 --> 00:00:05,000\nB\n\n1\n00:00:01,000 --> 00:00:04,000\nA\n\n3\n00:00:06,000 --> 00:00:05,000\nbackwards\n\n4\n00:00:07,000 --> 00:00:08,000\n\n"),
			[]subtitle.Cue{{Start: ms(1000), End: ms(4000), Text: "A"}, {Start: ms(3000), End: ms(5000), Text: "B"}}},
		{"cr only and latin-1", []byte("1\r00:00:00,000 --> 00:00:01,000\rCaf\xe9 {\\an8}top\r"),
			[]subtitle.Cue{{Start: 0, End: ms(1000), Text: "Café top"}}},
		{"lone braces and backslashes", []byte("1\n00:00:00,000 --> 00:00:01,000\n{\\fn/usr/share/fonts}x \\N y } {\n"),
			[]subtitle.Cue{{Start: 0, End: ms(1000), Text: "x \\N y ) ("}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := subtitle.Parse(tc.data, subtitle.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("cues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	cue := "1\n00:00:00,000 --> 00:00:01,000\nhello\n\n"
	tests := []struct {
		name string
		data []byte
		lim  subtitle.Limits
		want error
		msg  string
	}{
		{"binary junk", []byte("\x00\x01\x02PNG\x89\xff\xfe"), subtitle.Limits{}, subtitle.ErrBinary, "control byte 0x00 at offset 0"},
		{"10 MB of cues", []byte(strings.Repeat(cue, 10<<20/len(cue)+1)), subtitle.Limits{}, subtitle.ErrTooLarge, "at most 2097152"},
		{"too many cues", []byte(strings.Repeat(cue, 11)), subtitle.Limits{MaxCues: 10}, subtitle.ErrTooManyCues, "more than 10"},
		{"long line", []byte("1\n00:00:00,000 --> 00:00:01,000\n" + strings.Repeat("x", 501) + "\n"), subtitle.Limits{}, subtitle.ErrLineTooLong, "501 characters"},
		{"no cues", []byte("just some text\nwith no timings\n"), subtitle.Limits{}, subtitle.ErrNoCues, "timing line"},
		{"bad times", []byte("1\n00:00:99,000 --> 00:00:01,000\nx\n"), subtitle.Limits{}, subtitle.ErrNoCues, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := subtitle.Parse(tc.data, tc.lim)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tc.want, tc.msg)
			}
		})
	}
}

func TestCheckASS(t *testing.T) {
	t.Parallel()
	good := "[Script Info]\nScriptType: v4.00+\n\n[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\nDialogue: 0,0:00:00.00,0:00:01.00,Default,,0,0,0,,{\\fn/etc/passwd}hi\n"
	tests := []struct {
		name string
		data string
		want error
	}{
		{"good", good, nil},
		{"binary", "[Script Info]\x00\x00", subtitle.ErrBinary},
		{"no info", "[Events]\nDialogue: x\n", subtitle.ErrNotASS},
		{"no events", "[Script Info]\n", subtitle.ErrNotASS},
		{"no dialogue", "[Script Info]\n[Events]\n", subtitle.ErrNoCues},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := subtitle.CheckASS([]byte(tc.data), subtitle.Limits{}); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if subtitle.Detect([]byte(good)) != subtitle.FormatASS || subtitle.Detect(read(t, "sample.vtt")) != subtitle.FormatVTT || subtitle.Detect(read(t, "faults.srt")) != subtitle.FormatSRT {
		t.Fatal("Detect")
	}
}

func TestColor(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, ass string }{
		{"#FFFFFF", "&H00FFFFFF"},
		{"#FF0000", "&H000000FF"},
		{"#123456", "&H00563412"},
		{"#80000000", "&H7F000000"},
		{"#00ffffff", "&HFFFFFFFF"},
	}
	for _, tc := range tests {
		c, err := subtitle.ParseColor(tc.in)
		if err != nil || c.ASS() != tc.ass {
			t.Errorf("%s: %s %v, want %s", tc.in, c.ASS(), err, tc.ass)
		}
	}
	for _, bad := range []string{"", "FFFFFF", "#FFF", "#GGGGGG", "#FFFFFFF", "#+FFFFF"} {
		if _, err := subtitle.ParseColor(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestNumpad(t *testing.T) {
	t.Parallel()
	got := map[string]int{}
	for _, p := range []subtitle.Position{subtitle.Bottom, subtitle.Center, subtitle.Top} {
		for _, a := range []subtitle.Alignment{subtitle.Left, subtitle.Middle, subtitle.Right} {
			got[string(p)+"-"+string(a)] = subtitle.Numpad(p, a)
		}
	}
	want := map[string]int{"bottom-left": 1, "bottom-center": 2, "bottom-right": 3, "center-left": 4, "center-center": 5,
		"center-right": 6, "top-left": 7, "top-center": 8, "top-right": 9}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
}

func TestWriteASS(t *testing.T) {
	t.Parallel()
	st := subtitle.DefaultStyle
	st.FontFamily = "Inter, {evil}"
	st.Position, st.Alignment = subtitle.Top, subtitle.Right
	plain := string(subtitle.WriteASS([]subtitle.Cue{{Start: ms(1234), End: ms(3_723_456), Text: "a {\\fnX} b\nc \\N d"}}, st, subtitle.Video{Width: 320, Height: 240}))
	for _, want := range []string{
		"PlayResX: 320\nPlayResY: 240\n",
		"Style: Default,Inter evil,48,&H00FFFFFF,&H00FFFFFF,&H00000000,&H80000000,-1,0,0,0,100,100,0,0,1,2,1,9,40,40,60,1\n",
		"Dialogue: 0,0:00:01.23,1:02:03.46,Default,,0,0,0,,a (\\\u2060fnX) b\\Nc \\\u2060N d\n",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("script lacks %q:\n%s", want, plain)
		}
	}
	st.Box, st.BoxColor, st.BoxOpacity = true, subtitle.MustColor("#FF0000"), 0.5
	boxed := string(subtitle.WriteASS(nil, st, subtitle.Video{Width: 640, Height: 360}))
	if !strings.Contains(boxed, ",&H7F0000FF,&H7F0000FF,-1,0,0,0,100,100,0,0,3,2,1,9,") {
		t.Errorf("box style wrong:\n%s", boxed)
	}
}

func words(spec string) []subtitle.Word {
	var out []subtitle.Word
	for i, w := range strings.Fields(spec) {
		out = append(out, subtitle.Word{Text: w, Start: ms(i * 500), End: ms(i*500 + 400)})
	}
	return out
}

func TestCues(t *testing.T) {
	t.Parallel()
	ws := words("hello world this is a test of breaking lines")
	ws = append(ws, subtitle.Word{Text: "later", Start: ms(9000), End: ms(9500)})
	got := subtitle.Cues(ws, 12, 2)
	want := []subtitle.Cue{
		{Start: 0, End: ms(2400), Text: "hello world\nthis is a"},
		{Start: ms(2500), End: ms(3900), Text: "test of\nbreaking"},
		{Start: ms(4000), End: ms(4400), Text: "lines"},
		{Start: ms(9000), End: ms(9500), Text: "later"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
}

func TestWriteKaraoke(t *testing.T) {
	t.Parallel()
	k := subtitle.Karaoke{Style: subtitle.DefaultStyle, Highlight: subtitle.MustColor("#FFFF00"), Pop: 120, Lines: 1, MaxChars: 11}
	got := string(subtitle.WriteKaraoke(words("hello world {x} again"), k, subtitle.Video{Width: 320, Height: 240}))
	for _, want := range []string{
		"Dialogue: 0,0:00:00.00,0:00:00.50,Default,,0,0,0,,{\\c&H00FFFF&\\fscx120\\fscy120}hello{\\r} world\n",
		"Dialogue: 0,0:00:00.50,0:00:00.90,Default,,0,0,0,,hello {\\c&H00FFFF&\\fscx120\\fscy120}world{\\r}\n",
		"Dialogue: 0,0:00:01.00,0:00:01.50,Default,,0,0,0,,{\\c&H00FFFF&\\fscx120\\fscy120}(x){\\r} again\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
}

func TestParseTranscript(t *testing.T) {
	t.Parallel()
	got, err := subtitle.ParseTranscript([]byte(`[{"word":"hi","start":0.5,"end":0.75},{"word":" there ","start":1,"end":1.5}]`), subtitle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []subtitle.Word{{Text: "hi", Start: ms(500), End: ms(750)}, {Text: "there", Start: ms(1000), End: ms(1500)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	got, err = subtitle.ParseTranscript([]byte("1\n00:00:01,000 --> 00:00:02,000\nab cd\n"), subtitle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want = []subtitle.Word{{Text: "ab", Start: ms(1000), End: ms(1500)}, {Text: "cd", Start: ms(1500), End: ms(2000)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	for _, bad := range []string{`[{"word":"x","start":2,"end":1}]`, `[{"word":"x"}]`, `[{"word":"x","start":0,"end":1,"conf":1}]`, `[]`, `[{"word":"x","start":-1,"end":1}]`} {
		if _, err := subtitle.ParseTranscript([]byte(bad), subtitle.Limits{}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
