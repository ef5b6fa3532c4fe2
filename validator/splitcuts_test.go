package validator

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlanCuts(t *testing.T) {
	t.Parallel()
	every := func(step, until float64) []float64 {
		var k []float64
		for x := 0.0; x < until; x += step {
			k = append(k, x)
		}
		return k
	}
	tests := []struct {
		name     string
		keys     []float64
		duration float64
		n        int
		want     []float64
		reason   string
	}{
		{"two parts on a 2 s grid", every(2, 20), 20, 2, []float64{10}, ""},
		{"four parts on a 2 s grid", every(2, 20), 20, 4, []float64{6, 12, 18}, ""},
		{"three parts, no even share on the grid", every(2, 20), 20, 3, []float64{8, 16}, ""},
		{"uneven keyframes", []float64{0, 1, 7, 8, 9, 15}, 16, 2, []float64{8}, ""},
		{"a long GOP bounds the parts", []float64{0, 9, 10}, 12, 4, []float64{9}, ""},
		{"keyframes past the end ignored", []float64{0, 5, 25}, 10, 2, []float64{5}, ""},
		{"one part", every(2, 20), 20, 1, nil, "one part was asked for"},
		{"only the first keyframe", []float64{0}, 20, 4, nil, "no keyframe to cut at"},
		{"no keyframes", nil, 20, 4, nil, "no video keyframes"},
		{"no duration", every(2, 20), 0, 2, nil, "duration is not known"},
		{"a duration past a day", []float64{0, 1e10, 2e10}, 3e10, 8, nil, "past the 86400 s a split takes"},
		{"video after the audio", []float64{0.523, 1.523, 2.523}, 8, 2, nil, "the video starts 0.523 s after the input's start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, reason := PlanCuts(tt.keys, tt.duration, tt.n, 0, 0)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("PlanCuts(%v, %v, %d) (-want +got):\n%s", tt.keys, tt.duration, tt.n, diff)
			}
			if (tt.reason == "") != (reason == "") || !strings.Contains(reason, tt.reason) {
				t.Fatalf("PlanCuts(%v, %v, %d) reason %q, want one containing %q", tt.keys, tt.duration, tt.n, reason, tt.reason)
			}
		})
	}
}

// TestPlanCutsTail: the last part, which the job's own runner encodes after the audio, is
// shorter by the audio's time counted as video (tail), so that every runner ends together; the
// cuts stay on keyframes, and a tail past the others' share leaves the last part small.
func TestPlanCutsTail(t *testing.T) {
	t.Parallel()
	var every2 []float64
	for x := 0.0; x < 60; x += 2 {
		every2 = append(every2, x)
	}
	tests := []struct {
		name       string
		n          int
		tail, lead float64
		want       []float64
	}{
		{"no audio", 2, 0, 0, []float64{30}},
		{"the benchmark's audio, 7 s of video", 2, 7, 0, []float64{34}},
		{"four parts", 4, 8, 0, []float64{18, 36, 54}},
		// With the tail, 8 parts of 8.4 s do not fit the grid and 7 parts of 10 s would: the
		// parts stay even instead, seven of 8 s and the last of 4 s.
		{"a tail that would cost a part", 8, 7, 0, []float64{8, 16, 24, 32, 40, 48, 56}},
		{"a tail the last part has room for", 8, 3, 0, []float64{8, 16, 24, 32, 40, 48, 56}},
		{"a tail longer than a share", 2, 50, 0, []float64{56}},
		{"a negative tail counts as none", 2, -5, 0, []float64{30}},
		{"a tail past the input counts as the input", 2, 1e9, 0, []float64{58}},
		// A part encodes lead seconds before its cut and after the next: they count as its
		// own, twice for a part between two cuts.
		{"leads either side of one cut", 2, 0, 3, []float64{30}},
		{"four parts with leads", 4, 0, 2, []float64{16, 30, 44}},
		{"a negative lead counts as none", 4, 0, -2, []float64{16, 32, 48}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, reason := PlanCuts(every2, 60, tt.n, tt.tail, tt.lead)
			if reason != "" {
				t.Fatalf("PlanCuts: %s", reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PlanCuts(2 s grid, 60, %d, %v, %v) (-want +got):\n%s", tt.n, tt.tail, tt.lead, diff)
			}
		})
	}
}

// TestPlanCutsLongestPart holds PlanCuts to its promise on grids of every step: no more than n
// parts, every cut a keyframe, and the longest part no longer than any choice of n-1 keyframes
// could make it (the ideal share rounded up to the grid).
func TestPlanCutsLongestPart(t *testing.T) {
	t.Parallel()
	for _, step := range []float64{0.5, 1, 4.0 / 3, 2, 2.5} {
		for n := 2; n <= 8; n++ {
			var keys []float64
			for i := 0; float64(i)*step < 30; i++ {
				keys = append(keys, float64(i)*step)
			}
			cuts, _ := PlanCuts(keys, 30, n, 0, 0)
			if len(cuts) > n-1 {
				t.Fatalf("step %v, n %d: %d cuts", step, n, len(cuts))
			}
			longest, prev := 0.0, 0.0
			for _, c := range append(append([]float64{}, cuts...), 30) {
				longest, prev = math.Max(longest, c-prev), c
			}
			best := math.Ceil(30/float64(n)/step-1e-9) * step
			if longest > best+1e-6 {
				t.Errorf("step %v, n %d: cuts %v make a %v s part, %v s is possible", step, n, cuts, longest, best)
			}
		}
	}
}
