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
	splitAudioName  = "split_audio"
	splitListName   = "split_parts.txt"
)

// SplitCommands writes the commands of a split of an accepted, splittable command (plan is
// Result.Plan): cuts are the input's keyframe times, in seconds and increasing, where the parts
// meet, so there are len(cuts)+1 parts; audio says that the input has an audio stream; rate is
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
func SplitCommands(plan *Plan, cuts []float64, audio bool, rate float64) (*SplitRun, error) {
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
	for i := 0; i <= len(cuts); i++ {
		name := splitPartPrefix + pad3(i+1) + sh.ext
		var seek []string
		start := ""
		if i > 0 {
			start = strconv.FormatFloat(cuts[i-1], 'f', 6, 64)
			seek = append(seek, "-ss", start)
		}
		if i < len(cuts) {
			seek = append(seek, "-to", strconv.FormatFloat(cuts[i], 'f', 6, 64))
		}
		part := append(append(clone(sh.global), seek...), "-i", sh.input)
		if sh.still != "" {
			part = append(part, "-i", sh.still)
		}
		if sh.graph != "" {
			graph := sh.graph
			if sh.timed && start != "" {
				graph = "setpts=round(PTS+" + start + "/TB)," + graph + ",setpts=round(PTS-" + start + "/TB)"
			}
			part = append(part, sh.graphFlag, graph)
		}
		part = append(part, sh.video...)
		if i > 0 && gop > 1 {
			part = append(part, "-force_key_frames", keyframeGrid(cuts[i-1], rate, gop))
		}
		part = append(part, "-an", "-sn", "-dn", name)
		run.Parts = append(run.Parts, part)
		run.PartNames = append(run.PartNames, name)
		list.WriteString("file '" + name + "'\n")
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
		if n != "" && (n == splitListName || strings.HasPrefix(n, splitAudioName) || strings.HasPrefix(n, splitPartPrefix)) {
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
	return check("join", run.Join, staged(append([]string{splitListName, run.AudioName}, run.PartNames...)...))
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

// keyframeGrid is the -force_key_frames expression of a part starting at cut seconds into an
// input of rate frames per second, for an encode that puts a keyframe every gop frames from the
// input's first: a keyframe at each frame of that grid after the part's first frame (which is a
// keyframe anyway), counted in the part's frames (n, from 0). The encoder counts its interval
// again from a forced keyframe, so from the first the part's keyframes are the whole encode's.
func keyframeGrid(cut, rate float64, gop int) string {
	first := int64(math.Round(cut * rate))
	next := (first/int64(gop) + 1) * int64(gop)
	return "expr:gte(n," + strconv.FormatInt(next-first, 10) + "+n_forced*" + strconv.Itoa(gop) + ")"
}
