package integration

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// stepsJob is an ffmpeg job of a chain of commands.
func stepsJob(steps []string, params map[string]any) map[string]any {
	p := map[string]any{"steps": steps}
	for k, v := range params {
		p[k] = v
	}
	return map[string]any{"type": "ffmpeg", "params": p}
}

// TestMultiStepJobs runs chains of commands as one job through the binary, on both stores: a
// transcode, a thumbnail and an HLS package complete as one job with the last step's outputs
// and the kept thumbnail; progress moves past the first step's share while a later step runs;
// a failing middle step fails the job naming it, charged once; a refused step changes nothing.
func TestMultiStepJobs(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b})
		c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)

		t.Run("transcode, thumbnail, package", func(t *testing.T) {
			t.Parallel()
			c := newClient(t, srv, c.Key)
			j := c.complete(stepsJob([]string{
				"ffmpeg -f lavfi -i testsrc=duration=3:size=160x90:rate=10 -c:v libx264 -preset ultrafast -pix_fmt yuv420p -g 10 web.mp4",
				"ffmpeg -i web.mp4 -frames:v 1 poster.jpg",
				"ffmpeg -i web.mp4 -c copy -f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts index.m3u8",
			}, map[string]any{"keep": []string{"poster.jpg"}}))
			var names []string
			for _, f := range j.Output.Files {
				if !strings.HasPrefix(f.Path, "seg_") {
					names = append(names, f.Path)
				}
			}
			sort.Strings(names)
			if strings.Join(names, " ") != "index.m3u8 poster.jpg" || len(j.Output.Files) < 4 {
				t.Errorf("outputs %+v; want index.m3u8 with its segments, and poster.jpg", j.Output.Files)
			}
			if j.Output.File == nil || j.Output.File.Path != "index.m3u8" {
				t.Errorf("file %+v, want the manifest of the last step's stream", j.Output.File)
			}
			if j.Cost == nil || j.Cost.Amount < 1 {
				t.Errorf("cost %+v, want the compute of the three steps", j.Cost)
			}
		})

		t.Run("progress spans the steps", func(t *testing.T) {
			t.Parallel()
			c := newClient(t, srv, c.Key)
			// The second step runs for minutes: once it reports, progress is past the first
			// step's half of the job, and the job is cancelled.
			id := c.submit(stepsJob([]string{
				"ffmpeg -f lavfi -i testsrc=duration=1:size=160x90:rate=10 -c:v libx264 -preset ultrafast a.mp4",
				"ffmpeg -f lavfi -i testsrc=duration=600:size=320x180:rate=25 -c:v libx264 -preset ultrafast b.mp4",
			}, nil))
			c.waitWithin(id, "past half its progress", 3*time.Minute, func(j jobView) bool { return j.Progress != nil && *j.Progress >= 0.5 })
			var v jobView
			c.do(http.MethodPost, "/jobs/"+id+"/cancel", nil, nil).decode(t, http.StatusOK, &v)
		})

		t.Run("a failing middle step names itself", func(t *testing.T) {
			t.Parallel()
			c := newClient(t, srv, c.Key)
			id := c.submit(stepsJob([]string{
				"ffmpeg -f lavfi -i testsrc=duration=1:size=160x90:rate=10 -c:v libx264 -preset ultrafast web.mp4",
				"ffmpeg -i web.mp4 -map 0:a -c:a aac audio.m4a", // the clip has no audio
				"ffmpeg -i web.mp4 -frames:v 1 poster.jpg",
			}, nil))
			j := c.waitTerminal(id)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_ERROR" || !strings.HasPrefix(j.Error.Message, "step 2 of 3: ") {
				t.Fatalf("job %+v %s; want RUNNER_ERROR naming step 2 of 3", j, errorText(j))
			}
			if j.Error.Detail == nil || !strings.Contains(*j.Error.Detail, "0:a") {
				t.Errorf("detail %v, want step 2's stderr", j.Error.Detail)
			}
			charge := c.chargeOf(t, id, 10*time.Second)
			if charge == nil || j.Cost == nil || -charge.Amount.Amount != j.Cost.Amount || j.Cost.Amount < 1 {
				t.Fatalf("charge %+v, cost %+v; want one charge of the compute used", charge, j.Cost)
			}
			n := 0
			for _, e := range c.ledger(t) {
				if e.Kind == "charge" && e.JobID == id {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d charges for the job, want 1", n)
			}
		})

		t.Run("a refused step stores nothing", func(t *testing.T) {
			t.Parallel()
			c := newClient(t, srv, createAccount(t, srv, "pro").APIKey)
			var before []jobView
			c.do(http.MethodGet, "/jobs?limit=100", nil, nil).decode(t, http.StatusOK, &before)
			for _, tc := range []struct {
				body map[string]any
				want string
			}{
				{stepsJob([]string{"ffmpeg -f lavfi -i testsrc=d=1 a.mp4", "ffmpeg -i a.mp4 -i /etc/passwd b.mp4"}, nil), "step 2 of 2: "},
				{stepsJob([]string{"ffmpeg -f lavfi -i testsrc=d=1 a.mp4", "ffmpeg -i b.mp4 c.mp4"}, nil), "step 2 of 2"},
				{stepsJob(make([]string, 11), nil), "params.steps"},
				{map[string]any{"type": "ffmpeg", "params": map[string]any{"command": "ffmpeg -f lavfi -i testsrc=d=1 a.mp4", "steps": []string{"ffmpeg -f lavfi -i testsrc=d=1 a.mp4"}}}, "both command and steps"},
			} {
				e := c.do(http.MethodPost, "/jobs", tc.body, nil).errorOf(t, http.StatusBadRequest)
				if e.Code != "VALIDATION_ERROR" || !strings.Contains(e.Message, tc.want) {
					t.Errorf("%v: %+v, want VALIDATION_ERROR naming %q", tc.body, e, tc.want)
				}
			}
			var after []jobView
			c.do(http.MethodGet, "/jobs?limit=100", nil, nil).decode(t, http.StatusOK, &after)
			if len(after) != len(before) {
				t.Errorf("%d jobs before the refused ones, %d after", len(before), len(after))
			}
		})
	})
}
