package validator

import "testing"

func TestPathLike(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  string // "" when the value is not path-like
	}{
		{"/etc/passwd", "is an absolute path"},
		{`\\host\share\x`, "is an absolute path"},
		{"C:/Windows/win.ini", "is an absolute path"},
		{`c:\x`, "is an absolute path"},
		{"~/x", "names a home directory"},
		{"../x", `has a ".." segment`},
		{"a/../../x", `has a ".." segment`},
		{`a\..\x`, `has a ".." segment`},
		{"..", `has a ".." segment`},
		{"file:x", "has the protocol prefix file:"},
		{"https://h/x", "has the protocol prefix https:"},
		{"hls+https://h/x", "has the protocol prefix hls+https:"},
		{"pipe:0", "has the protocol prefix pipe:"},
		{"proc/self/environ", "names the system location proc"},
		{`etc\passwd`, "names the system location etc"},
		// Not paths: expressions, numbers, colours, names, times, ranges.
		{"iw/2", ""},
		{"(W-w)/2", ""},
		{"PTS/2", ""},
		{"1.5", ""},
		{"..5", ""},
		{"0x00FF00", ""},
		{"black@0.5", ""},
		{"a:b", ""}, // one letter before ':' is a drive, and a drive without a separator is not a path
		{"12:00:00", ""},
		{"grade.cube", ""},
		{"etc", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			if got := pathLike(tt.value); got != tt.want {
				t.Errorf("pathLike(%q) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}

// TestOptionsLayer: the one rule for every option of every filter, including the options the
// filter table does not know to name files.
func TestOptionsLayer(t *testing.T) {
	t.Parallel()
	vf := func(graph string) string { return "ffmpeg -i " + testURL + ` -vf "` + graph + `" out.mp4` }
	staged := Options{Inputs: map[string]Input{"clut.png": {Inline: true}, "subs.srt": {Inline: true}}}
	runLayerTable(t, layerOptions, []layerCase{
		{name: "haldclut system path", command: vf("haldclut=/etc/passwd"), wantMsg: `filter haldclut option #1 value "/etc/passwd" is not allowed: it is an absolute path`},
		{name: "named option system path", command: vf("scale=w=/etc/passwd"), wantMsg: `option w value "/etc/passwd"`},
		{name: "traversal", command: vf("curves=preset=../../x"), wantMsg: `has a ".." segment`},
		{name: "protocol", command: vf("negate=components='file\\:/x'"), wantMsg: "protocol prefix file:"},
		{name: "home", command: vf("format=~/x"), wantMsg: "names a home directory"},
		{name: "system location", command: vf("null,hue=h='proc/self/environ'"), wantMsg: "names the system location proc"},
		{name: "lavfi input", command: "ffmpeg -f lavfi -i color=c=/dev/zero -t 1 out.mp4", wantMsg: `filter color option c value "/dev/zero"`},
		{name: "filter_complex", command: "ffmpeg -i a.mp4 -filter_complex \"[0:v]boxblur=luma_radius=/x[v]\" -map [v] out.mp4", wantMsg: `option luma_radius value "/x"`},
		{name: "escaped slash still a path", command: vf(`eq=gamma=\\/etc/x`), wantMsg: "is an absolute path"},
		{name: "quoted windows path", command: vf(`lutrgb=r='C\:/x'`), wantMsg: "is an absolute path"},
		{name: "subtitles force_style free text", command: vf("subtitles=subs.srt:force_style='FontName=Arial,PrimaryColour=&H00FFFFFF'"), opts: staged},
		{name: "drawtext text may hold a path", command: vf(`drawtext=text='/etc/passwd is just text'`)},
		{name: "drawtext text may hold a colon", command: vf(`drawtext=text='Time\: %{pts\:hms}'`)},
		{name: "metadata value free text", command: vf("metadata=mode=add:key=title:value=/a/b")},
		{name: "haldclut with staged clut", command: "ffmpeg -i a.mp4 -i clut.png -filter_complex \"[0][1]haldclut\" out.mp4", opts: staged},
		{name: "expressions", command: vf("scale=iw/2:-2,crop=in_w/2:in_h/2,overlay=(W-w)/2:(H-h)/2,setpts=PTS/2")},
		{name: "source size", command: "ffmpeg -f lavfi -i testsrc=size=1920x1080:rate=30:d=5 out.mp4"},
		{name: "source size over", command: "ffmpeg -f lavfi -i testsrc=size=100000x100000:d=5 out.mp4", wantMsg: "filter testsrc option size 100000x100000 is over the maximum frame size of 8192x8192"},
		{name: "source rate over", command: "ffmpeg -f lavfi -i testsrc=r=100000:d=5 out.mp4", wantMsg: "filter testsrc option r 100000 is over the maximum frame rate of 480"},
		{name: "audio source sample rate", command: "ffmpeg -f lavfi -i sine=frequency=1000:r=48000:d=5 out.wav"},
		{name: "scale over", command: vf("scale=100000:100000"), wantMsg: "filter scale size 100000 is over the maximum frame side of 8192"},
		{name: "scale named over", command: vf("scale=w=9000:h=100"), wantMsg: "filter scale option w 9000"},
		{name: "pad 8k", command: vf("pad=7680:4320")},
		{name: "fps over", command: vf("fps=fps=10000"), wantMsg: "filter fps option fps 10000"},
		{name: "fps positional over", command: vf("fps=5000"), wantMsg: "filter fps 5000"},
		{name: "fps fraction", command: vf("fps=30000/1001")},
	})
}
