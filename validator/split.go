package validator

import (
	"cmp"
	"math"
	"path"
	"strconv"
	"strings"
)

// Split and stitch: an encode whose every output frame depends only on the same input frame can
// be cut at the input's keyframes, the parts encoded apart (on other workers), and the encoded
// parts joined with the concat demuxer without re-encoding; the audio is encoded once, whole,
// and muxed in at the join. Splittable proves a command has that shape from its plan, and
// SplitCommands writes the commands of the parts, of the audio and of the join.
//
// What is proved splittable, exactly:
//   - one input read from its start to its end: no input option at all (no -ss, -t, -to,
//     -sseof, -itsoffset, -stream_loop, -f, ...); a second input only when it is a still image
//     (.png, .jpg, .jpeg, .bmp, .webp, no options) that -filter_complex overlays;
//   - the filters of splitFilters, whose output frame is a function of the input frame alone;
//     expressions that read the frame number (n, N, frame_num, pos, random, %{n}, drawtext's
//     timecode, a drawtext textfile unless expansion=none) are refused, since a part counts its
//     frames from its own start; expressions and filters that read the time (t, pts, %{pts},
//     enable=, subtitles, ass) are allowed in -vf, where the parts shift their timestamps back
//     to the source's around the graph;
//   - one output file, mp4, mkv or mov, with a video encoder of splitEncoders (or the
//     container's default) and only the output options of splitOutputFlags, at a constant
//     rate factor or quantizer (rateReason: a bitrate target would be met per part, not over
//     the whole); each part begins with a keyframe and then keeps the whole encode's keyframe
//     grid (keyframeInterval), and an x264 part leads in and out (SplitCommands);
//   - no -t, -to, -ss, -frames, -fs on the output, no -r, -fps_mode or -vsync (which frames a
//     rate change keeps depends on where a part starts), no two-pass, no -shortest, no
//     -force_key_frames, no -copyts, no stream copy of the video.

// Split is the answer of Splittable: OK, or the sentence that says what prevents it.
type Split struct {
	OK     bool
	Reason string
	// Input is the video input the parts cut, when OK: the file whose keyframes the cuts
	// fall on.
	Input string
	// Still is the image -filter_complex overlays, when there is one: the runner checks that
	// the file is one still frame (an extension proves nothing of its content).
	Still string
}

// splitEncoders are the video encoders whose parts are proved to join by stream copy and to
// match the single pass frame for frame: x264 at a constant rate factor or quantizer, and
// MPEG-4 part 2 at a fixed quantizer (rateReason). Measured on a 30 s source with seven scenes
// (docs/performance.md): x264 -crf 23 within 1.6 dB of the single pass's every frame, MPEG-4 -q:v
// 4 within 2.8 dB.
var splitEncoders = map[string]bool{"libx264": true, "mpeg4": true}

// splitUnmatched are the encoders whose parts join but do not match the single pass frame for
// frame, on that source, with why: a split of theirs runs whole and says so.
var splitUnmatched = map[string]string{
	"libx265":    "places its B-frames from each part's start, and its forced keyframes are not IDR frames under its open GOPs: stitched frames came out 4 to 7 dB below the single pass's",
	"libvpx-vp9": "starts its rate control and alt-ref frames again at each part: stitched frames came out 6 dB below the single pass's at a constant quality, 12 to 14 dB at a bitrate",
	"libsvtav1":  "closes each part's last mini-GOP and places its keyframes on its own: stitched frames came out 7 to 17 dB below the single pass's",
}

// splitBitrate says why a bitrate target is not split.
const splitBitrate = ": a bitrate is met over each part, not over the whole, so the parts spend their bits where the single pass would not (x264 at 800 kb/s: frames 10.7 dB below the single pass's; with a 2 Mb/s VBV, 4.7 dB); a constant rate factor (-crf) or quantizer splits"

