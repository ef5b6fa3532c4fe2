package validator

import "strings"

// Layer 4: formats. -f is an allowlist, separately for inputs and outputs. A blocklist would have
// to name every device grabber (v4l2, x11grab, kmsgrab, alsa, pulse, jack, fbdev, dshow,
// avfoundation, gdigrab, decklink, openal, ...), every network or fan-out muxer (rtp, rtsp, sdp,
// sap, tee, fifo, udp-style outputs), every display output (sdl, xv, opengl, caca) and every
// playlist demuxer that opens further files (hls, dash), and it would silently let through
// whatever the next FFmpeg release adds. The lists below are the formats a media job needs.

const layerFormats = "formats"

// inputFormats are the demuxers -f may force for an input. lavfi (a filter graph as input) and
// concat (a staged list read in safe mode) get extra rules; image2 reads numbered files that
// must be staged.
var inputFormats = map[string]bool{
	"lavfi": true, "concat": true, "image2": true,
	"mov": true, "mp4": true, "m4a": true, "3gp": true, "matroska": true, "webm": true,
	"mpegts": true, "avi": true, "flv": true, "mxf": true, "nut": true, "mpeg": true,
	"mp3": true, "wav": true, "flac": true, "ogg": true, "aac": true, "ac3": true,
	"eac3": true, "gif": true, "h264": true, "hevc": true, "mjpeg": true,
	"rawvideo": true, "yuv4mpegpipe": true, "s16le": true, "s16be": true, "s24le": true,
	"s32le": true, "f32le": true, "f64le": true, "u8": true, "alaw": true, "mulaw": true,
	"srt": true, "webvtt": true, "ass": true, "ffmetadata": true, "dv": true, "m4v": true,
	"asf": true, "ivf": true, "aiff": true, "caf": true, "wv": true, "amr": true, "dts": true,
	"truehd": true, "mpegvideo": true, "w64": true, "vc1": true, "obu": true, "av1": true,
}

// inputFormatIndex is inputFormats for lookups.
var inputFormatIndex = newStrTable(inputFormats)

// outputMuxer describes an output format -f may name: which spec formats (by extension) it
// writes, the first being the one inferred when the output name has no extension.
type outputMuxer struct {
	formats []string
	kind    muxerKind
}

type muxerKind uint8

const (
	muxSingle  muxerKind = iota // one file
	muxImage                    // image2: one image, or a numbered sequence
	muxHLS                      // HLS manifest plus segments
	muxDASH                     // DASH manifest plus segments
	muxSegment                  // segment muxer: a numbered set
)

var outputMuxers = map[string]outputMuxer{
	"mp4": {formats: []string{"mp4", "m4a", "m4v"}}, "mov": {formats: []string{"mov"}},
	"ipod": {formats: []string{"m4a", "mp4"}}, "matroska": {formats: []string{"mkv", "mka"}},
	"flv": {formats: []string{"flv"}}, "nut": {formats: []string{"nut"}},
	"3gp": {formats: []string{"3gp"}}, "mxf": {formats: []string{"mxf"}},
	"mpeg": {formats: []string{"mpg", "mpeg"}}, "vob": {formats: []string{"vob"}},
	"asf": {formats: []string{"asf", "wmv", "wma"}}, "ivf": {formats: []string{"ivf"}},
	"h264": {formats: []string{"h264"}}, "hevc": {formats: []string{"hevc"}},
	"m4v": {formats: []string{"m4v"}}, "mpeg2video": {formats: []string{"m2v"}},
	"rawvideo": {formats: []string{"yuv"}}, "yuv4mpegpipe": {formats: []string{"y4m"}},
	"dv": {formats: []string{"dv"}}, "ac3": {formats: []string{"ac3"}},
	"eac3": {formats: []string{"eac3"}}, "mp2": {formats: []string{"mp2"}},
	"aiff": {formats: []string{"aiff", "aif"}}, "oga": {formats: []string{"oga"}},
	"ogv": {formats: []string{"ogv"}}, "s16le": {formats: []string{"pcm"}},
	"ass": {formats: []string{"ass", "ssa"}}, "webp": {formats: []string{"webp"}},
	"webm": {formats: []string{"webm"}}, "avi": {formats: []string{"avi"}},
	"mpegts": {formats: []string{"ts"}}, "gif": {formats: []string{"gif"}},
	"mp3": {formats: []string{"mp3"}}, "wav": {formats: []string{"wav"}},
	"flac": {formats: []string{"flac"}}, "ogg": {formats: []string{"ogg"}},
	"opus": {formats: []string{"opus"}}, "adts": {formats: []string{"aac"}},
	"srt": {formats: []string{"srt"}}, "webvtt": {formats: []string{"vtt"}},
	"mjpeg": {formats: []string{"jpg"}}, "apng": {formats: []string{"png"}},
	"image2":  {formats: []string{"png", "jpg", "bmp", "tiff", "webp"}, kind: muxImage},
	"hls":     {formats: []string{"m3u8"}, kind: muxHLS},
	"dash":    {formats: []string{"mpd"}, kind: muxDASH},
	"segment": {kind: muxSegment}, "ssegment": {kind: muxSegment},
	"stream_segment": {kind: muxSegment},
}

// outputMuxerIndex is outputMuxers for lookups.
var outputMuxerIndex = newStrTable(outputMuxers)

func formatErr(flag, value, format string, a ...any) *Error {
	return newError(layerFormats, flag, value, format, a...)
}

func checkInputFormat(name string) *Error {
	if !inputFormatIndex.get(name) {
		return formatErr("-f", name, "format %q is not allowed as an input format", name)
	}
	return nil
}

func checkOutputFormat(name string) *Error {
	if _, ok := outputMuxerIndex.lookup(name); !ok {
		return formatErr("-f", name, "format %q is not allowed as an output format", name)
	}
	return nil
}

// checkSegmentFormat checks -segment_format: a single-file muxer the segments are written in.
func checkSegmentFormat(name string) *Error {
	m, ok := outputMuxerIndex.lookup(name)
	if !ok || m.kind != muxSingle {
		return formatErr("-segment_format", name, "format %q is not allowed as a segment format", name)
	}
	return nil
}

// checkSafe keeps the concat demuxer in safe mode, where list entries must be relative names
// without protocols or "..": -safe 0 would let a staged list read any file on the host.
func checkSafe(value string) *Error {
	if value != "1" {
		return formatErr("-safe", value, "-safe %s is not allowed: the concat demuxer runs in safe mode only", value)
	}
	return nil
}

// checkPatternType refuses glob patterns for image inputs: only numbered sequences of staged
// files are read.
func checkPatternType(value string) *Error {
	switch value {
	case "sequence", "none":
		return nil
	}
	return formatErr("-pattern_type", value, "-pattern_type %s is not allowed: use sequence", value)
}

func checkEnum(layer, flag, value string, allowed ...string) *Error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return newError(layer, flag, value, "%s %q is not allowed: use one of %s", flag, value, strings.Join(allowed, ", "))
}
