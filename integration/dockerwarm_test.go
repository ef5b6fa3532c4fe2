package integration

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/dockersandbox"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// TestDockerWorkerRunsWarm: a worker on the Docker runner keeps two containers started a slot; a
// job takes one, which is removed after and replaced; the job's output is what FFmpeg made; and
// the worker's stop removes the containers still waiting.
func TestDockerWorkerRunsWarm(t *testing.T) {
	t.Parallel()
	srv, _, mine := dockerWorker(t, func(mine func(string) bool) {
		if ids := sandboxContainers(mine, false); len(ids) > 0 {
			t.Errorf("after the worker stopped, its containers remain: %v", ids)
		}
	})
	before := sandboxContainers(mine, false)
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	j := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -c:v mpeg4 out.mp4", nil, nil))
	if len(j.Output.Files) != 1 || len(c.mustGet(j.Output.Files[0].URL)) == 0 {
		t.Fatalf("job %s: outputs %+v, want one non-empty out.mp4", j.ID, j.Output.Files)
	}
	waitUntil(t, "the used container removed and replaced", time.Minute, func() bool {
		now := sandboxContainers(mine, false)
		return len(now) == 2 && slices.ContainsFunc(before, func(id string) bool { return !slices.Contains(now, id) })
	})
}

// TestDockerWorkerKilledLeavesNoContainers: a worker on the Docker runner killed outright (no
// chance to close its pool; a container platform past its stop grace does this) leaves no
// warm container behind: each goes away once the worker's attach stream is gone.
func TestDockerWorkerKilledLeavesNoContainers(t *testing.T) {
	t.Parallel()
	_, w, mine := dockerWorker(t, nil)
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-w.exited
	waitUntil(t, "the killed worker's containers gone", time.Minute, func() bool { return len(sandboxContainers(mine, false)) == 0 })
}

// dockerWorker starts a control plane and a worker of one slot on the Docker runner, and waits
// for its two warm containers; mine matches their owner label. afterStop, unless nil, runs once
// the worker has stopped.
func dockerWorker(t *testing.T, afterStop func(mine func(string) bool)) (*server, *worker, func(string) bool) {
	t.Helper()
	testservices.RequireImage(t, dockersandbox.DefaultImage)
	srv := startServer(t, serverOpts{Unthrottled: true, Backend: sqliteBackend,
		Env: map[string]string{"MEDIAJOBS_RUNNER": "false", "MEDIAJOBS_WORKER_TOKEN": workerToken}})
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	var owner string
	mine := func(o string) bool { return o == owner }
	if afterStop != nil {
		t.Cleanup(func() { afterStop(mine) }) // registered first, so it runs after the worker's stop
	}
	w := startWorker(t, srv.Base, 1, "MEDIAJOBS_SANDBOX=docker")
	owner = host + ":" + w.Work
	waitUntil(t, "two warm containers", time.Minute, func() bool { return len(sandboxContainers(mine, true)) == 2 })
	return srv, w, mine
}