// rateReason refuses a rate control that a part cannot keep as the single pass does: a bitrate
// target or a VBV (-b:v, -maxrate, -bufsize; 0 is none), and MPEG-4 part 2 without a fixed
// quantizer, which aims at a bitrate of 200 kb/s.
func (sh *splitShape) rateReason() string {
	for i := 0; i+1 < len(sh.video); i++ {
		name, _, _ := strings.Cut(strings.TrimPrefix(sh.video[i], "-"), ":")
		switch name {
		case "b", "vb", "maxrate", "minrate", "bufsize":
			if v := lastOption(sh.video, name); v != "0" {
				return sh.video[i] + " " + v + splitBitrate
			}
		}
	}
	if sh.videoEncoder() == "mpeg4" && lastOption(sh.video, "q", "qscale") == "" {
		return "mpeg4 without -q:v aims at a bitrate (200 kb/s unless -b:v says otherwise)" + splitBitrate
	}
	return ""
}

// splitGOPs are the keyframe intervals, in frames, of the encoders whose keyframes a split puts
// where the whole encode does, when the command sets none: x264's 250 and FFmpeg's 12 for
// MPEG-4. mp4, mkv and mov default to libx264.
var splitGOPs = map[string]int{"libx264": 250, "mpeg4": 12}

// splitEncoderParams are each encoder's own options that may set its keyint, in the order the
// encoder reads them: the last one read wins.
var splitEncoderParams = map[string][]string{"libx264": {"x264opts", "x264-params"}}

// videoEncoder is the encoder of the parts: the one -c:v names, or the containers' default.
func (sh *splitShape) videoEncoder() string { return cmp.Or(sh.encoder, "libx264") }

// keyframeInterval is the whole encode's keyframe interval in frames, counted from its first
// frame: the keyint of the encoder's own options, which it reads after -g, or -g, or the
// encoder's default; 0 when its keyframes follow no grid a part can follow (keyint=infinite).
func (sh *splitShape) keyframeInterval() int {
	encoder := sh.videoEncoder()
	gop, ok := splitGOPs[encoder]
	if !ok {
		return 0
	}
	keyint := -1
	for _, name := range splitEncoderParams[encoder] {
		for _, kv := range strings.Split(lastOption(sh.video, name), ":") {
			if k, v, _ := strings.Cut(kv, "="); k == "keyint" {
				keyint = 0 // "infinite"
				if n, err := strconv.Atoi(v); err == nil {
					keyint = n
				}
			}
		}
	}
	if keyint >= 0 {
		return keyint
	}
	// FFmpeg reads an integer option as a number (48.0, 1e2) and rounds it.
	if g, err := strconv.ParseFloat(lastOption(sh.video, "g"), 64); err == nil && g >= 0 && g < 1<<30 {
		return int(math.Round(g))
	}
	return gop
}

// fixedGrid says whether the whole encode's keyframes are its grid alone (keyframeInterval):
// x264 with scene-cut detection off, by -sc_threshold 0 or scenecut=0 (no-scenecut) in its own
// options, which it reads after.
func (sh *splitShape) fixedGrid() bool {
	if sh.videoEncoder() != "libx264" {
		return false
	}
	off := false
	if v, err := strconv.ParseFloat(lastOption(sh.video, "sc_threshold"), 64); err == nil {
		off = v == 0
	}
	for _, name := range splitEncoderParams["libx264"] {
		for _, kv := range strings.Split(lastOption(sh.video, name), ":") {
			key, v, valued := strings.Cut(kv, "=")
			switch k, negated := x26xKey(key); {
			case k == "scenecut":
				off = x264Bool(v) == 0
			case negated == "scenecut": // no-scenecut: scenecut=false, unless its value is false
				off = !valued || x264Bool(v) == 1
			}
		}
	}
	return off
}

// x264Bool reads a value as x264's atobool does: 1 for 1, true and yes, 0 for 0, false and no,
// -1 for anything else (which x264 then reads as a number, or refuses).
func x264Bool(v string) int {
	switch strings.ToLower(v) {
	case "1", "true", "yes":
		return 1
	case "0", "false", "no":
		return 0
	}
	return -1
}

