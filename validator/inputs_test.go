package validator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInputsLayer(t *testing.T) {
	t.Parallel()
	staged := Options{Inputs: map[string]Input{"a.mp4": {URL: testURL}, "list.m3u8": {Inline: true, ContentSize: 10}}}
	assets := Options{AssetURLPrefix: "http://localhost:8080/assets/"}
	refused := func(v string) string {
		return `input "` + v + `" is not allowed: it `
	}
	var cases []layerCase
	for _, v := range []string{
		"file:/etc/passwd", "/etc/passwd", "pipe:0", "concat:a|b", "subfile,,start,0,end,0,,:x", "data:x",
		"crypto:x", "async:x", "cache:x", "tcp://h:1", "udp://h:1", "rtp://h:1", "rtmp://h/a", "ftp://h/a",
		"http://h/a.mp4", "tee:a", "fd:3", "gopher://h", "sftp://h/a", "smb://h/a", "unix:/s", "srt://h:1",
		"hls+https://h/a.m3u8", "-", "", "../in.mp4", "/dev/video0", "C:/x.mp4", "*.mp4",
	} {
		cases = append(cases, layerCase{name: v, command: "ffmpeg -i '" + v + "' out.mp4", wantMsg: refused(v)})
	}
	cases = append(cases,
		layerCase{name: "https", command: "ffmpeg -i " + testURL + " out.mp4"},
		layerCase{name: "staged", command: "ffmpeg -i a.mp4 out.mp4", opts: staged},
		layerCase{name: "required", command: "ffmpeg -i in.mp4 out.mp4"},
		layerCase{name: "required playlist", command: "ffmpeg -i in.m3u8 out.mp4", wantMsg: "playlists open further files"},
		layerCase{name: "required pattern playlist", command: "ffmpeg -i seg%03d.m3u8 out.mp4", wantMsg: "playlists open further files"},
		layerCase{name: "pattern traversal", command: "ffmpeg -i ../img%03d.png out.mp4", wantMsg: refused("../img%03d.png")},
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

func TestRequiredInputs(t *testing.T) {
	t.Parallel()
	staged := func(names ...string) Options {
		o := Options{Inputs: map[string]Input{}}
		for _, n := range names {
			o.Inputs[n] = Input{Inline: true, ContentSize: 10}
		}
		return o
	}
	tests := []struct {
		name    string
		command string
		opts    Options
		want    []string
	}{
		{"bare input", "ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4", Options{}, []string{"in.mp4"}},
		{"staged input", "ffmpeg -i in.mp4 out.mp4", staged("in.mp4"), nil},
		{"named twice", "ffmpeg -i in.mp4 -i in.mp4 -map 0 -map 1 out.mkv", Options{}, []string{"in.mp4"}},
		{"subtitles filter", "ffmpeg -i in.mp4 -vf subtitles=subs.srt out.mp4", staged("in.mp4"), []string{"subs.srt"}},
		{"ass filter", "ffmpeg -i in.mp4 -vf ass=subs.ass out.mp4", Options{}, []string{"in.mp4", "subs.ass"}},
		{"drawtext fontfile", "ffmpeg -i in.mp4 -vf drawtext=fontfile=f.ttf:text=hi out.mp4", staged("in.mp4"), []string{"f.ttf"}},
		{"lut3d", "ffmpeg -i in.mp4 -vf lut3d=grade.cube out.mp4", staged("in.mp4"), []string{"grade.cube"}},
		{"concat list", "ffmpeg -f concat -safe 1 -i list.txt -c copy out.mp4", Options{}, []string{"list.txt"}},
		{"attached font", "ffmpeg -i in.mkv -attach f.ttf -metadata:s:t mimetype=font/ttf -c copy out.mkv", staged("in.mkv"), []string{"f.ttf"}},
		{"sequence unstaged", "ffmpeg -framerate 25 -i img%03d.png out.mp4", Options{}, []string{"img%03d.png"}},
		{"sequence first frame 0", "ffmpeg -framerate 25 -i img%03d.png out.mp4", staged("img000.png", "img001.png"), nil},
		{"sequence first frame 4", "ffmpeg -framerate 25 -i img%03d.png out.mp4", staged("img004.png"), nil},
		{"sequence starts too late", "ffmpeg -framerate 25 -i img%03d.png out.mp4", staged("img005.png"), []string{"img%03d.png"}},
		{"start_number", "ffmpeg -start_number 10 -i img%03d.png out.mp4", staged("img010.png"), nil},
		{"start_number misses", "ffmpeg -start_number 10 -i img%03d.png out.mp4", staged("img001.png"), []string{"img%03d.png"}},
		{"unpadded pattern", "ffmpeg -i frame%d.jpg out.mp4", staged("frame1.jpg"), nil},
		{"width mismatch", "ffmpeg -i frame%04d.jpg out.mp4", staged("frame1.jpg"), []string{"frame%04d.jpg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Validate(tt.command, tt.opts)
			if !r.Valid {
				t.Fatalf("Validate(%q) refused: %s", tt.command, r.Error)
			}
			checkAccepted(t, tt.command, tt.opts, r)
			if diff := cmp.Diff(tt.want, r.RequiredInputs); diff != "" {
				t.Fatalf("Validate(%q) requiredInputs (-want +got):\n%s", tt.command, diff)
			}
			e := r.MissingInputsError()
			if (e != nil) != (len(tt.want) > 0) {
				t.Fatalf("MissingInputsError() = %v with requiredInputs %q", e, r.RequiredInputs)
			}
			for _, n := range tt.want {
				if !strings.Contains(e.Message, `"`+n+`"`) {
					t.Fatalf("MissingInputsError() = %q, want it to name %q", e.Message, n)
				}
			}
		})
	}
}

// TestRequiredInputsNotReused: a download never takes the name of a required input, and an
// output never overwrites one.
func TestRequiredInputsNotReused(t *testing.T) {
	t.Parallel()
	r := Validate("ffmpeg -i input_0.mp4 -i https://h/a.mp4 -map 0 -map 1 out.mkv", Options{})
	if !r.Valid {
		t.Fatal(r.Error)
	}
	if got := r.Plan.Downloads[0].Name; got != "input_1.mp4" {
		t.Errorf("download named %q, want input_1.mp4", got)
	}
	r = Validate("ffmpeg -i in.mp4 in.mp4", Options{})
	if r.Valid || !strings.Contains(r.Error, `would overwrite input "in.mp4"`) {
		t.Errorf("overwriting a required input: %+v", r)
	}
}
