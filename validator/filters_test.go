package validator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGetToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, term string
		want     string
		rest     string
	}{
		{"scale=1:2", "=,;[", "scale", "=1:2"},
		{"  'mo'vie=x", "=,;[", "movie", "=x"},
		{`mov\ie=x`, "=,;[", "movie", "=x"},
		{`a\,b,c`, ",", "a,b", ",c"},
		{"'a,b',c", ",", "a,b", ",c"},
		{"a b  ,c", ",", "a b", ",c"},
		{"'a '  ,c", ",", "a ", ",c"},
		{`a\ ,c`, ",", "a ", ",c"},
		{"'unterminated", ",", "unterminated", ""},
		{`end\`, ",", `end\`, ""},
		{"", ",", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, i := getToken(nil, tt.in, 0, makeByteSet(tt.term))
			if got != tt.want || tt.in[i:] != tt.rest {
				t.Fatalf("getToken(%q, %q) = %q, rest %q; want %q, rest %q", tt.in, tt.term, got, tt.in[i:], tt.want, tt.rest)
			}
		})
	}
	// In one arena, small enough to be replaced as it fills, every token stays what it was.
	arena := make([]byte, 0, 4)
	var got []string
	for range 20 {
		for _, tt := range tests {
			tok, _ := getToken(&arena, tt.in, 0, makeByteSet(tt.term))
			got = append(got, tok)
		}
	}
	for i, tok := range got {
		if want := tests[i%len(tests)].want; tok != want {
			t.Errorf("in an arena, token %d is %q, want %q", i, tok, want)
		}
	}
}

func TestParseGraph(t *testing.T) {
	t.Parallel()
	tests := []struct {
		graph   string
		want    []filterNode
		wantBad bool
	}{
		{graph: "scale=640:-2", want: []filterNode{{name: "scale", args: "640:-2", hasArgs: true}}},
		{graph: "hflip,vflip", want: []filterNode{{name: "hflip"}, {name: "vflip"}}},
		{graph: "[0:v][1:v]overlay=10:10[out];[out]null", want: []filterNode{{name: "overlay", args: "10:10", hasArgs: true}, {name: "null"}}},
		{graph: "drawtext@t=text='a,b'", want: []filterNode{{name: "drawtext", args: "text=a,b", hasArgs: true}}},
		{graph: "sws_flags=bicubic;scale=1:1", want: []filterNode{{name: "scale", args: "1:1", hasArgs: true}}},
		{graph: " [in] scale = 1:1 [a] , [a] hflip ", want: []filterNode{{name: "scale", args: "1:1", hasArgs: true}, {name: "hflip"}}},
		{graph: `select='eq(pict_type\,I)'`, want: []filterNode{{name: "select", args: `eq(pict_type\,I)`, hasArgs: true}}},
		{graph: `'mo'vie=a.png`, want: []filterNode{{name: "movie", args: "a.png", hasArgs: true}}},
		{graph: "", wantBad: true},
		{graph: "scale,", wantBad: true},
		{graph: "[a", wantBad: true},
		{graph: "[]null", wantBad: true},
		{graph: "scale=1]", wantBad: true},
		{graph: "null]", want: []filterNode{{name: "null]"}}},
		{graph: "sws_flags=x", wantBad: true},
		{graph: "sws_flags=+accurate_rnd+full_chroma_int-bitexact;scale=1:1", want: []filterNode{{name: "scale", args: "1:1", hasArgs: true}}},
		// FFmpeg 5.1 crashes on a flag it cannot read.
		{graph: "sws_flags=lanczos|accurate_rnd;scale=1:1", wantBad: true},
		{graph: "sws_flags=bogus;scale=1:1", wantBad: true},
		{graph: "sws_flags=lanczos++bitexact;scale=1:1", wantBad: true},
		{graph: "sws_flags=lanczos+;scale=1:1", wantBad: true},
		// FFmpeg hands the prefix to every scale as flags=<text>: options hidden after a ':'.
		{graph: "sws_flags=bicubic:w=12000:h=12000;scale", wantBad: true},
		{graph: "sws_flags=bicubic,w=1;scale", wantBad: true},
		{graph: "sws_flags=;scale", wantBad: true},
	}
	for _, tt := range tests {
		t.Run(tt.graph, func(t *testing.T) {
			t.Parallel()
			got, bad := parseGraph(tt.graph)
			if (bad != "") != tt.wantBad {
				t.Fatalf("parseGraph(%q) bad = %q, want bad %v", tt.graph, bad, tt.wantBad)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(filterNode{})); !tt.wantBad && diff != "" {
				t.Fatalf("parseGraph(%q) mismatch (-want +got):\n%s", tt.graph, diff)
			}
		})
	}
}

func TestParseFilterOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    string
		want    []filterOption
		wantBad bool
	}{
		{args: "640:-2", want: []filterOption{{value: "640"}, {value: "-2"}}},
		{args: "w=640:h=360", want: []filterOption{{key: "w", value: "640"}, {key: "h", value: "360"}}},
		{args: "subs.srt:force_style=Fontsize=24", want: []filterOption{{value: "subs.srt"}, {key: "force_style", value: "Fontsize=24"}}},
		{args: `text=a\:b:x=1`, want: []filterOption{{key: "text", value: "a:b"}, {key: "x", value: "1"}}},
		{args: `text='a:b':x=1`, want: []filterOption{{key: "text", value: "a:b"}, {key: "x", value: "1"}}},
		{args: `text=a\\:textfile=x`, want: []filterOption{{key: "text", value: `a\`}, {key: "textfile", value: "x"}}},
		{args: "/textfile=x", want: []filterOption{{key: "/textfile", value: "x"}}},
		{args: " key = v ", want: []filterOption{{key: "key", value: "v"}}},
		{args: "a=1:2", wantBad: true},
		{args: "=1", wantBad: true},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			got, bad := parseFilterOptions(tt.args)
			if (bad != "") != tt.wantBad {
				t.Fatalf("parseFilterOptions(%q) bad = %q, want bad %v", tt.args, bad, tt.wantBad)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(filterOption{})); !tt.wantBad && diff != "" {
				t.Fatalf("parseFilterOptions(%q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestFiltersLayer(t *testing.T) {
	t.Parallel()
	vf := func(graph string) string { return "ffmpeg -i " + testURL + ` -vf "` + graph + `" out.mp4` }
	fonts := Options{Inputs: map[string]Input{"font.ttf": {Inline: true, ContentSize: 9}, "subs.srt": {Inline: true, ContentSize: 9}}}
	var cases []layerCase
	for _, f := range []string{"movie", "amovie", "sendcmd", "asendcmd", "zmq", "azmq", "ladspa", "lv2", "frei0r",
		"frei0r_src", "ocr", "dnn_processing", "dnn_detect", "dnn_classify", "sr", "derain", "lensfun", "arnndn",
		"nnedi", "qrencode", "openclsrc", "libplacebo", "showcqt", "firequalizer", "sofalizer", "life", "cellauto"} {
		cases = append(cases, layerCase{name: f, command: vf("null," + f + "=x"), wantMsg: `filter "` + f + `" is not allowed`})
	}
	cases = append(cases,
		layerCase{name: "quoted name", command: vf("'mo'vie=a.png"), wantMsg: `filter "movie" is not allowed`},
		layerCase{name: "escaped name", command: vf(`mo\\vie=a.png`), wantMsg: `filter "movie" is not allowed`},
		layerCase{name: "lavfi input", command: "ffmpeg -f lavfi -i amovie=a.mp3 out.mp3", wantMsg: `filter "amovie" is not allowed`},
		layerCase{name: "staged fontfile", command: vf("drawtext=fontfile=font.ttf:text=x"), opts: fonts},
		layerCase{name: "staged subtitles", command: vf("subtitles=subs.srt"), opts: fonts},
		layerCase{name: "unstaged fontfile is a required input", command: vf("drawtext=fontfile=f.ttf")},
		layerCase{name: "fontsdir", command: vf("subtitles=subs.srt:fontsdir=fonts"), opts: fonts, wantMsg: "filter subtitles option fontsdir is not allowed"},
		layerCase{name: "font pattern", command: vf(`drawtext=font='a\:file=/x'`), wantMsg: `filter drawtext option font "a:file=/x" is not allowed`},
		layerCase{name: "file load key", command: vf("drawtext=/text=x.txt"), wantMsg: `option "/text" is not allowed`},
		layerCase{name: "positional past list", command: vf("subtitles=subs.srt:640x480"), opts: fonts, wantMsg: "give option 2"},
		layerCase{name: "libvmaf model path", command: vf("libvmaf=model=path=x"), wantMsg: "built-in model versions only"},
		layerCase{name: "bad graph", command: vf("scale=1:1]"), wantMsg: "invalid filter graph"},
		layerCase{name: "scale options in sws_flags", command: vf("sws_flags=bicubic:w=12000:h=12000;scale"), wantMsg: "only scaler flag names"},
		layerCase{name: "sws_flags of flag names", command: vf("sws_flags=lanczos+accurate_rnd;scale=640:-2")},
		layerCase{name: "positional after named", command: vf("scale=w=1:2"), wantMsg: "positional value after a named option"},
	)
	runLayerTable(t, layerFilters, cases)
}
