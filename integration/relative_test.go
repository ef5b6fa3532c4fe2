package integration

import "testing"

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
