package validator

import (
	"strconv"
	"strings"
)

// SplitAudioShare estimates what encoding a split's audio costs against encoding its video, per
// second of input: 0.12 means the audio of a minute takes as long as 7.2 s of the video. The
// job's own runner encodes the audio before it takes a part, so PlanCuts makes that part shorter
// by the input's duration times this share, and every runner ends together. plan is the job's
// accepted command; width, height and rate are the input video's, sampleRate and channels its
// audio's, as the runner read them. It is 0, and the parts even, when the command encodes no
// audio or the estimate cannot be made: an encoder or preset the table below does not know, or
// the video's size or rate not known.
//
// The table holds what one core of an AMD EPYC Zen 4 (2026-11-27) took for a 1280x720 25 fps
// video and a 44.1 kHz mono tone, FFmpeg 5.1 as Debian builds it. A faster or slower machine
// scales both sides alike; the content moves the video's side (a real scene costs x264 more
// than the test pattern measured), so the share errs towards too small a tail, which leaves the
// split as it was without it.
func SplitAudioShare(plan *Plan, width, height int, rate float64, sampleRate, channels int) float64 {
	sh, reason := splitParse(plan)
	if reason != "" || sh.noAudio {
		return 0
	}
	// The video's cost follows the size it is encoded at, which a filter graph or -s may change
	// (an upscale would make the share far too large): those keep the parts even.
	if sh.graph != "" || lastOption(sh.video, "s") != "" {
		return 0
	}
	if width <= 0 || height <= 0 || width > 1<<15 || height > 1<<15 || !(rate > 0 && rate <= MaxFrameRate) {
		return 0
	}
	perMegapixel := videoSecondsPerMegapixel(sh.videoEncoder(), lastOption(sh.video, "preset"))
	if perMegapixel == 0 {
		return 0
	}
	video := float64(width) * float64(height) * rate / 1e6 * perMegapixel
	codec := lastOption(sh.audio, "c", "codec", "acodec")
	if codec == "" {
		codec = defaultAudioEncoders[sh.ext]
	}
	perSecond, ok := audioSecondsPerSecond[codec]
	if !ok {
		return 0
	}
	// The encoders' work follows the samples they take: the output's rate and channels where the
	// command sets them, the input's otherwise.
	rateHz, channelCount := numberOption(sh.audio, sampleRate, "ar"), numberOption(sh.audio, channels, "ac")
	if rateHz < 1 || rateHz > 768000 || channelCount < 1 || channelCount > 64 {
		return 0
	}
	samples := float64(rateHz) * float64(channelCount)
	return min(1, perSecond*samples/44100/video)
}

// x264SecondsPerMegapixel is libx264's cost at -preset veryfast, in seconds of one core per
// million pixels encoded (0.25 s for each second of 1280x720 at 25 fps).
const x264SecondsPerMegapixel = 0.0108

// videoPresets are each encoder's cost by -preset, relative to libx264 at veryfast; "" is the
// encoder's default preset.
var videoPresets = map[string]map[string]float64{
	"libx264": {"ultrafast": 0.4, "superfast": 0.7, "veryfast": 1, "faster": 1.6, "fast": 1.9, "": 2.0, "medium": 2.0,
		"slow": 3.3, "slower": 5.3, "veryslow": 10},
	"libx265": {"ultrafast": 1.4, "superfast": 1.8, "veryfast": 2.2, "faster": 2.6, "fast": 2.9, "": 3.2, "medium": 3.2,
		"slow": 7, "slower": 15, "veryslow": 30},
	"mpeg4": {"": 0.21},
}

// videoSecondsPerMegapixel is the encoder's cost at preset, 0 when not known.
func videoSecondsPerMegapixel(encoder, preset string) float64 {
	return videoPresets[encoder][preset] * x264SecondsPerMegapixel
}

// audioSecondsPerSecond are the audio encoders' costs, in seconds of one core for each second of
// 44.1 kHz mono: FFmpeg's AAC encoder is the slow one.
var audioSecondsPerSecond = map[string]float64{
	"aac": 0.029, "libopus": 0.0065, "libmp3lame": 0.0053, "ac3": 0.0026, "flac": 0.0025,
	"pcm_s16le": 0.002, "pcm_s24le": 0.002, "alac": 0.003,
}

// defaultAudioEncoders are the audio encoders FFmpeg picks for the split's containers when the
// command names none (Debian's build); Matroska's, libvorbis, is not in the table.
var defaultAudioEncoders = map[string]string{".mp4": "aac", ".mov": "aac"}

// lastOption is the value of the last of the named options in args ("-c:a", "aac", "-an",
// ...), whatever stream specifier follows the name; "" when none is there.
func lastOption(args []string, names ...string) string {
	value := ""
	for i := 0; i+1 < len(args); i++ {
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		name, _, _ := strings.Cut(args[i][1:], ":")
		for _, n := range names {
			if name == n {
				value = args[i+1]
			}
		}
	}
	return value
}

// numberOption is the last named option in args as a positive whole number, or def.
func numberOption(args []string, def int, name string) int {
	n, err := strconv.Atoi(lastOption(args, name))
	if err != nil || n <= 0 || n > 1<<24 {
		return def
	}
	return n
}
