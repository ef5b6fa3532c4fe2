package runner

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

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

func TestTagsAreBoundedAndDeterministic(t *testing.T) {
	t.Parallel()
	in := map[string]string{}
	for i := range 100 {
		in[fmt.Sprintf("Key%03d", i)] = strings.Repeat("v", 2000)
	}
	first := tags(in)
	if len(first) != 64 {
		t.Fatalf("%d tags kept, want 64", len(first))
	}
	for range 20 {
		if got := tags(in); !reflect.DeepEqual(got, first) {
			t.Fatal("tags kept differ between calls")
		}
	}
	if _, ok := first["key000"]; !ok || len(first["key063"]) != 1024 {
		t.Fatalf("want the first 64 keys, lower-cased, values cut to 1024 bytes: %d", len(first["key063"]))
	}
}

func TestContainerFormat(t *testing.T) {
	t.Parallel()
	const iso = "mov,mp4,m4a,3gp,3g2,mj2"
	for _, tc := range []struct{ names, file, brand, want string }{
		{iso, "source", "isom", "mp4"},
		{iso, "source", "mp42", "mp4"},
		{iso, "source", "qt  ", "mov"},
		{iso, "source", "M4A ", "m4a"},
		{iso, "source", "", "mp4"},
		{iso, "clip.mov", "isom", "mov"},
		{"matroska,webm", "source", "", "matroska"},
	} {
		if got := containerFormat(tc.names, tc.file, tc.brand); got != tc.want {
			t.Errorf("containerFormat(%q, %q, %q) = %q, want %q", tc.names, tc.file, tc.brand, got, tc.want)
		}
	}
}