// maxGridPoints bounds the times CutPoints lists: no more than the keyframes a split reads.
const maxGridPoints = 86400

// CutPoints are the times an input's parts may start at, for PlanCuts: its keyframes (keys, as
// the runner reads them), or, where the whole encode's own keyframes are a fixed grid
// (fixedGrid), the times of that grid on an input of duration seconds and rate frames a
// second. A part that starts at a keyframe of the whole encode is the whole's from there: the
// frame before the cut is one that no later frame refers to in the whole output either, and
// the whole's GOPs are the part's. A part need not start at a keyframe of the input, since it
// decodes from the one before its start (SplitCommands), so the grid is taken only where each
// of its times has a keyframe of the input at most maxDecodeBefore before it. keys are returned
// where the grid does not apply, or where they are refused anyway (a video that starts late).
func CutPoints(plan *Plan, keys []float64, duration, rate float64) []float64 {
	sh, reason := splitParse(plan)
	if reason != "" || !sh.fixedGrid() || len(keys) == 0 || keys[0] > 0.001 ||
		!(rate >= 1 && rate <= MaxFrameRate) || !(duration > 0 && duration <= MaxSplitSeconds) {
		return keys
	}
	gop := sh.keyframeInterval()
	if gop <= 1 || duration*rate/float64(gop) > maxGridPoints {
		return keys
	}
	var grid []float64
	last := 0 // the input's last keyframe at or before the grid's time
	for k := 0; float64(k*gop)/rate < duration; k++ {
		t := float64(k*gop) / rate
		for last+1 < len(keys) && keys[last+1] <= t+1e-6 {
			last++
		}
		if t-keys[last] > maxDecodeBefore {
			return keys // a part starting there would decode too much of the input first
		}
		grid = append(grid, t)
	}
	if len(grid) < 2 {
		return keys // no time of the grid to cut at
	}
	return grid
}

// maxDecodeBefore is the most of the input, in seconds, that a part starting on the whole
// encode's grid decodes before it (from the input's keyframe before its start).
const maxDecodeBefore = 10

// splitContainers are the output containers of a split, by extension, with their -f names.
var splitContainers = map[string][]string{
	".mp4": {"mp4"}, ".mkv": {"matroska"}, ".mov": {"mov"},
}

// splitFilter says how one frame-by-frame filter is checked: which option values are
// expressions evaluated per frame (read for t and n), and whether it reads the time by itself.
type splitFilter struct {
	exprs []string // named options that are expressions; "" stands for every positional value
	timed bool     // the filter shows what belongs at the frame's time (subtitles)
	// positional names the options positional values go to, in FFmpeg's order, where the
	// check needs to know (drawtext: fontfile, text, textfile).
	positional []string
}

// splitFilters are the filters proved to work frame by frame.
var splitFilters = map[string]splitFilter{
	"scale": {exprs: []string{"w", "h", "width", "height", ""}}, "pad": {}, "format": {}, "setsar": {}, "setdar": {}, "transpose": {},
	"hflip": {}, "vflip": {}, "null": {}, "unsharp": {}, "lut3d": {}, "lut1d": {},
	"drawbox":   {},
	"crop":      {exprs: []string{"x", "y", "w", "h", "out_w", "out_h", ""}},
	"eq":        {exprs: []string{"brightness", "contrast", "saturation", "gamma", "gamma_r", "gamma_g", "gamma_b", "gamma_weight", ""}},
	"hue":       {exprs: []string{"h", "s", "H", "b", ""}},
	"overlay":   {exprs: []string{"x", "y"}, positional: []string{"x", "y", "eof_action", "eval", "shortest", "format", "repeatlast", "alpha"}},
	"drawtext":  {exprs: []string{"x", "y", "alpha", "fontcolor_expr", "fontsize"}, positional: []string{"fontfile", "text", "textfile"}},
	"subtitles": {timed: true},
	"ass":       {timed: true},
}

