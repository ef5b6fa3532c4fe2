package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/job"
)

func TestPlaylistSegments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		playlist string
		want     []segment
	}{
		{"media playlist", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.000000,\nseg_000.ts\n#EXTINF:1.4995,\nseg_001.ts\n#EXT-X-ENDLIST\n",
			[]segment{{"seg_000.ts", 2000}, {"seg_001.ts", 1500}}},
		{"title after the comma, CRLF", "#EXTM3U\r\n#EXTINF:1.5,a title\r\nseg.ts\r\n", []segment{{"seg.ts", 1500}}},
		{"tags between the duration and the URI", "#EXTINF:1,\n#EXT-X-PROGRAM-DATE-TIME:2026-11-26T00:00:00Z\nseg.ts\n", []segment{{"seg.ts", 1000}}},
		{"master playlist names no segment", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000\nv0.m3u8\n", nil},
		{"a URI without a duration", "#EXTM3U\nseg.ts\n", nil},
		{"an unreadable duration", "#EXTINF:abc,\nseg.ts\n", nil},
		{"a negative duration", "#EXTINF:-1,\nseg.ts\n", nil},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "index.m3u8")
			if err := os.WriteFile(path, []byte(tc.playlist), 0o644); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, playlistSegments(path), cmp.AllowUnexported(segment{})); d != "" {
				t.Fatalf("segments (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlaylistSegmentsFollowNoLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "real.m3u8")
	if err := os.WriteFile(target, []byte("#EXTINF:1,\nseg.ts\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "index.m3u8")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if got := playlistSegments(link); got != nil {
		t.Fatalf("a playlist that is a link was read: %+v", got)
	}
}

func TestFillFromPlaylistsKeepsProbedMeta(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.m3u8"), []byte("#EXTINF:2,\na.ts\n#EXTINF:1,\nb.ts\n#EXTINF:1,\nnot-a-file.ts\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []job.File{
		{Path: "index.m3u8", Type: job.FilePlaylist},
		{Path: "a.ts", Type: job.FileVideo, Meta: &job.Meta{Format: "ts", Width: 64, Height: 48, DurationMs: 1990}},
		{Path: "b.ts", Type: job.FileVideo},
	}
	fillFromPlaylists(dir, files)
	want := []*job.Meta{nil, {Format: "ts", Width: 64, Height: 48, DurationMs: 1990}, {Format: "ts", Width: 64, Height: 48, DurationMs: 1000}}
	for i, f := range files {
		if d := cmp.Diff(want[i], f.Meta); d != "" {
			t.Errorf("%s meta (-want +got):\n%s", f.Path, d)
		}
	}
}

// FuzzPlaylistSegments: a playlist is a command's output, untrusted; reading it never panics and
// every segment it yields has a name and a duration that is not negative.
func FuzzPlaylistSegments(f *testing.F) {
	f.Add([]byte("#EXTM3U\n#EXTINF:2.000000,\nseg_000.ts\n#EXT-X-ENDLIST\n"))
	f.Add([]byte("#EXTINF:1e308,\nx.ts\n#EXTINF:NaN,\ny.ts\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "index.m3u8")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, s := range playlistSegments(path) {
			if s.name == "" || s.durationMs < 0 {
				t.Fatalf("segment %+v", s)
			}
		}
	})
}
