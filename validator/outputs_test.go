package validator

import (
	"strings"
	"testing"
)

func TestOutputsLayer(t *testing.T) {
	t.Parallel()
	in := "ffmpeg -i " + testURL + " "
	runLayerTable(t, layerOutputs, []layerCase{
		{name: "none", command: "ffmpeg -i " + testURL, wantMsg: "command has no output file"},
		{name: "unknown ext", command: in + "out.xyz", wantMsg: `cannot infer the output format of "out.xyz"`},
		{name: "trailing option", command: in + "out.mp4 -c:v libx264", wantMsg: "option -c:v after the last output has no effect"},
		{name: "mismatch", command: in + "out.mkv", opts: Options{OutputFormat: "mp4"}, wantMsg: `output "out.mkv" is mkv but outputFormat is mp4`},
		{name: "not in enum", command: in + "out.mp4", opts: Options{OutputFormat: "exe"}, wantMsg: `outputFormat "exe" is not one of`},
		{name: "f mismatch", command: in + "-f mp4 out.mkv", wantMsg: "does not match -f mp4"},
		{name: "numbered mp4", command: in + "out_%d.mp4", wantMsg: "needs -f segment"},
		{name: "segment needs pattern", command: in + "-f segment out.ts", wantMsg: "needs a numbered pattern"},
		{name: "hls outputFormat mp4 with ts segments", command: in + "out.m3u8", opts: Options{OutputFormat: "mp4"}, wantMsg: "is ts but outputFormat is mp4"},
		{name: "hls fmp4 outputFormat mp4", command: in + "-hls_segment_type fmp4 out.m3u8", opts: Options{OutputFormat: "mp4"}},
	})
}

func TestInferredOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tail, format, pattern string
	}{
		{"out.mp4", "mp4", PatternSingle},
		{"OUT.MKV", "mkv", PatternSingle},
		{"thumb.jpeg", "jpg", PatternSingle},
		{"-f ipod out", "m4a", PatternSingle},
		{"-f adts out.aac", "aac", PatternSingle},
		{"-f webvtt subs.vtt", "vtt", PatternSingle},
		{"out.m3u8", "m3u8", PatternStream},
		{"-f hls index.m3u8", "m3u8", PatternStream},
		{"-f dash manifest.mpd", "mpd", PatternStream},
		{"frame_%03d.png", "png", PatternSet},
		{"-f image2 img_%d.jpg", "jpg", PatternSet},
		{"-f segment seg_%03d.ts", "ts", PatternSet},
		{"-f segment -segment_format mp4 seg_%03d", "mp4", PatternSet},
		{"a.mp4 b.mkv", "mkv", PatternSet},
		{"a.mp4 -f hls b.m3u8", "m3u8", PatternStream},
		{"-update 1 latest.jpg", "jpg", PatternSingle},
		{"-af volumedetect -f null -", "null", PatternData},
	}
	for _, tt := range tests {
		t.Run(tt.tail, func(t *testing.T) {
			t.Parallel()
			r := Validate("ffmpeg -i "+testURL+" "+tt.tail, Options{})
			if !r.Valid {
				t.Fatal(r.Error)
			}
			if r.InferredOutputFormat != tt.format || r.Plan.Pattern != tt.pattern {
				t.Fatalf("%q: format %q pattern %q, want %q %q", tt.tail, r.InferredOutputFormat, r.Plan.Pattern, tt.format, tt.pattern)
			}
		})
	}
}

// The output-format error lists exactly the formats params.outputFormat accepts.
func TestFormatListIsTheAcceptedFormats(t *testing.T) {
	t.Parallel()
	listed := strings.Split(formatList(), ", ")
	if len(listed) != len(specFormats) {
		t.Errorf("formatList has %d formats, outputFormat accepts %d", len(listed), len(specFormats))
	}
	for _, f := range listed {
		if !specFormats[f] {
			t.Errorf("formatList names %q, which outputFormat refuses", f)
		}
		res := Validate("ffmpeg -f lavfi -i testsrc out."+f, Options{OutputFormat: f})
		if res.Err != nil && strings.Contains(res.Error, "is not one of") {
			t.Errorf("outputFormat %q is listed but refused: %s", f, res.Error)
		}
	}
}
