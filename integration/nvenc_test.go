package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestNVENCOnAGPUWorker runs NVENC jobs end to end where an NVIDIA GPU exists: `serve` with a
// `mediajobs worker --class gpu` (which checks at start that FFmpeg lists an NVENC encoder and
// that the device nodes are there); a command asking for h264_nvenc or hevc_nvenc (compute
// auto) is routed to it, runs in the sandbox with only the NVIDIA device nodes and driver
// libraries passed through, and is billed at the GPU rate. Elsewhere it skips; the routing,
// billing and validation are TestGPUJobsGoToGPUWorkers, which runs everywhere.
func TestNVENCOnAGPUWorker(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/nvidia0"); err != nil {
		testenv.Unavailable(t, "an NVIDIA GPU (/dev/nvidia0 is absent)", nil)
	}
	srv := fleetServer(t, sqliteBackend, nil)
	bare := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:duration=1",
		"-c:v", "h264_nvenc", "-f", "null", "-")
	if out, err := bare.CombinedOutput(); err != nil {
		// A GPU without NVENC (the H100 and H200 have none): the worker must refuse to start,
		// saying why, rather than take GPU jobs it cannot run.
		cmd := exec.Command(binary, "worker", "--control", srv.Base, "--class", "gpu", "--work-dir", dataDir(t))
		cmd.Env = append(os.Environ(), "MEDIAJOBS_WORKER_TOKEN="+workerToken)
		msg, werr := cmd.CombinedOutput()
		if werr == nil || !strings.Contains(string(msg), "NVENC") && !strings.Contains(string(msg), "nvenc") {
			t.Fatalf("worker --class gpu on a GPU without NVENC: %v, %s; want a refusal naming NVENC", werr, msg)
		}
		testenv.Unavailable(t, "NVENC on this GPU", fmt.Sprintf("%s; worker --class gpu refused to start: %s",
			strings.TrimSpace(string(out)), strings.TrimSpace(string(msg))))
	}
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
	startWorker(t, srv.Base, 2, "MEDIAJOBS_CLASS=gpu")
	for _, codec := range []struct{ encoder, want string }{{"h264_nvenc", "h264"}, {"hevc_nvenc", "hevc"}} {
		j := c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc2=size=1280x720:rate=30:duration=2 -c:v "+codec.encoder+" -preset p1 out.mp4", nil, nil))
		if j.Status != "complete" || j.Output == nil || j.Output.File == nil {
			t.Fatalf("%s job: %s %s", codec.encoder, j.Status, errorText(j))
		}
		if j.Cost == nil || j.Cost.Amount < 10 {
			t.Errorf("%s job cost %+v, want at least one GPU second (10 credits)", codec.encoder, j.Cost)
		}
		path := filepath.Join(t.TempDir(), "out.mp4")
		if err := os.WriteFile(path, c.mustGet(j.Output.File.URL), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(context.Background(), "ffprobe", "-v", "error", "-select_streams", "v:0",
			"-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", path).Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != codec.want+",1280,720" {
			t.Errorf("%s output: ffprobe says %q (%v), want %s,1280,720", codec.encoder, got, err, codec.want)
		}
	}
}
