package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// make run serves with --data ./var: a relative data directory must work as an absolute one
// (the sandbox takes absolute work directories only).
func TestRelativeDataDirectory(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Unthrottled: true, Backend: sqliteBackend, RelativeData: true})
	c := newClient(t, srv, createAccount(t, srv, "free").APIKey)
	j := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=0.5:size=64x48:rate=10 -frames:v 1 thumb.png", nil, nil))
	if j.Output == nil || j.Output.File == nil || j.Output.File.Path != "thumb.png" {
		t.Fatalf("output %+v", j.Output)
	}
}

// A checkout in root's home (/root is 0700) keeps its data where the sandbox user cannot reach:
// job work directories must go elsewhere, and jobs must still run.
func TestDataDirectoryTheSandboxCannotReach(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOpts{Unthrottled: true, Backend: sqliteBackend, PrivateParent: true})
	// The server chose /var/tmp/mediajobs-<first 6 bytes of sha256(data dir), hex>: remove it.
	sum := sha256.Sum256([]byte(srv.Data))
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join("/var/tmp", "mediajobs-"+hex.EncodeToString(sum[:6]))) })
	c := newClient(t, srv, createAccount(t, srv, "free").APIKey)
	j := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=0.5:size=64x48:rate=10 -frames:v 1 thumb.png", nil, nil))
	if j.Output == nil || j.Output.File == nil || j.Output.File.Path != "thumb.png" {
		t.Fatalf("output %+v", j.Output)
	}
}
