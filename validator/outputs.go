package validator

import (
	"strings"
)

// Layer 8: outputs. A command writes at least one output; the trailing output's name (or -f)
// gives the format, which must be one of the spec's formats or a stream or set pattern:
//
//	single file   out.mp4, thumb.jpg (one image, or -update 1)   -> its format ("mp4", "jpg")
//	stream        HLS out.m3u8 / -f hls                           -> "m3u8"
//	              DASH out.mpd / -f dash                          -> "mpd"
//	set           image sequence frame_%03d.png                   -> the image format ("png")
//	              -f segment seg_%03d.ts                          -> the segment format ("ts")
//	              several outputs (a resolution ladder)           -> the trailing output's format
//
// For a stream, params.outputFormat, when given, must name the segment container ("ts" for HLS
// MPEG-TS segments, "mp4" for HLS fMP4 and DASH, "webm" for DASH WebM).

const layerOutputs = "outputs"

// specFormats are params.outputFormat's values.
var specFormats = map[string]bool{
	"mp4": true, "mkv": true, "webm": true, "mov": true, "avi": true, "ts": true, "gif": true,
	"png": true, "jpg": true, "mp3": true, "wav": true, "flac": true, "ogg": true, "aac": true,
	"opus": true, "m4a": true, "srt": true, "vtt": true,
}

// specFormatIndex is specFormats for lookups.
var specFormatIndex = newStrTable(specFormats)

// extFormats maps output extensions to formats; jpeg is written jpg.
var extFormats = map[string]string{
	"mp4": "mp4", "mkv": "mkv", "webm": "webm", "mov": "mov", "avi": "avi", "ts": "ts",
	"gif": "gif", "png": "png", "jpg": "jpg", "jpeg": "jpg", "mp3": "mp3", "wav": "wav",
	"flac": "flac", "ogg": "ogg", "aac": "aac", "opus": "opus", "m4a": "m4a", "srt": "srt",
	"vtt": "vtt", "m3u8": "m3u8", "mpd": "mpd",
	// Everyday containers beyond the spec's list: they can be written, and inferred, but
	// params.outputFormat still names one of the spec's.
	"flv": "flv", "mka": "mka", "nut": "nut", "m4v": "m4v", "3gp": "3gp", "mxf": "mxf",
	"mpg": "mpg", "mpeg": "mpg", "vob": "vob", "asf": "asf", "wmv": "wmv", "wma": "wma",
	"ivf": "ivf", "h264": "h264", "264": "h264", "hevc": "hevc", "265": "hevc", "m2v": "m2v",
	"yuv": "yuv", "y4m": "y4m", "dv": "dv", "ac3": "ac3", "eac3": "eac3", "mp2": "mp2",
	"aiff": "aiff", "aif": "aiff", "oga": "oga", "ogv": "ogv", "pcm": "pcm", "ass": "ass",
	"ssa": "ass", "webp": "webp", "bmp": "bmp", "tif": "tiff", "tiff": "tiff",
	"m2ts": "ts", "mts": "ts",
}

// extFormatIndex is extFormats for lookups.
var extFormatIndex = newStrTable(extFormats)

// imageFormats are the formats an image sequence (a numbered output name) may have.
var imageFormats = map[string]bool{"png": true, "jpg": true, "bmp": true, "tiff": true, "webp": true}

// imageFormatIndex is imageFormats for lookups.
var imageFormatIndex = newStrTable(imageFormats)

// Output patterns, as in Plan.Pattern.
const (
	PatternSingle = "single"
	PatternStream = "stream"
	PatternSet    = "set"
	// PatternData: the command writes no file (every output is -f null -); the job answers in
	// data what its filters printed.
	PatternData = "data"
)

type output struct {
	// null: -f null -, an output that writes nothing (an analysis).
	null    bool
	name    string
	opts    fileOpts
	format  string // inferred format
	pattern string
}

func outputErr(value, format string, a ...any) *Error {
	return newError(layerOutputs, "", value, format, a...)
}

