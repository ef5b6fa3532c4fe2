package runner_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// transcodeThumbPackage is a 3-step job: transcode a generated clip, take a thumbnail of the
// result, package the result as HLS.
var transcodeThumbPackage = []string{
	"ffmpeg -f lavfi -i testsrc=d=4:s=320x240:r=25 -c:v libx264 -pix_fmt yuv420p -g 25 a.mp4",
	"ffmpeg -i a.mp4 -frames:v 1 thumb.jpg",
	"ffmpeg -i a.mp4 -c copy -f hls -hls_time 1 -hls_segment_filename seg_%03d.ts index.m3u8",
}

func outputNames(res workqueue.Result) []string {
	var names []string
	for _, f := range res.Files {
		names = append(names, f.Path)
	}
	slices.Sort(names)
	return names
}

// TestStepsChain: the steps run in order in one work directory, each reading what the earlier
// ones wrote; the job's outputs are the last step's, and those params.keep names.
func TestStepsChain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name string
		keep []string
		want []string
	}{
		{"the last step's outputs", nil, []string{"index.m3u8"}},
		{"and those kept", []string{"thumb.jpg", "a.mp4"}, []string{"a.mp4", "index.m3u8", "thumb.jpg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := map[string]any{"steps": transcodeThumbPackage}
			if tc.keep != nil {
				p["keep"] = tc.keep
			}
			res := b.runParams(t, "", p, time.Minute, workqueue.Limits{})
			if res.Failure != nil {
				t.Fatalf("failed: %+v", failed(res))
			}
			var got []string
			for _, n := range outputNames(res) {
				if !strings.HasPrefix(n, "seg_") {
					got = append(got, n)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("outputs %v (segments aside), want %v", outputNames(res), tc.want)
			}
			if segs := len(outputNames(res)) - len(got); segs < 3 {
				t.Errorf("%d HLS segments among the outputs %v, want the 4-second clip's (about 4)", segs, outputNames(res))
			}
			if res.ComputeMs <= 0 {
				t.Errorf("ComputeMs %d, want the compute of the three steps", res.ComputeMs)
			}
		})
	}
}

// TestStepsProgress: progress spans the steps, rising from the first step's share to near the
// end, and the media time written adds up across them. Each step reads its input at its own
// rate (-re), so that it lasts its 3 s on any machine and reports progress more than once
// (FFmpeg reports every half second); unpaced, a fast machine ran the second step between two
// reports.
func TestStepsProgress(t *testing.T) {
	t.Parallel()
	fractions, processed := setup(t).runWatchedParams(t, map[string]any{"steps": []string{
		"ffmpeg -re -f lavfi -i testsrc=d=3:s=320x240:r=25 -c:v libx264 -pix_fmt yuv420p a.mp4",
		"ffmpeg -re -i a.mp4 -vf scale=160:120 -c:v libx264 b.mp4",
	}})
	if len(fractions) < 2 {
		t.Fatalf("progress %v, want reports from both steps", fractions)
	}
	if !slices.IsSorted(fractions) {
		t.Errorf("progress went back: %v", fractions)
	}
	if first, last := fractions[0], fractions[len(fractions)-1]; first > 0.5 || last <= 0.5 || last > 0.99 {
		t.Errorf("progress from %v to %v, want the first step in the first half and the end near 1 (%v)", first, last, fractions)
	}
	if end := processed[len(processed)-1]; end < 5*time.Second {
		t.Errorf("processed ended at %v, want both steps' 3 s", end)
	}
}

// TestStepsFailureNamesTheStep: a failing middle step fails the job naming it, with its own
// stderr; the compute used so far is the job's, and nothing is collected.
func TestStepsFailureNamesTheStep(t *testing.T) {
	t.Parallel()
	res := setup(t).runParams(t, "", map[string]any{"steps": []string{
		transcodeThumbPackage[0],
		"ffmpeg -i a.mp4 -map 0:a -c:a aac b.m4a", // the clip has no audio
		transcodeThumbPackage[2],
	}}, time.Minute, workqueue.Limits{})
	e := failed(res)
	if e == nil || e.Code != problem.CodeRunnerError || !strings.HasPrefix(e.Message, "step 2 of 3: ffmpeg exited with status") {
		t.Fatalf("error %+v, want RUNNER_ERROR naming step 2 of 3", e)
	}
	if e.Detail == nil || !strings.Contains(*e.Detail, "0:a") {
		t.Errorf("detail %v, want step 2's complaint about its map", e.Detail)
	}
	if res.ComputeMs <= 0 || len(res.Files) != 0 {
		t.Errorf("ComputeMs %d, files %v; want the compute used and no outputs", res.ComputeMs, res.Files)
	}
}

// TestStepsShareTheJobCaps: the per-job caps on bytes and files span the steps, so a chain
// cannot write more than one command may: each step below passes alone, the two together pass
// the cap in the second.
func TestStepsShareTheJobCaps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name  string
		steps []string
		caps  workqueue.Limits
		limit string
	}{
		// Each step writes about 11.5 MB of raw video.
		{"bytes", []string{
			"ffmpeg -f lavfi -i testsrc=d=2:s=320x240:r=25 -c:v rawvideo a.avi",
			"ffmpeg -f lavfi -i testsrc=d=2:s=320x240:r=25 -c:v rawvideo b.avi",
		}, workqueue.Limits{Bytes: 16 << 20, Files: 1000}, "job_bytes"},
		// Each step writes 30 frames.
		{"files", []string{
			"ffmpeg -f lavfi -i testsrc=d=1:s=32x32:r=30 a_%03d.png",
			"ffmpeg -f lavfi -i testsrc=d=1:s=32x32:r=30 b_%03d.png",
		}, workqueue.Limits{Bytes: 1 << 30, Files: 45}, "job_files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, s := range tc.steps {
				if res := b.runCapped(t, "", s, time.Minute, tc.caps); res.Failure != nil {
					t.Fatalf("%q alone failed: %+v", s, failed(res))
				}
			}
			res := b.runParams(t, "", map[string]any{"steps": tc.steps}, time.Minute, tc.caps)
			e := failed(res)
			if e == nil || e.Code != problem.CodeLimitExceeded || !strings.HasPrefix(e.Message, "step 2 of 2: ") || !strings.Contains(e.Message, tc.limit) {
				t.Fatalf("error %+v, want LIMIT_EXCEEDED in step 2 naming %s", e, tc.limit)
			}
		})
	}
}

// TestStepsOnWarmSandboxes: a chain runs the same on warm sandboxes, which take the staged
// files in and give the outputs back at each step.
func TestStepsOnWarmSandboxes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sb := b.exec.Sandbox.(*sandbox.Sandbox)
	root := filepath.Join(b.root, "warm")
	pool, err := sandbox.NewPool(sb, sandbox.PoolConfig{Size: 2, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b.exec.Sandbox = pool
	for i := range 5 {
		res := b.runParams(t, "", map[string]any{"steps": transcodeThumbPackage, "keep": []string{"thumb.jpg"}}, time.Minute, workqueue.Limits{})
		if e := failed(res); e != nil {
			t.Fatalf("run %d failed: %+v %s", i, e, deref(e.Detail))
		}
	}
	if pool.WarmRuns() == 0 {
		t.Fatal("no run took a warm sandbox")
	}
}
