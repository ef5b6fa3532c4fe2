package mediajobs

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/dockersandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sandbox/sandboxtest"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// TestDockerWorkersShareAnEngine: a worker starting on a machine where another worker's job
// runs in a Docker container removes only its own leftovers, not that container, and the job
// ends as it would have.
func TestDockerWorkersShareAnEngine(t *testing.T) {
	t.Parallel()
	testservices.RequireImage(t, dockersandbox.DefaultImage)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, _, err := newSandbox(ctx, AgentConfig{Sandbox: "docker", WorkDir: sandboxtest.WorkDir(t), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	work := sandboxtest.WorkDir(t)
	type ran struct {
		res sandbox.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		// Three seconds at the input's own rate, writing its output from the start.
		res, err := first.Run(ctx, sandbox.Spec{Dir: work, Program: sandbox.FFmpeg, Timeout: time.Minute,
			Args: sandboxtest.FFmpegArgs("-re", "-f", "lavfi", "-i", "color=size=32x32:rate=10:duration=3", "-f", "nut", "out.nut")})
		done <- ran{res, err}
	}()
	// Its container runs once it has opened its output.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(work, "out.nut")); err == nil {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the first worker's run ended before its output was opened: %+v, %v", r.res, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the first worker's run did not open its output within a minute")
		}
		time.Sleep(20 * time.Millisecond) // polling the work directory for the output
	}
	if _, _, err := newSandbox(ctx, AgentConfig{Sandbox: "docker", WorkDir: sandboxtest.WorkDir(t), Log: log}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("the first worker's run after the second started: exit %d, %v\n%s", r.res.ExitCode, r.err, r.res.StderrTail)
	}
}

// TestDockerOwner: a worker's Docker owner is its host's and its work directory's, however
// the directory is written, and the data directory's when it has no work directory.
func TestDockerOwner(t *testing.T) {
	t.Parallel()
	if a, b := dockerOwner(AgentConfig{WorkDir: "work"}), dockerOwner(AgentConfig{WorkDir: "./work/"}); a != b {
		t.Errorf("work and ./work/ own %q and %q", a, b)
	}
	if a, b := dockerOwner(AgentConfig{WorkDir: "/srv/a"}), dockerOwner(AgentConfig{WorkDir: "/srv/b"}); a == b {
		t.Errorf("two work directories share the owner %q", a)
	}
	if a, b := dockerOwner(AgentConfig{Data: "/srv/data"}), dockerOwner(AgentConfig{WorkDir: "/srv/data"}); a != b {
		t.Errorf("a worker with only a data directory owns %q, want %q", a, b)
	}
}
