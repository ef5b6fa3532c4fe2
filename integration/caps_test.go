package integration

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cappedPricing writes the built-in pricing, unthrottled, with every plan's jobBytes set to
// bytes, and returns its path for MEDIAJOBS_PRICING.
func cappedPricing(t *testing.T, dir string, bytes int64) string {
	t.Helper()
	return editedPricing(t, dir, "capped-pricing.json", func(_ string, plan map[string]any) { plan["jobBytes"] = bytes })
}

// editedPricing writes the built-in pricing, unthrottled, with edit applied to each plan (by its
// name), as file in dir, and returns its path for MEDIAJOBS_PRICING.
func editedPricing(t *testing.T, dir, file string, edit func(name string, plan map[string]any)) string {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(mustRead(t, unthrottledPricing(t, dir)), &p); err != nil {
		t.Fatal(err)
	}
	for name, pl := range p["plans"].(map[string]any) {
		edit(name, pl.(map[string]any))
	}
	out, _ := json.Marshal(p)
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTimeoutPastThePlanCap: params.timeout takes 1 to 900 seconds on every plan. A Free job
// asking for more than its plan's execution cap is accepted and fails RUNNER_TIMEOUT, free, when
// it runs past the cap (here lowered to 2 seconds so the test need not wait 5 minutes); 901 is
// refused naming params.timeout.
func TestTimeoutPastThePlanCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startServer(t, serverOpts{Backend: sqliteBackend, Env: map[string]string{
		"MEDIAJOBS_PRICING": editedPricing(t, dir, "short-cap.json", func(name string, plan map[string]any) {
			if name == "free" {
				plan["executionCapSeconds"] = 2
			}
		})}})
	c := newClient(t, srv, createAccount(t, srv, "free").APIKey)

	if e := c.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 out.mp4", nil,
		map[string]any{"timeout": 901}), nil).errorOf(t, http.StatusBadRequest); e.Code != "VALIDATION_ERROR" || !strings.Contains(e.Message, "params.timeout") {
		t.Fatalf("timeout 901: %+v, want VALIDATION_ERROR naming params.timeout", e)
	}
	marker := "capped_" + randomHex(4) + ".mp4"
	j := c.waitTerminal(c.submit(ffmpegJob(longCommand(marker), nil, map[string]any{"timeout": 900})))
	if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_TIMEOUT" || !strings.Contains(j.Error.Message, "2 seconds") {
		t.Fatalf("job %s: %s %s; want failed RUNNER_TIMEOUT at the plan's 2-second cap", j.ID, j.Status, errorText(j))
	}
	if j.Cost == nil || j.Cost.Amount != 0 {
		t.Fatalf("job %s cost %+v; a timed-out job is free", j.ID, j.Cost)
	}
	waitProcesses(t, marker, false)
}

// TestPerJobCaps: through the binary, a job that writes without end fails on the plan's byte
// cap and one that writes 5,000 images fails on its file cap, each LIMIT_EXCEEDED naming the
// cap; the work directory is freed, and the service stays healthy and runs the next job.
func TestPerJobCaps(t *testing.T) {
	t.Parallel()
	const byteCap = 64 << 20
	data := dataDir(t)
	srv := startServer(t, serverOpts{Backend: sqliteBackend, Data: data,
		Env: map[string]string{"MEDIAJOBS_PRICING": cappedPricing(t, filepath.Dir(data), byteCap)}})
	c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

	tests := []struct {
		name    string
		command string
		limit   string
	}{
		// Raw video in 1 s segments: ~23 MB a second for an hour, far past the cap, in many
		// files each far under the per-file size limit.
		{"bytes", "ffmpeg -f lavfi -i testsrc=duration=3600:size=640x480:rate=25 -c:v rawvideo -f segment -segment_time 1 seg_%04d.avi", "67108864 bytes (job_bytes)"},
		// 5,000 tiny images, five times the plan's 1,000 files.
		{"files", "ffmpeg -f lavfi -i testsrc=duration=100:size=32x32:rate=50 -f image2 img_%05d.png", "1000 files (job_files)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := c.waitTerminal(c.submit(ffmpegJob(tc.command, nil, map[string]any{"timeout": 300})))
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "LIMIT_EXCEEDED" || !strings.Contains(j.Error.Message, tc.limit) {
				t.Fatalf("job %s: %s %s; want failed LIMIT_EXCEEDED naming %s", j.ID, j.Status, errorText(j), tc.limit)
			}
			if j.Output != nil && (j.Output.File != nil || len(j.Output.Files) != 0) {
				t.Errorf("a capped job kept outputs: %+v", j.Output)
			}
			if r := c.as("").do(http.MethodGet, "/readyz", nil, nil); r.Status != http.StatusOK {
				t.Fatalf("GET /readyz after the capped job: %d %s", r.Status, r.Body)
			}
			// The runner empties a run's work directory once its report is taken (and keeps it,
			// empty, for the next job: adapters/workdir).
			deadline := time.Now().Add(30 * time.Second)
			for {
				left := filesUnder(t, filepath.Join(data, "work"))
				if left == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d files left in the work directories 30 s after the capped job", left)
				}
				time.Sleep(50 * time.Millisecond) // the poll interval of a wait on the directory
			}
			c.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -pix_fmt yuv420p after_"+tc.name+".mp4", nil, nil))
		})
	}
}

// filesUnder counts what is under root that is not a directory; 0 when root is missing.
func filesUnder(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