// splitRateFilters change which frames there are or when they are shown: the refusal names
// what they do.
var splitRateFilters = map[string]bool{
	"fps": true, "framerate": true, "select": true, "framestep": true, "setpts": true,
	"settb": true, "minterpolate": true, "tblend": true, "tmix": true, "yadif": true,
	"bwdif": true, "decimate": true, "mpdecimate": true, "trim": true, "tpad": true,
	"loop": true, "reverse": true, "fade": true, "telecine": true, "interlace": true,
	"tinterlace": true, "deshake": true, "zoompan": true,
}

// splitRole is what an output option is to a split: read by the parts' encode, by the audio
// encode, by the join's muxer, or by both the parts and the join.
type splitRole uint8

const (
	roleVideo splitRole = iota + 1
	roleAudio
	roleJoin
	rolePartsAndJoin
)

// splitOutputFlags are the output options a split accepts, by flag name, with the role they
// have when no stream specifier says otherwise (a :v specifier makes an option the parts', an
// :a one the audio's). Anything else refuses the split by name.
var splitOutputFlags = map[string]splitRole{
	"crf": roleVideo, "preset": roleVideo, "tune": roleVideo, "profile": roleVideo,
	"level": roleVideo, "pix_fmt": roleVideo, "b": roleVideo, "vb": roleVideo,
	"maxrate": roleVideo, "minrate": roleVideo, "bufsize": roleVideo, "g": roleVideo,
	"keyint_min": roleVideo, "sc_threshold": roleVideo, "bf": roleVideo, "refs": roleVideo,
	"x264-params": roleVideo, "x265-params": roleVideo, "x264opts": roleVideo,
	"svtav1-params": roleVideo, "qp": roleVideo, "qscale": roleVideo, "q": roleVideo,
	"deadline": roleVideo, "cpu-used": roleVideo, "row-mt": roleVideo, "tile-columns": roleVideo,
	"s": roleVideo, "aspect": roleVideo, "color_primaries": roleVideo, "color_trc": roleVideo,
	"colorspace": roleVideo, "color_range": roleVideo, "sws_flags": roleVideo,
	"threads": roleVideo, "vcodec": roleVideo, "vf": roleVideo,
	"acodec": roleAudio, "ab": roleAudio, "ar": roleAudio, "ac": roleAudio, "aq": roleAudio,
	"af": roleAudio, "sample_fmt": roleAudio, "channel_layout": roleAudio, "ch_layout": roleAudio,
	"movflags": roleJoin, "metadata": roleJoin, "tag": rolePartsAndJoin,
	"c": 0, "codec": 0, "filter": 0, // a stream specifier must say which stream
	"an": roleAudio, "sn": roleVideo, "dn": roleVideo, "map": roleVideo,
}

// splitRefusals name why the output options a split cannot honour prevent it.
var splitRefusals = map[string]string{
	"t": "the output's -t cuts the output where a part cannot know it", "to": "the output's -to cuts the output where a part cannot know it",
	"ss": "the output's -ss skips the start of the output", "frames": "the output's -frames counts frames over the whole output",
	"vframes": "the output's -vframes counts frames over the whole output", "fs": "the output's -fs limits the size of the whole output",
	"r":        "-r changes the frame rate: which frames a part keeps would depend on where it starts",
	"fps_mode": "-fps_mode decides which frames are kept over the whole output", "vsync": "-vsync decides which frames are kept over the whole output",
	"pass": "two-pass encoding needs the whole input in each pass", "passlogfile": "two-pass encoding needs the whole input in each pass",
	"shortest": "-shortest ends the output with its shortest stream", "force_key_frames": "-force_key_frames places keyframes by the output's time",
	"vn": "the output has no video (-vn): there is no video encode to split", "timecode": "-timecode counts frames from the output's start",
	"map_metadata": "-map_metadata names inputs of the whole command", "disposition": "-disposition names streams of the whole command",
}

