package runner

import "testing"

func TestFormatName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ names, file, want string }{
		{"mov,mp4,m4a,3gp,3g2,mj2", "out.mp4", "mp4"},
		{"mov,mp4,m4a,3gp,3g2,mj2", "clip.mov", "mov"},
		{"mov,mp4,m4a,3gp,3g2,mj2", "a.m4a", "m4a"},
		{"matroska,webm", "v.webm", "webm"},
		{"matroska,webm", "v.mkv", "mkv"},
		{"mpegts", "seg_001.ts", "ts"},
		{"png_pipe", "frame_001.png", "png"},
		{"image2", "thumb.jpeg", "jpg"},
		{"hls", "index.m3u8", "m3u8"},
		{"wav", "a.wav", "wav"},
		{"mov,mp4,m4a,3gp,3g2,mj2", "noext", "mov"},
	} {
		if got := formatName(tc.names, tc.file); got != tc.want {
			t.Errorf("formatName(%q, %q) = %q, want %q", tc.names, tc.file, got, tc.want)
		}
	}
}
