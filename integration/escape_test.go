package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSandboxHoldsWhenValidatorIsFooled submits commands the validator accepts but that make
// FFmpeg reach beyond its inputs: an inline input named in.mp4 whose content is an HLS playlist.
// FFmpeg probes the content, not the name, so the HLS demuxer opens the segments the playlist
// names. Only the sandbox stands in the way: no host file system, no network.
func TestSandboxHoldsWhenValidatorIsFooled(t *testing.T) {
	t.Parallel()

	// A host file the sandbox user could read if it were mounted: world-readable, in a
	// directory every user can traverse.
	hostDir := filepath.Join(dataDir(t), "host")
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(hostDir, "secret.ts")
	if err := ffmpegBare(context.Background(), hostDir, "-f", "lavfi", "-i", "testsrc=duration=1:size=64x64:rate=10",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-metadata", "title=HOSTSECRET", "secret.ts"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(secret, 0o644); err != nil {
		t.Fatal(err)
	}
	readHostFile := fmt.Sprintf("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n%s\n#EXT-X-ENDLIST\n", secret)

	// Outside the sandbox the same command does read the host file: the attempt is real.
	control := t.TempDir()
	if err := os.WriteFile(filepath.Join(control, "in.mp4"), []byte(readHostFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ffmpegBare(context.Background(), control, "-i", "in.mp4", "-c", "copy", "out.mkv"); err != nil {
		t.Fatalf("control run outside the sandbox did not read the host file, so this test proves nothing: %v", err)
	}

	media := startMediaServer(t, map[string][]byte{"seg.ts": mustRead(t, secret)})
	reachNetwork := fmt.Sprintf("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n%s/seg.ts\n#EXT-X-ENDLIST\n", media.URL)

	forEachBackend(t, func(t *testing.T, b backend) {
		// The allow-list opens loopback to the fetcher, so only the sandbox's empty network
		// namespace keeps FFmpeg from the media server.
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{
			"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8",
			"SSL_CERT_FILE":                    media.CertFile,
		}})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
		for name, playlist := range map[string]string{"host file": readHostFile, "network": reachNetwork} {
			t.Run(name, func(t *testing.T) {
				before := media.requests.Load()
				id := c.submit(ffmpegJob("ffmpeg -i in.mp4 -c copy out.mkv",
					map[string]any{"in.mp4": map[string]any{"content": playlist}}, nil))
				j := c.waitTerminal(id)
				if j.Status == "complete" {
					for _, f := range j.Output.Files {
						if bytes.Contains(c.mustGet(f.URL), []byte("HOSTSECRET")) {
							t.Fatalf("job %s copied the host's secret into %s", id, f.Path)
						}
					}
					t.Errorf("job %s completed; want it to fail, the playlist's segment out of reach", id)
				}
				if j.Status == "failed" && (j.Error == nil || j.Error.Code != "RUNNER_ERROR") {
					t.Errorf("job %s: %s, want RUNNER_ERROR from FFmpeg", id, errorText(j))
				}
				if n := media.requests.Load() - before; n != 0 {
					t.Errorf("FFmpeg in the sandbox reached the network: %d requests", n)
				}
			})
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