// splitGlobals are the global options that mean the same to each part, the audio and the join.
var splitGlobals = map[string]bool{
	"y": true, "n": true, "hide_banner": true, "nostdin": true, "stats": true, "nostats": true,
	"loglevel": true, "v": true, "xerror": true, "stats_period": true, "filter_threads": true,
	"filter_complex_threads": true,
}

// splitShape is an accepted command taken apart for a split.
type splitShape struct {
	input, still, output, ext string
	global                    []string // the global options, given to every command
	graphFlag, graph          string   // -vf (or -filter:v) or -filter_complex, and its graph
	timed                     bool     // the graph reads the frame's time
	video, audio, join        []string // output options of the parts, the audio and the join
	noAudio                   bool     // -an, or -map without the input's audio
	mapped, audioMapped       bool     // a -map of the video or the graph's output; of the audio
	encoder                   string   // the video encoder -c:v names; "" for the container's default
}

// Splittable says whether an accepted command's encode can be split into parts at the input's
// keyframes, encoded apart and joined by stream copy with the same frames as the whole encode;
// when not, Reason names what prevents it. plan is Result.Plan of an accepted command.
func Splittable(plan *Plan) Split {
	sh, reason := splitParse(plan)
	if reason != "" {
		return Split{Reason: reason}
	}
	return Split{OK: true, Input: sh.input, Still: sh.still}
}

type splitFlag struct {
	word, base, spec, value string
	hasValue                bool
}

// splitParse takes plan's arguments apart; the reason is empty when the command is splittable.
func splitParse(plan *Plan) (*splitShape, string) {
	if plan == nil {
		return nil, "the command was not accepted"
	}
	switch {
	case plan.Analysis || plan.Pattern == "data":
		return nil, "the command measures (-f null) and writes no file to split"
	case plan.Pattern == "stream":
		return nil, "the output is a stream of files (HLS, DASH or segments), not one file"
	case plan.Pattern != "single" || len(plan.Outputs) != 1:
		return nil, "the command writes " + strconv.Itoa(len(plan.Outputs)) + " outputs or a numbered sequence, not one file"
	}
	sh := &splitShape{}
	var inputs []string
	var pending, outOpts []splitFlag
	args := plan.Args
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			if sh.output != "" {
				return nil, "the command writes two outputs"
			}
			sh.output, outOpts, pending = a, pending, nil
			continue
		}
		spec, base, err := lookupFlag(a)
		if err != nil {
			return nil, err.Message
		}
		f := splitFlag{word: a, base: base}
		if _, s, ok := strings.Cut(a[1:], ":"); ok {
			f.spec = s
		}
		if spec.takesValue() {
			if i+1 >= len(args) {
				return nil, "flag " + a + " has no value"
			}
			i++
			f.value, f.hasValue = args[i], true
		}
		switch {
		case base == "i":
			if len(pending) > 0 {
				return nil, "the input's option " + strings.TrimSpace(pending[0].word+" "+pending[0].value) + " changes what is read"
			}
			inputs = append(inputs, f.value)
		case base == "filter_complex" || base == "lavfi":
			if sh.graph != "" {
				return nil, "the command has two filter graphs"
			}
			sh.graphFlag, sh.graph = "-filter_complex", f.value
		case spec.global:
			if !splitGlobals[base] {
				return nil, "the global option " + a + " is not one a split is proved for"
			}
			sh.global = append(sh.global, a)
			if spec.takesValue() {
				sh.global = append(sh.global, f.value)
			}
		default:
			pending = append(pending, f)
		}
	}
	if len(pending) > 0 {
		return nil, "option " + pending[0].word + " after the output"
	}
	if reason := sh.takeInputs(inputs); reason != "" {
		return nil, reason
	}
	ext := strings.ToLower(path.Ext(sh.output))
	formats, ok := splitContainers[ext]
	if !ok {
		return nil, "the output " + strconv.Quote(sh.output) + " is not mp4, mkv or mov"
	}
	sh.ext = ext
	for _, f := range outOpts {
		if reason := sh.takeOutputFlag(f, formats); reason != "" {
			return nil, reason
		}
	}
	if sh.audioMapped && !sh.mapped {
		return nil, "-map selects the audio but not the video"
	}
	// A command that maps its streams keeps the audio only where it maps it.
	sh.noAudio = sh.noAudio || sh.mapped && !sh.audioMapped
	if sh.graph != "" {
		if reason := sh.checkGraph(); reason != "" {
			return nil, reason
		}
	}
	if sh.still != "" && sh.graphFlag != "-filter_complex" {
		return nil, "two inputs: a second input is only proved splittable as an image -filter_complex overlays"
	}
	if reason := sh.rateReason(); reason != "" {
		return nil, reason
	}
	return sh, ""
}

