package integration

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a newcomer meets first: the Quick start's clip plays, the start-up banner names the
// console and the API reference, `make help` prints values, and a second server on a data
// directory in use refuses to start.

// TestQuickStartClipsPlay: every FFmpeg command of the README and the docs that encodes H.264
// with libx264 asks for yuv420p. Without it a camera's or a test pattern's 4:4:4 frames give a
// High 4:4:4 file that browsers and most players refuse.
func TestQuickStartClipsPlay(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	quickStart := 0
	for _, path := range append([]string{filepath.Join("..", "README.md")}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		section := ""
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "## ") {
				section = line
			}
			if !strings.Contains(line, "ffmpeg ") || !strings.Contains(line, "libx264") {
				continue
			}
			if filepath.Base(path) == "README.md" && strings.HasPrefix(section, "## Quick start") {
				quickStart++
			}
			if !strings.Contains(line, "-pix_fmt yuv420p") {
				t.Errorf("%s:%d: an H.264 example without -pix_fmt yuv420p, which players may refuse:\n%s", path, i+1, line)
			}
		}
	}
	if quickStart == 0 {
		t.Errorf("the README's Quick start has no libx264 command: the test checks nothing there")
	}
}

// TestStartupBanner: `mediajobs serve` logs, and `mediajobs dev` prints, where the console, the
// API reference and the OpenAPI document are.
func TestStartupBanner(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend})
	log := s.log.String()
	for _, want := range []string{`"console":"` + s.Base + `/"`, `"docs":"` + s.Base + `/docs"`, `"openapi":"` + s.Base + `/openapi.json"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the serve log's start-up line lacks %s:\n%s", want, log)
		}
	}

	addr := freeAddr(t)
	cmd := exec.Command(binary, "dev", "--addr", addr, "--data", dataDir(t))
	cmd.Env = cliEnv("MEDIAJOBS_RUNNER=false")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	var banner strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(banner.String(), "Stop with Ctrl-C.") {
		banner.WriteString(sc.Text() + "\n")
	}
	base := "http://" + addr
	for _, want := range []string{"web console is at " + base + "/ ", "API reference at " + base + "/docs ", base + "/openapi.json"} {
		if !strings.Contains(banner.String(), want) {
			t.Errorf("mediajobs dev's banner lacks %q:\n%s", want, banner.String())
		}
	}
}

// TestMakeHelp: `make help` prints the values of the variables its lines name, not $(ADDR).
func TestMakeHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"defaults", nil, []string{"start the service on 127.0.0.1:8080 with data in ./var", "for 10s"}},
		{"overridden", []string{"ADDR=0.0.0.0:9000", "DATA=/srv/mj"}, []string{"start the service on 0.0.0.0:9000 with data in /srv/mj"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", "..", "help"}, tt.args...)...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make help: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "$(") {
				t.Errorf("make help prints a variable's name, not its value:\n%s", out)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("make help lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestOneServerPerDataDir: a second `mediajobs serve` on a data directory that a running one
// serves exits 1 saying which directory and which process, and changes nothing; the first goes
// on serving, and admin commands still open the directory. The lock goes with its process,
// however it ends: after a crash the directory serves again.
func TestOneServerPerDataDir(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOpts{Backend: sqliteBackend})
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()

	for _, sub := range []string{"serve", "dev"} {
		r := mediajobs(t, "", []string{"MEDIAJOBS_RUNNER=false"}, sub, "--addr", freeAddr(t), "--data", s.Data)
		for _, want := range []string{s.Data, "pid " + strconv.Itoa(pid), "another --data"} {
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("a second %s on %s: exit %d, stderr %q; want 1 and %q", sub, s.Data, r.code, r.stderr, want)
			}
		}
		if strings.Contains(r.stdout, "API key") {
			t.Errorf("a refused dev printed its banner:\n%s", r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Data, "dev-account.json")); err == nil {
		t.Errorf("a refused dev made its account")
	}
	ready := func() {
		t.Helper()
		resp, err := http.Get(s.Base + "/readyz")
		if err != nil {
			t.Fatalf("the first server: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the first server: /readyz %d", resp.StatusCode)
		}
	}
	ready()
	createAccount(t, s, "free") // an admin command, on the directory in use

	s.kill()
	start := time.Now()
	s.start(t) // fails the test unless it gets ready
	ready()
	t.Logf("served again %s after a crash", time.Since(start).Round(time.Millisecond))
}
