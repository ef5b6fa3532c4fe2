package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// escapeBundle holds host resources that commands try to reach. No validator runs here: the
// sandbox alone must stop every attempt.
type escapeBundle struct {
	testBundle
	hostDir    string // outside the work dir, world-readable, so only the sandbox can stop a read
	hostSecret string // a text file in hostDir
	hostVideo  string // a real media file in hostDir, so a failed read is the wall, not bad input
	httpURL    string
	tcpAddr    string
	hits       *atomic.Int64 // requests and connections the host listeners saw
}

func setupEscape(t *testing.T) escapeBundle {
	t.Helper()
	b := escapeBundle{testBundle: setup(t), hits: new(atomic.Int64)}
	b.hostDir = workDir(t)
	if err := os.Chmod(b.hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	b.hostSecret = filepath.Join(b.hostDir, "secret.txt")
	if err := os.WriteFile(b.hostSecret, []byte("host-secret-canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.hostVideo = filepath.Join(b.hostDir, "host.mp4")
	gen := exec.Command(FFmpeg, "-hide_banner", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x120", "-y", b.hostVideo)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("make host video: %v: %s", err, out)
	}
	if err := os.Chmod(b.hostVideo, 0o644); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		http.ServeFile(w, r, b.hostVideo)
	}))
	t.Cleanup(srv.Close)
	b.httpURL = srv.URL + "/host.mp4"

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.hits.Add(1)
			c.Close()
		}
	}()
	b.tcpAddr = ln.Addr().String()
	return b
}

func TestSandboxStopsFFmpegEscapes(t *testing.T) {
	t.Parallel()
	b := setupEscape(t)
	parent := filepath.Dir(b.dir)
	tag := fmt.Sprint(time.Now().UnixNano())
	// Parallel subtests finish before cleanups run, so this sees every attempt.
	t.Cleanup(func() {
		if n := b.hits.Load(); n != 0 {
			t.Errorf("host listeners saw %d connections from the sandbox", n)
		}
	})

	copyOut := func(input string) []string {
		return ffmpegArgs("-f", "data", "-i", input, "-map", "0", "-c", "copy", "-f", "data", "-y", "leak.bin")
	}
	tests := []struct {
		name string
		args []string
		// hostPaths must not exist on the host after the run.
		hostPaths []string
	}{
		{name: "read /etc/passwd", args: copyOut("/etc/passwd")},
		{name: "read /etc/shadow", args: copyOut("/etc/shadow")},
		{name: "read file:/root", args: copyOut("file:/root/.bashrc")},
		{name: "read host file by absolute path", args: copyOut(b.hostSecret)},
		{name: "read host file by file: URL", args: copyOut("file:" + b.hostSecret)},
		{name: "read host file through concat:", args: copyOut("concat:" + b.hostSecret + "|" + b.hostSecret)},
		{name: "read host file by traversal", args: copyOut("../" + filepath.Base(b.hostDir) + "/secret.txt")},
		{name: "read host video", args: ffmpegArgs("-i", b.hostVideo, "-frames:v", "1", "-y", "leak.png")},
		{name: "movie filter on /etc/passwd", args: ffmpegArgs("-f", "lavfi", "-i", "movie=/etc/passwd", "-frames:v", "1", "-y", "leak.png")},
		{name: "movie source on host video", args: ffmpegArgs("-f", "lavfi", "-i", "movie="+b.hostVideo, "-frames:v", "1", "-y", "leak.png")},
		{name: "movie in -vf on host video", args: ffmpegArgs("-f", "lavfi", "-i", "testsrc=duration=1", "-vf", "movie="+b.hostVideo+"[m];[in][m]overlay", "-frames:v", "1", "-y", "leak.png")},
		{name: "http to host loopback", args: ffmpegArgs("-rw_timeout", "2000000", "-i", b.httpURL, "-frames:v", "1", "-y", "leak.png")},
		{name: "tcp to host loopback", args: ffmpegArgs("-rw_timeout", "2000000", "-f", "data", "-i", "tcp://"+b.tcpAddr, "-map", "0", "-c", "copy", "-f", "data", "-y", "leak.bin")},
		{
			name:      "write to host /tmp",
			args:      ffmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-y", "/tmp/host-out-"+tag+".mp4"),
			hostPaths: []string{"/tmp/host-out-" + tag + ".mp4"},
		},
		{
			name:      "write by traversal",
			args:      ffmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-y", "../escape-"+tag+".mp4"),
			hostPaths: []string{filepath.Join(parent, "escape-"+tag+".mp4")},
		},
		{
			name:      "write to host absolute path",
			args:      ffmpegArgs("-f", "lavfi", "-i", "testsrc=duration=0.2", "-y", filepath.Join(b.hostDir, "abs-"+tag+".mp4")),
			hostPaths: []string{filepath.Join(b.hostDir, "abs-"+tag+".mp4")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := workDir(t)

			res := b.run(t, Spec{Dir: dir, Args: tt.args, Timeout: 30 * time.Second})

			if res.TimedOut {
				t.Fatalf("timed out; stderr: %s", res.StderrTail)
			}
			for _, p := range tt.hostPaths {
				if _, err := os.Stat(p); err == nil {
					os.Remove(p)
					t.Errorf("%s was written on the host", p)
				}
			}
			if tt.hostPaths == nil && res.ExitCode == 0 {
				t.Errorf("ffmpeg succeeded; stderr: %s", res.StderrTail)
			}
			assertNoLeak(t, dir)
		})
	}
}

// TestSandboxEscapeControls runs the escape commands against files inside the work dir: they
// succeed there, so the failures above are the wall and not a malformed command.
func TestSandboxEscapeControls(t *testing.T) {
	t.Parallel()
	b := setupEscape(t)
	for name, src := range map[string]string{"secret.txt": b.hostSecret, "host.mp4": b.hostVideo} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		out  string
	}{
		{"data copy", ffmpegArgs("-f", "data", "-i", "secret.txt", "-map", "0", "-c", "copy", "-f", "data", "-y", "copy.bin"), "copy.bin"},
		{"file: URL", ffmpegArgs("-f", "data", "-i", "file:secret.txt", "-map", "0", "-c", "copy", "-f", "data", "-y", "copy2.bin"), "copy2.bin"},
		{"movie source", ffmpegArgs("-f", "lavfi", "-i", "movie=host.mp4", "-frames:v", "1", "-y", "frame.png"), "frame.png"},
	}
	for _, tt := range tests {
		res := b.run(t, Spec{Args: tt.args})
		if res.ExitCode != 0 {
			t.Errorf("%s: exit %d: %s", tt.name, res.ExitCode, res.StderrTail)
			continue
		}
		if fi, err := os.Stat(filepath.Join(b.dir, tt.out)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: no output: %v", tt.name, err)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(b.dir, "copy.bin")); !bytes.Contains(data, []byte("host-secret-canary")) {
		t.Error("the data-copy command does not copy file contents; the escape test would prove nothing")
	}
}

// assertNoLeak fails when anything in dir carries host secrets.
func assertNoLeak(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, canary := range []string{"host-secret-canary", "root:x:0:0", "root:"} {
			if bytes.Contains(data, []byte(canary)) {
				t.Errorf("%s contains %q: host data leaked into the work dir", e.Name(), canary)
			}
		}
		if e.Name() == "leak.png" && len(data) > 0 {
			t.Errorf("leak.png was written: a host file was decoded")
		}
	}
}
