package validator

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// SplitRun is a split command's work: the encode of each part, the audio's encode, and the join
// of the encoded parts with the audio into the command's output. Every command is an argument
// list after "ffmpeg" that Validate accepts, to be run in the sandbox like any command.
type SplitRun struct {
	// Parts are the parts' commands, in order; part i reads the input from its start cut to its
	// end cut and writes PartNames[i], video only.
	Parts     [][]string
	PartNames []string
	// Leads are how many seconds of the input each part encodes besides its own stretch, before
	// its cut and after the next, which the join drops (0 where the encoder does not lead in:
	// splitLeadIDR).
	Leads []float64
	// Trims cut the lead-out off the parts that have one, by stream copy, each reading a part's
	// file and writing the name the list gives it; they run once the parts are encoded, before
	// the join.
	Trims [][]string
	// Audio encodes the input's audio once, whole, into AudioName; nil when the output has no
	// audio.
	Audio     []string
	AudioName string
	// List is the concat demuxer's list of the parts, to write under ListName before the join.
	ListName, List string
	// Join concatenates the parts by stream copy and muxes the audio in, writing the output.
	Join []string
}

// The names a split writes besides the output; SplitCommands refuses a command that reads or
// writes one of them.
const (
	splitPartPrefix = "split_part_"
	splitCutPrefix  = "split_cut_"
	splitAudioName  = "split_audio"
	splitListName   = "split_parts.txt"
)

// SplitCommands writes the commands of a split of an accepted, splittable command (plan is
// Result.Plan): cuts are frame times of the input, in seconds and increasing (its keyframes, or
// the whole encode's: CutPoints), where the parts meet, so there are len(cuts)+1 parts; audio says that the input has an audio stream; rate is
// the input's video frame rate, in frames per second (0 when not known).
//
// Each part seeks on the input side (-ss before -i), which starts decoding at the keyframe at
// or before the cut and drops every frame before it: at a keyframe cut, the part's first frame
// is that keyframe. -to before -i ends the part before the frame at its end cut, which is the
// next part's first, so every frame is in exactly one part. FFmpeg reads both times in
// microseconds and rounds them to the stream's time base, so a time printed to the microsecond
// names the frame exactly. A part's timestamps start at 0; where the graph reads the time
// (subtitles, t in an expression), it is shifted to the source's time around the graph.
//
// A part also puts its keyframes where the whole encode puts them (keyframeGrid): a frame that
// is an I-frame in the whole output and a B-frame in the stitched one is several dB below it.
// That takes the frame rate; without it a split of such an encoder is refused.
//
// And an x264 part leads in and out (splitLeadIDR): it starts encoding a quarter of a second
// before its cut and ends as much after the next, forcing IDR frames at both cuts. The join
// starts it at its cut (the concat list's inpoint) and a trim (Trims) ends it before the next,
// both by stream copy. An encoder starting cold spends its first frames finding its rate, and
// one ending encodes its last frames with nothing after them to look ahead to; the whole
// encode meets both cuts in its stride, and with the lead-in and lead-out so do the parts.
func SplitCommands(plan *Plan, cuts []float64, audio bool, rate float64) (*SplitRun, error) {
	return splitCommands(plan, cuts, audio, rate, true)
}

// SplitCommandsWithoutTrims is SplitCommands for a runner that does not run a SplitRun's Trims
// (one of an earlier build): no part leads out, and Trims is empty.
func SplitCommandsWithoutTrims(plan *Plan, cuts []float64, audio bool, rate float64) (*SplitRun, error) {
	return splitCommands(plan, cuts, audio, rate, false)
}

