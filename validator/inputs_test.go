package validator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInputsLayer(t *testing.T) {
	t.Parallel()
	staged := Options{Inputs: map[string]Input{"a.mp4": {URL: testURL}, "list.m3u8": {Inline: true, ContentSize: 10}}}
	assets := Options{AssetURLPrefix: "http://localhost:8080/assets/"}
	refused := func(v string) string {
		return `input "` + v + `" is not allowed: only https URLs, staged input names and uploaded assets`
	}
	var cases []layerCase
	for _, v := range []string{
		"file:/etc/passwd", "/etc/passwd", "pipe:0", "concat:a|b", "subfile,,start,0,end,0,,:x", "data:x",
		"crypto:x", "async:x", "cache:x", "tcp://h:1", "udp://h:1", "rtp://h:1", "rtmp://h/a", "ftp://h/a",
		"http://h/a.mp4", "tee:a", "fd:3", "gopher://h", "sftp://h/a", "smb://h/a", "unix:/s", "srt://h:1",
		"hls+https://h/a.m3u8", "in.mp4", "-",
	} {
		cases = append(cases, layerCase{name: v, command: "ffmpeg -i '" + v + "' out.mp4", wantMsg: refused(v)})
	}
	cases = append(cases,
		layerCase{name: "https", command: "ffmpeg -i " + testURL + " out.mp4"},
		layerCase{name: "staged", command: "ffmpeg -i a.mp4 out.mp4", opts: staged},
		layerCase{name: "asset", command: "ffmpeg -i http://localhost:8080/assets/as_1/content out.mp4", opts: assets},
		layerCase{name: "asset other host", command: "ffmpeg -i http://evil/assets/as_1/content out.mp4", opts: assets, wantMsg: refused("http://evil/assets/as_1/content")},
		layerCase{name: "credentials", command: "ffmpeg -i https://u:p@h/a.mp4 out.mp4", wantMsg: "must not carry credentials"},
		layerCase{name: "no host", command: "ffmpeg -i https:///a.mp4 out.mp4", wantMsg: "has no host"},
		layerCase{name: "playlist url", command: "ffmpeg -i https://h/a.m3u8 out.mp4", wantMsg: "is a playlist"},
		layerCase{name: "staged playlist", command: "ffmpeg -i list.m3u8 out.mp4", opts: staged, wantMsg: "playlists open further files"},
		layerCase{name: "staged http url", command: "ffmpeg -i x.mp4 out.mp4", opts: Options{Inputs: map[string]Input{"x.mp4": {URL: "http://h/x.mp4"}}}, wantMsg: `input "x.mp4" url "http://h/x.mp4" is not allowed`},
	)
	runLayerTable(t, layerInputs, cases)
}

func TestPlanDownloads(t *testing.T) {
	t.Parallel()
	opts := Options{Inputs: map[string]Input{
		"b.srt":       {Inline: true, ContentSize: 3},
		"a.mp4":       {URL: "https://h/a.mp4"},
		"input_0.mov": {URL: "https://h/taken.mp4"},
	}}
	r := Validate("ffmpeg -i https://h/x/clip.MOV?sig=1 -i https://h/noext -i https://h/evil.m3u8x -i https://h/x/clip.MOV?sig=1 -i a.mp4 -map 0 out.mkv", opts)
	if !r.Valid {
		t.Fatal(r.Error)
	}
	want := &Plan{
		Downloads: []Download{
			{URL: "https://h/a.mp4", Name: "a.mp4"},
			{URL: "https://h/taken.mp4", Name: "input_0.mov"},
			{URL: "https://h/x/clip.MOV?sig=1", Name: "input_1.mov"},
			{URL: "https://h/noext", Name: "input_2"},
			{URL: "https://h/evil.m3u8x", Name: "input_3"},
		},
		Args:    []string{"-i", "input_1.mov", "-i", "input_2", "-i", "input_3", "-i", "input_1.mov", "-i", "a.mp4", "-map", "0", "out.mkv"},
		Outputs: []string{"out.mkv"},
		Compute: "cpu",
		Pattern: PatternSingle,
	}
	if diff := cmp.Diff(want, r.Plan); diff != "" {
		t.Fatalf("plan mismatch (-want +got):\n%s", diff)
	}
	if r.Args[1] != "https://h/x/clip.MOV?sig=1" {
		t.Fatalf("Result.Args must keep the command as given, got %q", r.Args)
	}
}
