package validator

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind nameKind
		ok   bool
	}{
		{"out.mp4", namePlain, true},
		{"My_Clip-2+final.mkv", namePlain, true},
		{"frame_%03d.png", nameNumbered, true},
		{"seg_%d.ts", nameNumbered, true},
		{"stream_%v.m3u8", nameNumbered, true},
		{"100%%.png", nameNumbered, true},
		{"init-$RepresentationID$.m4s", nameTemplate, true},
		{"chunk-$RepresentationID$-$Number%05d$.m4s", nameTemplate, true},
		{"frame_%03d.png", namePlain, false},
		{"init-$RepresentationID$.m4s", nameNumbered, false},
		{"chunk-$Evil$.m4s", nameTemplate, false},
		{"chunk-$Number%s$.m4s", nameTemplate, false},
		{"", namePlain, false},
		{"/etc/passwd", namePlain, false},
		{"../out.mp4", namePlain, false},
		{"a/b.mp4", namePlain, false},
		{`a\b.mp4`, namePlain, false},
		{"a..b.mp4", namePlain, false},
		{".hidden", namePlain, false},
		{"-out.mp4", namePlain, false},
		{"file:out.mp4", namePlain, false},
		{"pipe:1", namePlain, false},
		{"a b.mp4", namePlain, false},
		{"a|b.mp4", namePlain, false},
		{"a,b.mp4", namePlain, false},
		{"vidéo.mp4", namePlain, false},
		{"out_%s.png", nameNumbered, false},
		{"out_%123d.png", nameNumbered, false},
		{"out_%", nameNumbered, false},
		{strings.Repeat("a", 256), namePlain, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			why := checkName(tt.name, tt.kind)
			if (why == "") != tt.ok {
				t.Fatalf("checkName(%q, %d) = %q, want ok %v", tt.name, tt.kind, why, tt.ok)
			}
		})
	}
}

func TestNumberedPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern  string
		n        int
		numbered bool
		want     string
	}{
		{"img_%03d.png", 1, true, "img_001.png"},
		{"img_%03d.png", 1234, true, "img_1234.png"},
		{"img_%d.png", 12345, true, "img_12345.png"},
		{"img_%3d.png", 7, true, "img_007.png"},
		{"100%%_%d.png", 7, true, "100%_7.png"},
		{"stream_%v.m3u8", 0, false, "stream_%v.m3u8"},
		{"plain.png", 3, false, "plain.png"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			if got := isNumbered(tt.pattern); got != tt.numbered {
				t.Errorf("isNumbered(%q) = %v, want %v", tt.pattern, got, tt.numbered)
			}
			if got := expandNumbered(tt.pattern, tt.n); got != tt.want {
				t.Errorf("expandNumbered(%q, %d) = %q, want %q", tt.pattern, tt.n, got, tt.want)
			}
		})
	}
}

func TestPathsLayer(t *testing.T) {
	t.Parallel()
	runLayerTable(t, layerPaths, []layerCase{
		{name: "bare output", command: "ffmpeg -i " + testURL + " out.mp4"},
		{name: "absolute output", command: "ffmpeg -i " + testURL + " /tmp/out.mp4", wantMsg: `output "/tmp/out.mp4" is not a bare file name`},
		{name: "protocol output", command: "ffmpeg -i " + testURL + " file:out.mp4", wantMsg: `output "file:out.mp4" is not a bare file name`},
		{name: "traversal output", command: "ffmpeg -i " + testURL + " ../out.mp4", wantMsg: `output "../out.mp4"`},
		{name: "overwrite staged", command: "ffmpeg -i in.mp4 in.mp4", opts: Options{Inputs: map[string]Input{"in.mp4": {URL: testURL}}}, wantMsg: `output "in.mp4" would overwrite input "in.mp4"`},
		{name: "overwrite download", command: "ffmpeg -i " + testURL + " input_0.mp4", wantMsg: `would overwrite input "input_0.mp4"`},
		{name: "segment pattern", command: "ffmpeg -i " + testURL + " -hls_segment_filename seg_%03d.ts out.m3u8"},
		{name: "segment abs", command: "ffmpeg -i " + testURL + " -hls_segment_filename /tmp/s%d.ts out.m3u8", wantMsg: `-hls_segment_filename value "/tmp/s%d.ts"`},
		{name: "filter reads abs", command: "ffmpeg -i " + testURL + " -vf subtitles=/etc/passwd out.mp4", wantMsg: `filter subtitles option filename "/etc/passwd" is not a bare file name`},
		{name: "filter writes traversal", command: "ffmpeg -i " + testURL + " -vf psnr=stats_file=../p.log out.mp4", wantMsg: `filter psnr option stats_file "../p.log"`},
		{name: "filter writes over input", command: "ffmpeg -i a.mp4 -vf ssim=a.mp4 out.mp4", opts: Options{Inputs: map[string]Input{"a.mp4": {URL: testURL}}}, wantMsg: `would overwrite input "a.mp4"`},
		{name: "hls base url relative", command: "ffmpeg -i " + testURL + " -f hls -hls_base_url media/v1/ out.m3u8"},
		{name: "hls base url file", command: "ffmpeg -i " + testURL + " -f hls -hls_base_url file:///etc/ out.m3u8", wantMsg: `-hls_base_url value "file:///etc/" is not allowed: it has a scheme`},
		{name: "hls base url host", command: "ffmpeg -i " + testURL + " -f hls -hls_base_url //evil.example/ out.m3u8", wantMsg: `-hls_base_url value "//evil.example/" is not allowed: it starts with '/'`},
		{name: "hls base url up", command: "ffmpeg -i " + testURL + " -f hls -hls_base_url a/../../ out.m3u8", wantMsg: `-hls_base_url value "a/../../" is not allowed: it contains ".."`},
		{name: "hls base url double slash", command: "ffmpeg -i " + testURL + " -f hls -hls_base_url a//b/ out.m3u8", wantMsg: `-hls_base_url value "a//b/" is not allowed: it contains "//"`},
		{name: "hls base url escape", command: "ffmpeg -i " + testURL + " -f hls -hls_base_url %2e%2e/ out.m3u8", wantMsg: `-hls_base_url value "%2e%2e/" is not allowed: it contains '%'`},
	})
}

// FuzzCheckName: checkName's fast path answers as the rules one after another do.
func FuzzCheckName(f *testing.F) {
	for _, n := range []string{"in.mp4", "a..b", ".x", "-x", "a/b", "seg_%03d.ts", "$Number$.m4s", "é.mp4", "a.", "..", ""} {
		f.Add(n, uint8(0))
	}
	f.Fuzz(func(t *testing.T, name string, k uint8) {
		kind := nameKind(k % 3)
		if got, want := checkName(name, kind), checkNameSteps(name, kind); got != want {
			t.Fatalf("checkName(%q, %d) = %q, want %q", name, kind, got, want)
		}
	})
}