func splitCommands(plan *Plan, cuts []float64, audio bool, rate float64, leadOut bool) (*SplitRun, error) {
	sh, reason := splitParse(plan)
	if reason != "" {
		return nil, errors.New("the command cannot be split: " + reason)
	}
	gop := sh.keyframeInterval()
	if gop > 1 && !(rate >= 1 && rate <= MaxFrameRate) {
		return nil, errors.New("the input's frame rate is not known or not constant: the parts could not put their keyframes where the whole encode puts them")
	}
	prev := 0.0
	for _, c := range cuts {
		if math.IsNaN(c) || math.IsInf(c, 0) || c <= prev || c > 1e9 {
			return nil, errors.New("cut " + strconv.FormatFloat(c, 'g', -1, 64) + " is not a time after the one before it")
		}
		prev = c
	}
	if sh.timed && strings.Contains(sh.graph, ";") {
		return nil, errors.New("the command cannot be split: its -vf reads the time and has more than one chain")
	}
	run := &SplitRun{ListName: splitListName}
	names := []string{sh.input, sh.output, sh.still}
	var list strings.Builder
	leadIn, every := splitLeadIDR[sh.videoEncoder()], leadFrames(sh, rate)
	for i := 0; i <= len(cuts); i++ {
		name := splitPartPrefix + pad3(i+1) + sh.ext
		// The part covers cut to the next cut; its encode starts at from, in frames before
		// cut, and ends out frames after the next cut.
		cut, from, in, out := 0.0, 0.0, 0, 0
		if i > 0 {
			cut, from = cuts[i-1], cuts[i-1]
			if every > 0 { // no earlier than the input's start
				in = min(every, int(math.Floor(cut*rate+1e-6)))
				// A quarter of a frame before the lead-in's first: a container that keeps
				// times to the millisecond (mkv) rounds that frame's time, and FFmpeg the
				// seek's, and an exact seek could fall just after it at an NTSC rate. The
				// encoder's time base (1/rate) takes the quarter back off the part's frames.
				from = max(0, from-(float64(in)+0.25)/rate)
			}
		}
		if i < len(cuts) && every > 0 && leadOut {
			out = every
		}
		var seek []string
		start := strconv.FormatFloat(from, 'f', 6, 64)
		if i > 0 {
			seek = append(seek, "-ss", start)
		}
		if i < len(cuts) {
			seek = append(seek, "-to", strconv.FormatFloat(cuts[i]+float64(out)/rate, 'f', 6, 64))
		}
		part := append(append(clone(sh.global), seek...), "-i", sh.input)
		if sh.still != "" {
			part = append(part, "-i", sh.still)
		}
		if sh.graph != "" {
			graph := sh.graph
			if sh.timed && i > 0 {
				graph = "setpts=round(PTS+" + start + "/TB)," + graph + ",setpts=round(PTS-" + start + "/TB)"
			}
			part = append(part, sh.graphFlag, graph)
		}
		part = append(part, sh.video...)
		// The frame of the next cut, counted in the part's frames, where it leads out.
		end, lead := -1, 0.0
		if out > 0 {
			end = in + int(math.Round(cuts[i]*rate)-math.Round(cut*rate))
		}
		if in+out > 0 {
			lead = float64(in+out) / rate
		}
		switch {
		case in > 0 || out > 0:
			part = append(append(part, "-force_key_frames", leadKeyframes(cut, rate, gop, in, end)), leadIn...)
		case i > 0 && gop > 1:
			part = append(part, "-force_key_frames", keyframeGrid(cuts[i-1], rate, gop))
		}
		part = append(part, "-an", "-sn", "-dn", name)
		run.Parts = append(run.Parts, part)
		run.PartNames = append(run.PartNames, name)
		run.Leads = append(run.Leads, lead)
		joined := name
		if out > 0 {
			// The lead-out goes by stream copy: the frames before the IDR frame at the
			// end cut are the first end packets in decoding order, and only they.
			joined = splitCutPrefix + pad3(i+1) + sh.ext
			run.Trims = append(run.Trims, append(clone(sh.global), "-i", name, "-map", "0:v", "-c", "copy", "-frames:v", strconv.Itoa(end), joined))
		}
		list.WriteString("file '" + joined + "'\n")
		if in > 0 {
			list.WriteString("inpoint " + strconv.FormatFloat(float64(in)/rate, 'f', 6, 64) + "\n")
		}
	}
	run.List = list.String()
	run.Join = append(clone(sh.global), "-f", "concat", "-i", splitListName)
	if audio && !sh.noAudio {
		run.AudioName = splitAudioName + sh.ext
		run.Audio = append(append(append(clone(sh.global), "-i", sh.input, "-vn", "-sn", "-dn"), sh.audio...), run.AudioName)
		// The audio's file carries the source's global metadata (its title, say), which the
		// whole command would have copied: the concat list has none.
		run.Join = append(run.Join, "-i", run.AudioName, "-map", "0:v", "-map", "1:a", "-map_metadata", "1")
	}
	run.Join = append(append(append(run.Join, "-c", "copy"), sh.join...), sh.output)
	for _, n := range names {
		if n != "" && (n == splitListName || strings.HasPrefix(n, splitAudioName) || strings.HasPrefix(n, splitPartPrefix) || strings.HasPrefix(n, splitCutPrefix)) {
			return nil, errors.New("the command cannot be split: it names " + strconv.Quote(n) + ", a name the split writes")
		}
	}
	if err := run.validate(plan); err != nil {
		return nil, err
	}
	return run, nil
}

