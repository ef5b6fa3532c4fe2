package validator

import "strings"

// Layer 5b: filter options. One rule for every option of every filter, whatever the filter
// table knows of it: a value that is an absolute path ("/etc/passwd", "\\host\share", "C:/x"),
// has a ".." path segment, starts with a protocol prefix ("file:", "http://", "pipe:") or names a
// system location ("~/x", "proc/self/environ") is refused. The filters layer checks the options
// it knows to name files (those must be staged inputs or bare written names); this layer is what
// keeps an option it does not know of — an enum that a future FFmpeg reads as a file, a
// positional value, "haldclut=/etc/passwd" — from ever reaching the host. A staged input's name is
// a bare name and never trips the rule.
//
// Free-text options (drawtext text, metadata values) may hold a slash or a colon, since they are
// printed rather than opened; no filter opens a file from them.
//
// The same layer caps the frame sizes and rates options ask for (size, s, rate, r, fps and the
// literal width and height of scale and pad), as the limits layer does for flags.

const layerOptions = "options"

func optionErr(flag, value, format string, a ...any) *Error {
	return newError(layerOptions, flag, value, format, a...)
}

// freeText are the options, by filter, whose values are text to print or store.
var freeText = map[string]map[string]bool{
	"drawtext":  {"text": true, "timecode": true},
	"metadata":  {"value": true},
	"ametadata": {"value": true},
	"subtitles": {"force_style": true},
	"ass":       {"force_style": true},
}

// systemDirs are the first segments of host locations a relative-looking value may still mean
// to a filter that resolves names itself.
var systemDirs = map[string]bool{
	"etc": true, "proc": true, "dev": true, "sys": true, "root": true, "home": true, "var": true,
	"tmp": true, "usr": true, "run": true, "boot": true, "bin": true, "sbin": true, "lib": true,
	"lib64": true, "opt": true, "srv": true, "mnt": true, "media": true,
}

// pathLike says why an option value would name a file outside the work directory, "" when it
// does not.
func pathLike(v string) string {
	if v == "" {
		return ""
	}
	switch {
	case v[0] == '/' || v[0] == '\\':
		return "is an absolute path"
	case v[0] == '~':
		return "names a home directory"
	case len(v) >= 3 && isLetter(v[0]) && v[1] == ':' && (v[2] == '/' || v[2] == '\\'):
		return "is an absolute path"
	}
	if scheme := protocolPrefix(v); scheme != "" {
		return "has the protocol prefix " + scheme + ":"
	}
	hasSep := false
	for i := 0; i < len(v); i++ {
		if v[i] == '/' || v[i] == '\\' {
			hasSep = true
			break
		}
	}
	if !hasSep {
		// One segment, v itself; a system location needs a separator after it.
		if v == ".." {
			return `has a ".." segment`
		}
		return ""
	}
	first := true
	for seg := range strings.FieldsFuncSeq(v, isPathSep) {
		if seg == ".." {
			return `has a ".." segment`
		}
		if first && systemDirs[seg] {
			return "names the system location " + seg
		}
		first = false
	}
	return ""
}

func isPathSep(r rune) bool { return r == '/' || r == '\\' }

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// protocolPrefix returns the scheme of a "scheme:" prefix of two letters or more ("file",
// "https", "hls+https"), "" when there is none. FFmpeg protocol names are letters, digits and
// '+', '-', '.'; a one-letter prefix would be a drive, handled as a path.
func protocolPrefix(v string) string {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isLetter(c):
		case i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'):
		case c == ':' && i >= 2:
			return v[:i]
		default:
			return ""
		}
	}
	return ""
}

// sizeFilters are the filters whose w and h (first two positional values) are the output frame
// size.
var sizeFilters = map[string]bool{
	"scale": true, "pad": true, "zscale": true, "scale_cuda": true, "scale_npp": true,
	"scale2ref": true,
}

// sizeFilterIndex is sizeFilters for lookups.
var sizeFilterIndex = newStrTable(sizeFilters)

// rateFilters are the video filters whose rate, r, fps or frame_rate option is a frame rate (an
// audio source's r is its sample rate).
var rateFilters = map[string]bool{
	"testsrc": true, "testsrc2": true, "smptebars": true, "smptehdbars": true, "color": true,
	"nullsrc": true, "rgbtestsrc": true, "yuvtestsrc": true, "mandelbrot": true, "allrgb": true,
	"allyuv": true, "gradients": true, "pal75bars": true, "pal100bars": true,
	"colorchart": true, "colorspectrum": true, "zoneplate": true, "haldclutsrc": true,
	"sierpinski": true, "fps": true, "framerate": true, "minterpolate": true, "zoompan": true,
	"showwaves": true, "showspectrum": true, "showcqt": true, "showfreqs": true,
	"avectorscope": true, "showvolume": true, "ahistogram": true, "aphasemeter": true,
}

// rateFilterIndex is rateFilters for lookups.
var rateFilterIndex = newStrTable(rateFilters)

// checkFilterOption applies the rule to one option of filter n; key is the option's name, or
// its declared name for a positional value when the filter table knows it ("" otherwise), and
// pos the position of a positional value.
func (st *state) checkFilterOption(flag, filter, key string, pos int, value string) *Error {
	// pathLike before freeText: most values are not path-like, and two map lookups cost more.
	if why := pathLike(value); why != "" && !freeText[filter][key] {
		if _, staged := st.opts.Inputs[value]; !staged {
			name := key
			if name == "" {
				name = "#" + sprintf("%d", pos+1)
			}
			return optionErr(flag, value, "filter %s option %s value %q is not allowed: it %s; files are staged inputs named bare", filter, name, value, why)
		}
	}
	// The message's "filter f option k" is built only where a check needs it: most options
	// need none, and concatenation allocates.
	switch key {
	case "s", "size":
		return checkFrameSizeIn(layerOptions, flag, "filter "+filter+" option "+key, value)
	case "r", "rate", "fps", "frame_rate", "framerate":
		if _, ok := parseRate(value); ok && rateFilterIndex.get(filter) {
			return checkFrameRateIn(layerOptions, flag, "filter "+filter+" option "+key, value)
		}
	case "w", "width", "h", "height":
		if sizeFilterIndex.get(filter) {
			return checkSideIn(flag, filter, key, value)
		}
	case "":
		if sizeFilterIndex.get(filter) && pos < 2 {
			return checkSideIn(flag, filter, "", value)
		}
		if filter == "fps" && pos == 0 {
			if _, ok := parseRate(value); ok {
				return checkFrameRateIn(layerOptions, flag, "filter fps", value)
			}
		}
	}
	return nil
}

// checkSideIn refuses a literal width or height over MaxFrameSide; expressions (iw/2, -2) are
// left to FFmpeg. key is the option's name, "" for a positional size; the message's "filter f
// option k" is built only for a refusal, as most sides pass (scale=1280:720).
func checkSideIn(flag, filter, key, v string) *Error {
	n := 0
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return nil
		}
		if n = n*10 + int(v[i]-'0'); n > MaxFrameSide {
			what := "filter " + filter + " size"
			if key != "" {
				what = "filter " + filter + " option " + key
			}
			return optionErr(flag, v, "%s %s is over the maximum frame side of %d", what, v, MaxFrameSide)
		}
	}
	return nil
}
