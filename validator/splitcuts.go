package validator

import (
	"math"
	"strconv"
)

// MaxSplitSeconds is the longest input PlanCuts cuts: a day, far past any job's time limit; a
// duration beyond it is a broken or crafted probe.
const MaxSplitSeconds = 86400

// PlanCuts chooses where to cut an input of duration seconds, whose keyframes are at keys (as the
// runner's Keyframes reads them), into at most n parts: the cuts, keyframe times in order, that make the
// longest part as short as the keyframes allow, since the longest part is how long the split
// encode takes when every part has a worker. The last part is the one the job's own runner takes
// once it has encoded the audio, which costs it as much time as encoding tail seconds of the
// video (SplitAudioShare); so the last part counts tail seconds longer than it is, and comes out
// that much shorter than the others. Each part encodes lead seconds of the input before its
// cut and after the next (SplitLead), where it has them, which count as part of it. It takes no more parts than
// that needs, so it may return fewer than n-1 cuts. With no cut, reason says why the input is
// not split.
//
// The tail never costs a part: where the keyframes leave no cut that shortens the last part
// while keeping as many parts as even ones (on a 2 s grid, 60 s in 8 parts with a 7 s tail
// comes out as 7 parts of 10 s), the parts stay even. Fewer parts would make every part longer
// and leave the job's own slot idle once the audio is done, and slots are not equal: the
// slowest one then holds a longer part, which costs more than the tail saves (8 slots on a lent
// 16-CPU host, docs/performance.md).
func PlanCuts(keys []float64, duration float64, n int, tail, lead float64) (cuts []float64, reason string) {
	if !(lead > 0) || lead > duration {
		lead = 0
	}
	even, reason := planCuts(keys, duration, n, 0, lead)
	if reason != "" || !(tail > 0) {
		return even, reason
	}
	if cuts, _ = planCuts(keys, duration, n, tail, lead); len(cuts) < len(even) {
		return even, ""
	}
	return cuts, ""
}

func planCuts(keys []float64, duration float64, n int, tail, lead float64) (cuts []float64, reason string) {
	switch {
	case n < 2:
		return nil, "one part was asked for"
	case !(duration > 0):
		return nil, "the input's duration is not known"
	case duration > MaxSplitSeconds:
		return nil, "the input's duration of " + strconv.FormatFloat(duration, 'g', 6, 64) + " s is past the " + strconv.Itoa(MaxSplitSeconds) + " s a split takes"
	case len(keys) == 0:
		return nil, "the input has no video keyframes"
	case keys[0] > 0.001:
		// The whole encode keeps the video's offset from the audio (or fills it with repeated
		// frames); a part, written without audio, starts its video at 0, and the join loses it.
		return nil, "the video starts " + strconv.FormatFloat(keys[0], 'f', 3, 64) +
			" s after the input's start (its audio begins first), an offset the parts would lose"
	}
	var inside []float64
	for _, k := range keys {
		if k > 0 && k < duration && (len(inside) == 0 || k > inside[len(inside)-1]) {
			inside = append(inside, k)
		}
	}
	if len(inside) == 0 {
		return nil, "the input has no keyframe to cut at after its first"
	}
	// The audio's time is counted as video after the end, where no cut may fall.
	if !(tail > 0) {
		tail = 0
	}
	end := duration + math.Min(tail, duration)
	// The longest part is at least the longest stretch between keyframes and at most the whole;
	// halve the range between until it is tight to a millionth of a second.
	lo, prev := 0.0, 0.0
	for _, k := range inside {
		lo, prev = math.Max(lo, k-prev), k
	}
	lo = math.Max(lo, end-prev)
	hi := end
	// At most 100 halvings: from a range of at most MaxSplitSeconds that is far below 1e-6 s,
	// and a bound keeps a range that floats cannot halve any more from spinning.
	for i := 0; i < 100 && hi-lo > 1e-6; i++ {
		mid := (lo + hi) / 2
		if len(greedyCuts(inside, end, mid, lead)) < n {
			hi = mid
		} else {
			lo = mid
		}
	}
	return greedyCuts(inside, end, hi, lead), ""
}

// greedyCuts cuts each part at the last keyframe that keeps it within longest seconds, counting
// lead seconds more for each cut it meets.
func greedyCuts(inside []float64, duration, longest, lead float64) []float64 {
	var cuts []float64
	from := 0.0 // where the part's encode starts, its lead-in included
	for i := 0; duration-from > longest; {
		j := i
		for j < len(inside) && inside[j]+lead-from <= longest {
			j++
		}
		if j == i {
			// No keyframe within reach (longest is below a gap between keyframes): every
			// keyframe left is a cut, more than any n that longest was tried for.
			return append(cuts, inside[i:]...)
		}
		cuts = append(cuts, inside[j-1])
		from = inside[j-1] - lead
		i = j
	}
	return cuts
}
