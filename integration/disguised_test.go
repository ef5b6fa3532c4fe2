package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/dockersandbox"
	"github.com/mediajobs/mediajobs/adapters/testservices"
)

// TestDisguisedInputs submits staged inputs whose content is not what their names say: an
// HLS playlist named .srt or .mp4 (naming a host file, or a URL on a server that counts its
// requests), a concat list named .vtt (read with -i and with -f concat). FFmpeg left to its
// probe would follow them (the control run below shows it does, outside the sandbox). Uploaded,
// the runner refuses each before FFmpeg starts, as VALIDATION_ERROR naming the input, free, and
// nothing of the host or the network is read; given inline, POST /jobs refuses them (400). It
// runs on each store with the in-process runner (bubblewrap) and with a worker on the Docker
// runner. (The sandboxes behind it are tested with the same files in adapters/sandbox/sandboxtest.)
func TestDisguisedInputs(t *testing.T) {
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
	concatHostFile := fmt.Sprintf("ffconcat version 1.0\nfile '%s'\n", secret)

	// Outside the sandbox and without the runner's checks the same inputs do read the host
	// file: the attempts are real.
	control := t.TempDir()
	for name, content := range map[string]string{"m.srt": readHostFile, "l.vtt": concatHostFile} {
		if err := os.WriteFile(filepath.Join(control, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ffmpegBare(context.Background(), control, "-i", "m.srt", "-c", "copy", "out.mkv"); err != nil {
		t.Fatalf("control run: FFmpeg did not follow the playlist named .srt, so this test proves nothing: %v", err)
	}
	if err := ffmpegBare(context.Background(), control, "-safe", "0", "-i", "l.vtt", "-c", "copy", "out2.mkv"); err != nil {
		t.Fatalf("control run: FFmpeg did not follow the concat list named .vtt, so this test proves nothing: %v", err)
	}

	media := startMediaServer(t, map[string][]byte{"seg.ts": mustRead(t, secret)})
	reachNetwork := fmt.Sprintf("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n%s/seg.ts\n#EXT-X-ENDLIST\n", media.URL)

	// Each backend with the in-process runner (bubblewrap), and a worker on the Docker runner.
	type setup struct {
		backend backend
		sandbox string
	}
	setups := []setup{{sandbox: "docker", backend: sqliteBackend}}
	for _, b := range backends {
		setups = append(setups, setup{backend: b})
	}
	for _, su := range setups {
		name := string(su.backend)
		if su.sandbox != "" {
			name += "/worker-" + su.sandbox
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDisguised(t, su.backend, su.sandbox, media, readHostFile, reachNetwork, concatHostFile)
		})
	}
}

func testDisguised(t *testing.T, b backend, sandbox string, media *mediaServer, readHostFile, reachNetwork, concatHostFile string) {
	if sandbox == "docker" {
		testservices.RequireImage(t, dockersandbox.DefaultImage)
	}
	// The allow-list opens loopback to the fetcher, so only the runner's checks and the
	// sandbox's empty network namespace keep FFmpeg from the media server.
	env := map[string]string{"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": media.CertFile}
	var srv *server
	if sandbox == "" {
		srv = startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: env})
	} else {
		env["MEDIAJOBS_RUNNER"], env["MEDIAJOBS_WORKER_TOKEN"] = "false", workerToken
		srv = startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: env})
		startWorker(t, srv.Base, 2, "MEDIAJOBS_SANDBOX="+sandbox, "MEDIAJOBS_ALLOW_PRIVATE_NETWORKS=127.0.0.0/8", "SSL_CERT_FILE="+media.CertFile)
	}
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	tests := []struct {
		name, input, content, command, message string
	}{
		{"playlist named .srt, host file", "m.srt", readHostFile, "ffmpeg -i m.srt -c copy out.mkv", `input "m.srt" holds an HLS playlist`},
		{"playlist named .srt, network", "m.srt", reachNetwork, "ffmpeg -i m.srt -c copy out.mkv", `input "m.srt" holds an HLS playlist`},
		{"playlist named .srt, in a filter", "m.srt", readHostFile, "ffmpeg -f lavfi -i color=s=64x48:d=1 -vf subtitles=m.srt out.mp4", `input "m.srt" holds an HLS playlist`},
		{"playlist named .mp4", "in.mp4", readHostFile, "ffmpeg -i in.mp4 -c copy out.mkv", `input "in.mp4" holds an HLS playlist`},
		{"concat list named .vtt", "l.vtt", concatHostFile, "ffmpeg -i l.vtt -c copy out.mkv", `input "l.vtt" holds a concat list`},
		{"concat list named .vtt, -f concat", "l.vtt", "file 'a.srt'\n", "ffmpeg -f concat -i l.vtt out.srt", "a concat list must be named .txt or .ffconcat"},
		{"concat list naming a host file", "list.txt", concatHostFile, "ffmpeg -f concat -i list.txt -c copy out.mkv", "is an absolute path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := media.requests.Load()
			// Uploaded, so that the runner's check of the bytes is what refuses it; inline
			// content is refused at submit (below).
			up := c.uploadRaw(tc.input, []byte(tc.content))
			id := c.submit(ffmpegJob(tc.command, map[string]any{tc.input: up.URL}, nil))
			j := c.waitTerminal(id)
			if j.Status == "complete" {
				for _, f := range j.Output.Files {
					if bytes.Contains(c.mustGet(f.URL), []byte("HOSTSECRET")) {
						t.Fatalf("job %s copied the host's secret into %s", id, f.Path)
					}
				}
			}
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "VALIDATION_ERROR" || !strings.Contains(j.Error.Message, tc.message) {
				t.Errorf("job %s: %s %s; want failed VALIDATION_ERROR with %q", id, j.Status, errorText(j), tc.message)
			}
			if j.Cost == nil || j.Cost.Amount != 0 {
				t.Errorf("job %s refused before FFmpeg ran, yet cost %+v", id, j.Cost)
			}
			if n := media.requests.Load() - before; n != 0 {
				t.Errorf("the job reached the network: %d requests", n)
			}
		})
	}
	t.Run("inline content is refused at submit", func(t *testing.T) {
		for _, tc := range tests {
			r := c.do(http.MethodPost, "/jobs", ffmpegJob(tc.command, map[string]any{tc.input: map[string]any{"content": tc.content}}, nil), nil)
			if e := r.errorOf(t, http.StatusBadRequest); e.Code != "VALIDATION_ERROR" || !strings.Contains(e.Message, tc.message) {
				t.Errorf("%s inline: %+v, want VALIDATION_ERROR with %q", tc.name, e, tc.message)
			}
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
