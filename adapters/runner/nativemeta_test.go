package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/job"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// nativeMeta must agree with ffprobe, which it stands in for, on the files FFmpeg writes.
func TestNativeMetaAgreesWithFFprobe(t *testing.T) {
	t.Parallel()
	if err := sandbox.Available(); err != nil {
		testenv.Missing(t, "the bubblewrap sandbox (scripts/deps.sh installs bubblewrap)", err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	video := []string{"-f", "lavfi", "-i", "testsrc=duration=1.5:size=320x240:rate=10", "-pix_fmt", "yuv420p"}
	tests := []struct {
		name string
		args []string
	}{
		{"out.mp4", video},
		{"out.mov", video},
		{"faststart.mp4", append(append([]string{}, video...), "-movflags", "+faststart")},
		{"sound.m4a", []string{"-f", "lavfi", "-i", "sine=duration=2", "-c:a", "aac"}},
		{"frame.png", []string{"-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1"}},
		{"frame.jpg", []string{"-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1"}},
		{"anim.gif", []string{"-f", "lavfi", "-i", "testsrc=duration=1:size=80x60:rate=5"}},
	}
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		args := append([]string{"-v", "error", "-y"}, tc.args...)
		if out, err := exec.Command("ffmpeg", append(args, filepath.Join(dir, tc.name))...).CombinedOutput(); err != nil {
			t.Fatalf("making %s: %v\n%s", tc.name, err, out)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nativeMeta(filepath.Join(dir, tc.name))
			if !ok {
				t.Fatal("nativeMeta did not read it")
			}
			want, err := Probe(context.Background(), sb, dir, tc.name)
			if err != nil {
				t.Fatalf("ffprobe: %v", err)
			}
			if filepath.Ext(tc.name) == ".png" || filepath.Ext(tc.name) == ".jpg" || filepath.Ext(tc.name) == ".gif" {
				want.DurationMs = 0 // a picture has no duration worth reporting
				got.DurationMs = 0
			}
			// Container durations may differ from the stream's by a frame's rounding.
			if d := got.DurationMs - want.DurationMs; d < -50 || d > 50 {
				t.Fatalf("durationMs %d, ffprobe %d", got.DurationMs, want.DurationMs)
			}
			got.DurationMs = want.DurationMs
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("meta (-ffprobe +native):\n%s", d)
			}
		})
	}
}

func TestNativeMetaRefusesJunk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"empty.mp4":  nil,
		"text.mp4":   []byte("this is not a movie at all"),
		"huge.mp4":   {0xff, 0xff, 0xff, 0xff, 'm', 'o', 'o', 'v', 0, 0},
		"loop.mp4":   {0, 0, 0, 0, 'f', 'r', 'e', 'e'},
		"bad.png":    []byte("\x89PNG\r\n\x1a\nnope"),
		"movie.webm": []byte("whatever"),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if m, ok := nativeMeta(p); ok {
			t.Errorf("%s: read %+v from junk", name, m)
		}
	}
	link := filepath.Join(dir, "link.mp4")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	if _, ok := nativeMeta(link); ok {
		t.Error("followed a symlink")
	}
}

func FuzzReadMovie(f *testing.F) {
	f.Add([]byte{0, 0, 0, 16, 'm', 'o', 'o', 'v', 0, 0, 0, 8, 'm', 'v', 'h', 'd'})
	f.Add([]byte{0, 0, 0, 1, 'm', 'o', 'o', 'v', 0, 0, 0, 0, 0, 0, 0, 16})
	f.Add([]byte{0, 0, 0, 0, 'f', 't', 'y', 'p'})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := readMovie(bytes.NewReader(data), int64(len(data)))
		if err == nil && (m.Width < 0 || m.Height < 0 || m.DurationMs < 0) {
			t.Fatalf("negative meta %+v", m)
		}
		_ = job.Meta{}
	})
}