// takeInputs accepts one input, or one and a still image.
func (sh *splitShape) takeInputs(inputs []string) string {
	switch len(inputs) {
	case 1:
	case 2:
		switch strings.ToLower(path.Ext(inputs[1])) {
		case ".png", ".jpg", ".jpeg", ".bmp", ".webp":
			sh.still = inputs[1]
		default:
			return "two inputs: a split reads one video input (and at most a still image to overlay)"
		}
	default:
		return strconv.Itoa(len(inputs)) + " inputs: a split reads one video input"
	}
	sh.input = inputs[0]
	if strings.Contains(sh.input, "%") {
		return "the input is an image sequence"
	}
	return ""
}

// takeOutputFlag files one output option under the commands that read it.
func (sh *splitShape) takeOutputFlag(f splitFlag, formats []string) string {
	if why, ok := splitRefusals[f.base]; ok {
		return why
	}
	role, ok := splitOutputFlags[f.base]
	if !ok && f.base != "f" {
		return "the output option " + f.word + " is not one a split is proved for"
	}
	stream := ""
	if f.spec != "" {
		stream = f.spec[:1]
		if f.spec != stream && f.spec != stream+":0" {
			return f.word + " names one of several streams: a split reads one video and one audio stream"
		}
	}
	switch {
	case role == rolePartsAndJoin:
	case stream == "v":
		role = roleVideo
	case stream == "a":
		role = roleAudio
	case stream != "":
		return f.word + " is about a stream that is neither the video nor the audio"
	}
	switch f.base {
	case "f":
		if !contains(formats, f.value) {
			return "the output format -f " + f.value + " is not mp4, mkv or mov"
		}
		return ""
	case "c", "codec", "filter":
		if stream == "" && f.value == "copy" {
			return f.word + " copy copies the video: there is no encode to split"
		}
		if stream == "" {
			return f.word + " without :v or :a is about every stream"
		}
	case "tag":
		if stream != "v" {
			return f.word + " without :v is not one a split is proved for"
		}
	case "metadata":
		if f.spec != "" {
			return f.word + " is about one stream of the whole output"
		}
	case "map":
		return sh.takeMap(f.value)
	case "an":
		sh.noAudio = true
		return ""
	case "sn", "dn":
		return ""
	}
	if role == roleVideo && (f.base == "c" || f.base == "codec" || f.base == "vcodec") {
		if f.value == "copy" {
			return "the video is copied (" + f.word + " copy): there is no encode to split"
		}
		if why, ok := splitUnmatched[f.value]; ok {
			return "the video encoder " + f.value + " " + why
		}
		if !splitEncoders[f.value] {
			return "the video encoder " + f.value + " is not one a split is proved for (libx264, mpeg4)"
		}
		sh.encoder = f.value
	}
	if splitParamsFlags[f.base] {
		if reason := splitEncoderParamsReason(f.word, f.value); reason != "" {
			return reason
		}
	}
	if role == roleVideo && (f.base == "vf" || f.base == "filter") {
		if sh.graph != "" {
			return "the command has two filter graphs"
		}
		sh.graphFlag, sh.graph = "-vf", f.value
		return ""
	}
	if stream == "" && (f.base == "q" || f.base == "qscale") {
		return f.word + " without :v or :a is about every stream"
	}
	pair := []string{f.word}
	if f.hasValue {
		pair = append(pair, f.value)
	}
	switch role {
	case roleVideo:
		sh.video = append(sh.video, pair...)
	case roleAudio:
		sh.audio = append(sh.audio, pair...)
	case roleJoin:
		sh.join = append(sh.join, pair...)
	case rolePartsAndJoin:
		sh.video = append(sh.video, pair...)
		sh.join = append(sh.join, pair...)
	}
	return ""
}