// validate holds every command of the run to the validator, with the files each reads staged.
func (run *SplitRun) validate(plan *Plan) error {
	staged := func(names ...string) Options {
		o := Options{Inputs: map[string]Input{}}
		for _, n := range names {
			if n != "" {
				o.Inputs[n] = Input{Inline: true, ContentSize: 1}
			}
		}
		return o
	}
	check := func(what string, args []string, opts Options) error {
		r := Validate(CommandLine(args), opts)
		if !r.Valid {
			return errors.New("the " + what + " command is refused: " + r.Error)
		}
		if len(r.RequiredInputs) > 0 {
			return errors.New("the " + what + " command reads " + strconv.Quote(r.RequiredInputs[0]) + ", which it is not given")
		}
		return nil
	}
	// A part reads what the whole command reads (its input, a still image, the fonts, subtitles
	// and LUTs of its graph), staged as they are for the whole command, and nothing else.
	reads := staged(Validate(CommandLine(plan.Args), Options{}).RequiredInputs...)
	for i, p := range run.Parts {
		if err := check("part "+strconv.Itoa(i+1), p, reads); err != nil {
			return err
		}
	}
	if run.Audio != nil {
		if err := check("audio", run.Audio, reads); err != nil {
			return err
		}
	}
	joined := append([]string{splitListName, run.AudioName}, run.PartNames...)
	for i, tr := range run.Trims {
		if err := check("trim "+strconv.Itoa(i+1), tr, staged(run.PartNames...)); err != nil {
			return err
		}
		joined = append(joined, tr[len(tr)-1])
	}
	return check("join", run.Join, staged(joined...))
}

// CommandLine writes arguments as the command line "ffmpeg ARG...", each argument one word to
// Validate's splitter: quoted in single quotes where it is not plain.
func CommandLine(args []string) string {
	var b strings.Builder
	b.WriteString("ffmpeg")
	for _, a := range args {
		b.WriteByte(' ')
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/+=,@%", r))
		}) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

