package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// The sandbox covers /usr/local unless something it is configured with lies there, by its path
// or through a link: then covering it would hide what a run needs.
func TestUsesUsrLocal(t *testing.T) {
	t.Parallel()
	links := t.TempDir()
	toLocal := filepath.Join(links, "to-local")
	if err := os.Symlink("/usr/local/share", toLocal); err != nil {
		t.Fatal(err)
	}
	toUsr := filepath.Join(links, "to-usr")
	if err := os.Symlink("/usr/bin", toUsr); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  Config
		want bool
	}{
		{"defaults", Config{Prlimit: "/usr/bin/prlimit", Programs: []string{FFmpeg, FFprobe}}, false},
		{"program under /usr/local", Config{Prlimit: "/usr/bin/prlimit", Programs: []string{"/usr/local/bin/ffmpeg"}}, true},
		{"prlimit under /usr/local", Config{Prlimit: "/usr/local/bin/prlimit", Programs: []string{FFmpeg}}, true},
		{"read-only path under /usr/local", Config{Prlimit: "/usr/bin/prlimit", Programs: []string{FFmpeg}, ReadOnlyPaths: []string{"/usr/local/nvidia"}}, true},
		{"read-only path linked into /usr/local", Config{Prlimit: "/usr/bin/prlimit", Programs: []string{FFmpeg}, ReadOnlyPaths: []string{toLocal}}, true},
		{"read-only path linked elsewhere", Config{Prlimit: "/usr/bin/prlimit", Programs: []string{FFmpeg}, ReadOnlyPaths: []string{toUsr}}, false},
		{"GPU library linked into /usr/local", Config{Prlimit: "/usr/bin/prlimit", Programs: []string{FFmpeg},
			GPU: &GPU{Libraries: []Mount{{Source: toLocal, Target: "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}}}}, true},
		{"GPU library bound under /usr/local", Config{Prlimit: "/usr/bin/prlimit", Programs: []string{FFmpeg},
			GPU: &GPU{Libraries: []Mount{{Source: toUsr, Target: "/usr/local/lib/libcuda.so.1"}}}}, true},
	} {
		if got := usesUsrLocal(tt.cfg); got != tt.want {
			t.Errorf("%s: usesUsrLocal = %v, want %v", tt.name, got, tt.want)
		}
	}
}