// splitParamsFlags are the flags whose value is an encoder's own key=value:… list.
var splitParamsFlags = map[string]bool{"x264-params": true, "x265-params": true, "x264opts": true, "svtav1-params": true}

// splitParamsRefusals are the encoders' own keys that count frames from the start of the whole
// encode, or read the whole input: a part would apply them again from its own first frame.
var splitParamsRefusals = map[string]string{
	"zones": "zones count frames from the start of the whole encode", "frames": "frames counts frames over the whole encode",
	"pass": "two-pass encoding needs the whole input in each pass", "seek": "seek counts frames from the start of the whole input",
	"chunk-start": "chunk-start counts frames from the start of the whole encode", "chunk-end": "chunk-end counts frames from the start of the whole encode",
}

// splitEncoderParamsReason refuses an encoder's key=value:… list that a part cannot honour: a
// key of splitParamsRefusals, or a keyint that is not a whole number of frames (x264 reads 20.0
// as 20, where a part could not follow its grid).
func splitEncoderParamsReason(flag, value string) string {
	for _, kv := range strings.Split(value, ":") {
		key, v, _ := strings.Cut(kv, "=")
		k, _ := x26xKey(key)
		if why, ok := splitParamsRefusals[k]; ok {
			return flag + " key " + strconv.Quote(key) + ": " + why
		}
		if k == "bitrate" || k == "vbv-maxrate" || k == "vbv-bufsize" {
			return flag + " " + kv + splitBitrate
		}
		if k == "keyint" || k == "min-keyint" {
			if _, err := strconv.Atoi(v); err != nil && v != "infinite" {
				return flag + " " + kv + " is not a whole number of frames"
			}
		}
	}
	return ""
}

// takeMap accepts the maps of the one video and the one audio stream (or the graph's output).
func (sh *splitShape) takeMap(v string) string {
	switch v {
	case "0:v", "0:v:0", "0:V", "0:v?", "0:v:0?":
	case "0:a", "0:a:0", "0:a?", "0:a:0?":
		sh.audio = append(sh.audio, "-map", v)
		sh.audioMapped = true
		return ""
	default:
		if !strings.HasPrefix(v, "[") {
			return "-map " + v + " selects streams beyond one video and one audio stream"
		}
	}
	sh.video = append(sh.video, "-map", v)
	sh.mapped = true
	return ""
}