func pad3(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

func clone(s []string) []string { return append([]string(nil), s...) }

// splitLeadSeconds is about how much of the input a part encodes before its cut and after the
// next. Measured on x264 (docs/performance.md): on a 25 fps source with scene cuts, the stitched
// frames after a cut were up to 4.2 dB below the whole's without a lead-in, and within 0.2 dB
// of them past the cut's own frame with one of half a second, one second or four, and a
// quarter second did as well as half; on a 30 fps testsrc2, the last frame of a part was 2.4 dB
// below the whole's without a lead-out, and at most 1.3 dB with one of a quarter, a half or a
// whole second. Each second of lead costs every part but the first and the last twice over,
// which eight parts of a minute feel (7.5 s each).
const splitLeadSeconds = 0.25

// splitLeadIDR are the encoders whose parts lead in and out, with the options that make the
// keyframes forced at the cuts IDR frames, where the join can start and end a part by stream
// copy: nothing after an IDR frame refers to a frame before it. x264 makes a forced keyframe an
// IDR frame with -forced-idr, open GOPs or not; x265 with open GOPs (its default) makes it a
// CRA frame, which does not start a new sequence, so a join there confuses the decoder's
// picture order.
var splitLeadIDR = map[string][]string{"libx264": {"-forced-idr", "1"}}

// leadFrames is how many frames a part of sh encodes before its cut and after the next, on an
// input of rate frames a second: whole frames, so that each cut is a frame of the part's own
// count and time; 0 where its encoder does not lead in, encodes every frame as a keyframe, or
// the rate is not known.
func leadFrames(sh *splitShape, rate float64) int {
	if _, ok := splitLeadIDR[sh.videoEncoder()]; !ok || sh.keyframeInterval() == 1 || !(rate >= 1 && rate <= MaxFrameRate) {
		return 0
	}
	return max(1, int(math.Round(splitLeadSeconds*rate)))
}

// SplitLead is how many seconds of the input a part of an accepted, splittable command encodes
// before its cut, and as many after the next (SplitRun.Leads), on an input of rate frames a
// second; for PlanCuts, which counts them as part of the part.
func SplitLead(plan *Plan, rate float64) float64 {
	sh, reason := splitParse(plan)
	if reason != "" {
		return 0
	}
	if n := leadFrames(sh, rate); n > 0 {
		return float64(n) / rate
	}
	return 0
}

// leadKeyframes is the -force_key_frames expression of a part whose stretch starts at cut
// seconds, that leads in lead frames before it and, when end is not negative, leads out from
// its frame end (the next cut, counted in the part's frames from 0): an IDR frame at its cut,
// then, for an encode with a keyframe every gop frames, the whole encode's grid from there
// (keyframeGrid), and one at end. The first part, with no lead-in, starts on the grid anyway.
// The frames of the lead-in and the lead-out are dropped at the join, keyframes or not.
func leadKeyframes(cut, rate float64, gop, lead, end int) string {
	var terms []string
	if lead > 0 {
		at := strconv.Itoa(lead)
		if gop <= 1 {
			terms = append(terms, "eq(n,"+at+")")
		} else {
			terms = append(terms, "if(eq(n_forced,0),eq(n,"+at+"),gte(n,"+strconv.FormatInt(int64(lead)+toGrid(cut, rate, gop), 10)+"+(n_forced-1)*"+strconv.Itoa(gop)+"))")
		}
	}
	if end >= 0 {
		terms = append(terms, "eq(n,"+strconv.Itoa(end)+")")
	}
	return "expr:" + strings.Join(terms, "+")
}

// keyframeGrid is the -force_key_frames expression of a part starting at cut seconds into an
// input of rate frames per second, for an encode that puts a keyframe every gop frames from the
// input's first: a keyframe at each frame of that grid after the part's first frame (which is a
// keyframe anyway), counted in the part's frames (n, from 0). The encoder counts its interval
// again from a forced keyframe, so from the first the part's keyframes are the whole encode's.
func keyframeGrid(cut, rate float64, gop int) string {
	return "expr:gte(n," + strconv.FormatInt(toGrid(cut, rate, gop), 10) + "+n_forced*" + strconv.Itoa(gop) + ")"
}

// toGrid is how many frames after the frame at cut seconds (rate frames a second) the whole
// encode's next keyframe of its grid of gop frames comes.
func toGrid(cut, rate float64, gop int) int64 {
	first := int64(math.Round(cut * rate))
	return (first/int64(gop)+1)*int64(gop) - first
}
