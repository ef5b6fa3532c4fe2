package mediatype_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/adapters/mediatype"
)

func TestSniff(t *testing.T) {
	t.Parallel()
	mp4 := "\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"
	tests := []struct {
		name, file, head, want string
	}{
		{"mp4", "clip.mp4", mp4, "video/mp4"},
		{"mp4 under another name", "clip.bin", mp4, "video/mp4"},
		{"html named .mp4", "clip.mp4", "<html><script>alert(1)</script>", "text/html; charset=utf-8"},
		{"text named .mp4", "clip.mp4", "mp4 bytes", "text/plain; charset=utf-8"},
		{"matroska", "a.mkv", "\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01", "video/x-matroska"},
		{"webm", "a.webm", "\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01", "video/webm"},
		{"mpeg-ts", "a.ts", "\x47\x40\x00\x10\x00\x00\xb0\x0d", "video/mp2t"},
		{"unknown binary, unknown name", "a.xyz", "\x47\x40\x00\x10", "application/octet-stream"},
		{"binary named .srt", "a.srt", "\x00\x01\x02\x03", "application/octet-stream"},
		{"srt", "a.srt", "1\n00:00:00,000 --> 00:00:01,000\nhi\n", "application/x-subrip"},
		{"vtt", "a.vtt", "WEBVTT\n", "text/vtt"},
		{"png", "a.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"},
		{"png named .jpg", "a.jpg", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"},
		{"svg named .png", "a.png", `<svg xmlns="http://www.w3.org/2000/svg"><script>x</script></svg>`, "text/plain; charset=utf-8"},
	}
	for _, tc := range tests {
		if got := mediatype.Sniff([]byte(tc.head), tc.file); got != tc.want {
			t.Errorf("%s: Sniff = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestIsMedia(t *testing.T) {
	t.Parallel()
	for ct, want := range map[string]bool{
		"video/mp4": true, "audio/mpeg": true, "image/png": true, "video/mp2t": true,
		"image/svg+xml": false, "text/html; charset=utf-8": false, "text/vtt": false,
		"application/vnd.apple.mpegurl": false, "application/octet-stream": false, "": false, "video/": false,
	} {
		if got := mediatype.IsMedia(ct); got != want {
			t.Errorf("IsMedia(%q) = %v, want %v", ct, got, want)
		}
	}
}