// checkGraph proves each filter of the graph frame-by-frame.
func (sh *splitShape) checkGraph() string {
	nodes, bad := parseGraph(sh.graph)
	if bad != "" {
		return "the filter graph does not parse: " + bad
	}
	overlay := false
	for _, n := range nodes {
		sf, ok := splitFilters[n.name]
		if !ok {
			if splitRateFilters[n.name] {
				return "filter " + n.name + " changes which frames there are or when they show"
			}
			return "filter " + n.name + " is not one a split is proved to work frame by frame"
		}
		overlay = overlay || n.name == "overlay"
		opts, bad := parseFilterOptions(n.args)
		if bad != "" {
			return "filter " + n.name + ": " + bad
		}
		if sf.timed {
			sh.timed = true
		}
		textfile, unexpanded := false, false
		for i, o := range opts {
			// A positional value is the option FFmpeg gives it: drawtext's third is textfile.
			if o.key == "" && sf.positional != nil {
				if i >= len(sf.positional) {
					return "filter " + n.name + " has more positional values than a split is proved for"
				}
				o.key = sf.positional[i]
			}
			textfile = textfile || o.key == "textfile"
			unexpanded = unexpanded || o.key == "expansion" && o.value == "none"
			if reason := sh.checkFilterValue(n.name, sf, o); reason != "" {
				return reason
			}
		}
		if textfile && !unexpanded {
			return "drawtext's textfile may expand the frame number (%{n}); with expansion=none it does not"
		}
	}
	if sh.graphFlag == "-vf" && sh.timed && strings.Contains(sh.graph, "[") {
		return "the -vf graph reads the frame's time and names its links ([...]): it cannot be shifted to the source's time"
	}
	if sh.graphFlag == "-filter_complex" {
		if sh.still == "" || !overlay {
			return "-filter_complex is only proved splittable when it overlays a still image"
		}
		if sh.timed {
			return "-filter_complex reads the frame's time: only -vf is shifted to the source's time"
		}
	}
	return ""
}

// checkFilterValue refuses what reads the frame number and notes what reads the time.
func (sh *splitShape) checkFilterValue(filter string, sf splitFilter, o filterOption) string {
	if filter == "overlay" {
		// The still is shown on every frame only as overlay does by default: its one frame
		// repeated for the whole of the video.
		switch v := strings.ToLower(o.value); {
		case o.key == "eof_action" && v != "repeat" && v != "0":
			return "overlay's eof_action=" + o.value + " shows the still on the first frame of each part alone"
		case o.key == "shortest" && v != "0" && v != "false":
			return "overlay's shortest=" + o.value + " ends the output with the still's one frame"
		case o.key == "repeatlast" && v != "1" && v != "true":
			return "overlay's repeatlast=" + o.value + " shows the still on the first frame of each part alone"
		}
	}
	if filter == "drawtext" {
		switch o.key {
		case "timecode", "tc24hmax", "rate", "r":
			return "drawtext's timecode counts frames from the output's start"
		case "text", "fontcolor_expr":
			for rest := o.value; ; {
				i := strings.Index(rest, "%{")
				if i < 0 {
					break
				}
				rest = rest[i+2:]
				fn := strings.TrimLeft(rest, " ")
				switch {
				case strings.HasPrefix(fn, "pts"):
					sh.timed = true
				case strings.HasPrefix(fn, "n") || strings.HasPrefix(fn, "frame_num"):
					return "drawtext's text expands the frame number"
				default:
					return "drawtext's text expands " + strconv.Quote("%{"+strings.SplitN(fn, "}", 2)[0]+"}") + ", which is not proved the same in a part"
				}
			}
		}
	}
	expr := o.key == "enable"
	for _, k := range sf.exprs {
		expr = expr || o.key == k
	}
	if !expr {
		return ""
	}
	for _, id := range exprIdentifiers(o.value) {
		switch id {
		case "n", "N", "frame_num", "pos", "random":
			return "filter " + filter + " reads " + id + " in an expression, which differs in a part"
		case "t", "T", "TS", "pts", "PTS":
			sh.timed = true
		}
	}
	return ""
}

// exprIdentifiers are the names in an FFmpeg expression: runs of letters, digits and '_' that
// do not start with a digit.
func exprIdentifiers(s string) []string {
	var ids []string
	for i := 0; i < len(s); {
		c := s[i]
		if !(isLetter(c) || c == '_') {
			i++
			if c >= '0' && c <= '9' || c == '.' {
				for i < len(s) && (isLetter(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
					i++ // a number, with its SI suffix or exponent
				}
			}
			continue
		}
		j := i
		for j < len(s) && (isLetter(s[j]) || s[j] == '_' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		ids = append(ids, s[i:j])
		i = j
	}
	return ids
}