// inferOutput works out the format and pattern of one output from its name and its -f.
func inferOutput(o *output) *Error {
	ext := extOf(o.name)
	byExt := extFormatIndex.get(ext)
	numbered := isNumbered(o.name)
	if o.opts.format == "" {
		switch {
		case byExt == "":
			return outputErr(o.name, "cannot infer the output format of %q: use an extension of %s, or -f", o.name, formatList())
		case byExt == "m3u8" || byExt == "mpd":
			o.format, o.pattern = byExt, PatternStream
		case numbered && imageFormatIndex.get(byExt):
			o.format, o.pattern = byExt, PatternSet
		case numbered:
			return outputErr(o.name, "numbered output %q needs -f segment or an image extension (png, jpg, bmp, tiff, webp)", o.name)
		default:
			o.format, o.pattern = byExt, PatternSingle
		}
		return nil
	}
	m := outputMuxerIndex.get(o.opts.format)
	switch m.kind {
	case muxHLS, muxDASH:
		if ext != "" && byExt != m.formats[0] {
			return outputErr(o.name, "output %q does not match -f %s: use a .%s name", o.name, o.opts.format, m.formats[0])
		}
		o.format, o.pattern = m.formats[0], PatternStream
		return nil
	case muxSegment:
		if !numbered {
			return outputErr(o.name, "segment output %q needs a numbered pattern such as seg_%%03d.%s", o.name, orDefault(ext, "ts"))
		}
		f := byExt
		if o.opts.segmentFormat != "" {
			f = outputMuxerIndex.get(o.opts.segmentFormat).formats[0]
		}
		if !specFormatIndex.get(f) {
			return outputErr(o.name, "cannot infer the segment format of %q: use an extension of %s, or -segment_format", o.name, formatList())
		}
		o.format, o.pattern = f, PatternSet
		return nil
	}
	switch {
	case byExt == "":
		if ext != "" {
			return outputErr(o.name, "output %q has an unsupported extension .%s", o.name, ext)
		}
		o.format = m.formats[0]
	case !contains(m.formats, byExt):
		return outputErr(o.name, "output %q does not match -f %s", o.name, o.opts.format)
	default:
		o.format = byExt
	}
	o.pattern = PatternSingle
	if numbered {
		if m.kind != muxImage {
			return outputErr(o.name, "numbered output %q needs -f segment or an image extension (png, jpg)", o.name)
		}
		o.pattern = PatternSet
	}
	return nil
}

// segmentFormat is the container of a stream's segments, compared with params.outputFormat.
func segmentFormat(o *output) string {
	if o.format == "m3u8" {
		if o.opts.hlsSegmentType == "fmp4" {
			return "mp4"
		}
		return "ts"
	}
	if o.opts.dashSegmentType == "webm" {
		return "webm"
	}
	return "mp4"
}

// checkOutputs runs once the whole command has been read.
func (st *state) checkOutputs() (format, pattern string, err *Error) {
	if len(st.outputs) == 0 {
		return "", "", outputErr("", "command has no output file")
	}
	if st.pending.first != "" {
		return "", "", outputErr(st.pending.first, "option %s after the last output has no effect: put it before the output it applies to", st.pending.first)
	}
	pattern = PatternSingle
	var last, null *output
	for i := range st.outputs {
		o := &st.outputs[i]
		if o.null {
			null = o
			continue
		}
		if e := inferOutput(o); e != nil {
			return "", "", e
		}
		switch {
		case o.pattern == PatternStream:
			pattern = PatternStream
		case pattern != PatternStream && (o.pattern == PatternSet || last != nil):
			pattern = PatternSet
		}
		last = o
	}
	if null != nil {
		return nullOutputs(st.opts.OutputFormat, last)
	}
	format = last.format
	if want := st.opts.OutputFormat; want != "" {
		if !specFormatIndex.get(want) {
			return "", "", outputErr(want, "outputFormat %q is not one of %s", want, specFormatList)
		}
		got := format
		if last.pattern == PatternStream {
			got = segmentFormat(last)
		}
		if got != want {
			return "", "", outputErr(last.name, "output %q is %s but outputFormat is %s", last.name, got, want)
		}
	}
	return format, pattern, nil
}

const specFormatList = "mp4, mkv, webm, mov, avi, ts, gif, png, jpg, mp3, wav, flac, ogg, aac, opus, m4a, srt, vtt"

// specFormatOrder is specFormats in the spec's order, for messages: they list only what
// params.outputFormat accepts (every one is also an extension a format is inferred from).
var specFormatOrder = []string{"mp4", "mkv", "webm", "mov", "avi", "ts", "gif", "png", "jpg", "mp3", "wav", "flac",
	"ogg", "aac", "opus", "m4a", "srt", "vtt"}

func formatList() string { return strings.Join(specFormatOrder, ", ") }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
