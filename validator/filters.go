package validator

import (
	"fmt"
	"strings"
	"unsafe"
)

// Layer 5: filters. Filter graphs (-vf, -af, -filter[:spec], -filter_complex, -lavfi and -f lavfi
// inputs) are parsed the way libavfilter parses them, with both levels of escaping:
//
//  1. the graph level (graphparser.c): a filter name is read with av_get_token up to one of
//     "=,;[", its arguments up to one of "[],;", labels up to "]"; inside each, '\' escapes the
//     next character and '...' quotes, and both are removed;
//  2. the option level (process_options / av_opt_get_key_value): the arguments split on ':' into
//     "key=value" pairs, keys being bare [A-Za-z0-9_./-] runs, values read again with
//     av_get_token, so they too may be quoted and escaped; a value without "key=" is positional
//     and goes to the filter's options in declaration order.
//
// Checking the unescaped names is what makes hiding a filter behind quotes ("'mo'vie") or
// escapes ("mov\ie") useless: the checked name is the one FFmpeg looks up.
//
// Filters are an allowlist. FFmpeg has ~500 filters and new releases keep adding ones that read
// files, fetch URLs or load code (movie, amovie, sendcmd, zmq, ladspa, lv2, frei0r, ocr, dnn_*,
// sr, arnndn, nnedi, libplacebo shaders, openclsrc, qrencode, ...), and FFmpeg 7.1 lets any
// option be loaded from a file with "/key=path". A blocklist would fail open on all of them;
// the allowlist below covers the filters of common recipes, and for each allowed filter that
// names a file, the option is checked: read files must be staged inputs, written files bare names.

const layerFilters = "filters"

type fileUse uint8

const (
	fileRead   fileUse = iota + 1 // must be a staged input
	fileWrite                     // must be a bare name; recorded as a side file
	fileForbid                    // never allowed (a directory, a model with paths)
	fileFont                      // a fontconfig family name, never a path or pattern
	fileModel                     // libvmaf model string: no path= entries
)

type filterSpec struct {
	// files maps the options that name files to their use.
	files map[string]fileUse
	// positional lists the options reachable by position, in FFmpeg's declaration order, for
	// filters that have file options; more positional values than this are refused, so that a
	// positional value can never reach a file option unchecked.
	positional []string
	gpu        bool
}

var (
	plain     = &filterSpec{}
	gpuFilter = &filterSpec{gpu: true}
)

var filterTable = map[string]*filterSpec{
	// Reading files: staged inputs only.
	"subtitles":        {files: map[string]fileUse{"filename": fileRead, "f": fileRead, "fontsdir": fileForbid}, positional: []string{"filename"}},
	"ass":              {files: map[string]fileUse{"filename": fileRead, "f": fileRead, "fontsdir": fileForbid}, positional: []string{"filename"}},
	"drawtext":         {files: map[string]fileUse{"fontfile": fileRead, "textfile": fileRead, "font": fileFont}, positional: []string{"fontfile", "text", "textfile"}},
	"lut3d":            {files: map[string]fileUse{"file": fileRead}, positional: []string{"file"}},
	"lut1d":            {files: map[string]fileUse{"file": fileRead}, positional: []string{"file"}},
	"removelogo":       {files: map[string]fileUse{"filename": fileRead, "f": fileRead}, positional: []string{"filename"}},
	"cover_rect":       {files: map[string]fileUse{"cover": fileRead}, positional: []string{"cover"}},
	"find_rect":        {files: map[string]fileUse{"object": fileRead}, positional: []string{"object"}},
	"curves":           {files: map[string]fileUse{"psfile": fileRead, "plot": fileWrite}, positional: []string{"preset"}},
	"vidstabtransform": {files: map[string]fileUse{"input": fileRead}, positional: []string{"input"}},
	// Writing files: bare names in the work directory.
	"vidstabdetect": {files: map[string]fileUse{"result": fileWrite}, positional: []string{"result"}},
	"psnr":          {files: map[string]fileUse{"stats_file": fileWrite, "f": fileWrite}, positional: []string{"stats_file"}},
	"ssim":          {files: map[string]fileUse{"stats_file": fileWrite, "f": fileWrite}, positional: []string{"stats_file"}},
	"metadata":      {files: map[string]fileUse{"file": fileWrite}, positional: []string{"mode"}},
	"ametadata":     {files: map[string]fileUse{"file": fileWrite}, positional: []string{"mode"}},
	"paletteuse":    {files: map[string]fileUse{"debug_kdtree": fileWrite}, positional: []string{"dither"}},
	"deshake":       {files: map[string]fileUse{"filename": fileWrite}},
	"signature":     {files: map[string]fileUse{"filename": fileWrite}},
	"libvmaf":       {files: map[string]fileUse{"log_path": fileWrite, "model_path": fileRead, "model": fileModel}},

	// GPU filters route the job to a GPU runner.
	"scale_cuda": gpuFilter, "scale_npp": gpuFilter, "hwupload_cuda": gpuFilter,
	"overlay_cuda": gpuFilter, "yadif_cuda": gpuFilter, "thumbnail_cuda": gpuFilter,
	"bwdif_cuda": gpuFilter, "chromakey_cuda": gpuFilter, "transpose_npp": gpuFilter,
	"bilateral_cuda": gpuFilter, "colorspace_cuda": gpuFilter, "sharpen_npp": gpuFilter,
	"scale2ref_npp": gpuFilter, "pad_cuda": gpuFilter,

	// Sources (mostly for -f lavfi).
	"testsrc": plain, "testsrc2": plain, "smptebars": plain, "smptehdbars": plain,
	"color": plain, "nullsrc": plain, "rgbtestsrc": plain, "yuvtestsrc": plain,
	"mandelbrot": plain, "allrgb": plain, "allyuv": plain, "gradients": plain,
	"pal75bars": plain, "pal100bars": plain, "colorchart": plain, "colorspectrum": plain,
	"zoneplate": plain, "haldclutsrc": plain, "sierpinski": plain,
	"sine": plain, "anullsrc": plain, "aevalsrc": plain, "anoisesrc": plain,
	"nullsink": plain, "anullsink": plain,

	// Video.
	"scale": plain, "scale2ref": plain, "crop": plain, "cropdetect": plain, "pad": plain,
	"overlay": plain, "hflip": plain, "vflip": plain, "transpose": plain, "rotate": plain,
	"fps": plain, "framerate": plain, "minterpolate": plain, "setpts": plain, "setsar": plain,
	"setdar": plain, "format": plain, "fade": plain, "xfade": plain, "trim": plain,
	"select": plain, "thumbnail": plain, "tile": plain, "untile": plain, "zoompan": plain,
	"drawbox": plain, "drawgrid": plain, "unsharp": plain, "eq": plain, "hue": plain,
	"colorbalance": plain, "colorchannelmixer": plain, "colorlevels": plain,
	"colortemperature": plain, "vibrance": plain, "exposure": plain, "colorspace": plain,
	"zscale": plain, "tonemap": plain, "lut": plain, "lutrgb": plain, "lutyuv": plain,
	"haldclut": plain, "negate": plain, "boxblur": plain, "gblur": plain, "avgblur": plain,
	"smartblur": plain, "median": plain, "convolution": plain, "sobel": plain,
	"edgedetect": plain, "erosion": plain, "dilation": plain, "deflate": plain,
	"inflate": plain, "pixelize": plain, "noise": plain, "vignette": plain,
	"lenscorrection": plain, "perspective": plain, "histeq": plain, "histogram": plain,
	"waveform": plain, "vectorscope": plain, "scdet": plain, "showinfo": plain,
	"signalstats": plain, "blackdetect": plain, "blackframe": plain, "freezedetect": plain,
	"idet": plain, "yadif": plain, "bwdif": plain, "w3fdif": plain, "estdif": plain,
	"kerndeint": plain, "pullup": plain, "fieldmatch": plain, "decimate": plain,
	"mpdecimate": plain, "telecine": plain, "detelecine": plain, "interlace": plain,
	"tinterlace": plain, "separatefields": plain, "weave": plain, "il": plain,
	"setfield": plain, "fieldorder": plain, "hqdn3d": plain, "nlmeans": plain,
	"atadenoise": plain, "bm3d": plain, "dctdnoiz": plain, "owdenoise": plain,
	"vaguedenoiser": plain, "deband": plain, "deblock": plain, "delogo": plain,
	"chromakey": plain, "colorkey": plain, "colorhold": plain, "hsvkey": plain,
	"despill": plain, "alphamerge": plain, "alphaextract": plain, "premultiply": plain,
	"unpremultiply": plain, "blend": plain, "tblend": plain, "tmix": plain, "mix": plain,
	"maskedmerge": plain, "displace": plain, "remap": plain, "geq": plain,
	"palettegen": plain, "split": plain, "null": plain, "copy": plain, "hstack": plain,
	"vstack": plain, "xstack": plain, "concat": plain, "streamselect": plain,
	"interleave": plain, "tpad": plain, "loop": plain, "reverse": plain, "framestep": plain,
	"random": plain, "shuffleframes": plain, "swaprect": plain, "fillborders": plain,
	"chromashift": plain, "rgbashift": plain, "shear": plain, "extractplanes": plain,
	"mergeplanes": plain, "shuffleplanes": plain, "hwupload": plain, "hwdownload": plain,
	"bilateral": plain, "cas": plain, "colorize": plain, "monochrome": plain,
	"grayworld": plain, "huesaturation": plain, "normalize": plain,
	"photosensitivity": plain, "setparams": plain, "setrange": plain, "limiter": plain,
	"amplify": plain, "elbg": plain, "fspp": plain, "spp": plain, "pp7": plain, "pp": plain,
	"hqx": plain, "xbr": plain, "super2xsai": plain, "kirsch": plain, "prewitt": plain,
	"roberts": plain, "scharr": plain, "lagfun": plain, "fftfilt": plain, "chromanr": plain,
	"colormatrix": plain, "colorcorrect": plain, "greyedge": plain, "colorcontrast": plain,
	"epx": plain, "guided": plain, "morpho": plain, "siti": plain, "entropy": plain,
	"framepack": plain, "stereo3d": plain, "v360": plain, "dejudder": plain, "sab": plain,
	"threshold": plain, "lumakey": plain, "identity": plain, "msad": plain, "corr": plain,
	"vif": plain, "showpalette": plain, "settb": plain, "sidedata": plain, "thistogram": plain,
	"datascope": plain, "oscilloscope": plain, "pixscope": plain, "floodfill": plain,
	"backgroundkey": plain, "ciescope": plain,

	// Audio.
	"asplit": plain, "anull": plain, "acopy": plain, "aformat": plain, "atrim": plain,
	"asetpts": plain, "asettb": plain, "afade": plain, "acrossfade": plain, "adelay": plain,
	"apad": plain, "aloop": plain, "areverse": plain, "atempo": plain, "asetrate": plain,
	"aresample": plain, "volume": plain, "loudnorm": plain, "dynaudnorm": plain,
	"acompressor": plain, "alimiter": plain, "agate": plain, "highpass": plain,
	"lowpass": plain, "bandpass": plain, "bandreject": plain, "equalizer": plain,
	"bass": plain, "treble": plain, "highshelf": plain, "lowshelf": plain, "allpass": plain,
	"biquad": plain, "silenceremove": plain, "silencedetect": plain, "volumedetect": plain,
	"ebur128": plain, "astats": plain, "aecho": plain, "chorus": plain, "flanger": plain,
	"tremolo": plain, "vibrato": plain, "aphaser": plain, "pan": plain,
	"channelsplit": plain, "channelmap": plain, "join": plain, "amerge": plain,
	"amix": plain, "stereotools": plain, "extrastereo": plain, "earwax": plain,
	"afftdn": plain, "anlmdn": plain, "adeclick": plain, "adeclip": plain, "compand": plain,
	"speechnorm": plain, "dcshift": plain, "deesser": plain, "asetnsamples": plain,
	"ashowinfo": plain, "aselect": plain, "astreamselect": plain, "ainterleave": plain,
	"showwaves": plain, "showwavespic": plain, "showspectrum": plain,
	"showspectrumpic": plain, "showfreqs": plain, "avectorscope": plain,
	"ahistogram": plain, "aphasemeter": plain, "abitscope": plain, "replaygain": plain,
	"sidechaincompress": plain, "acontrast": plain, "apulsator": plain, "asubboost": plain,
	"virtualbass": plain, "superequalizer": plain, "acrusher": plain, "asoftclip": plain,
}

// filterIndex is filterTable for lookups.
var filterIndex = newStrTable(filterTable)

func filterErr(flag, value, format string, a ...any) *Error {
	return newError(layerFilters, flag, value, format, a...)
}

// filterNode is one filter of a graph after graph-level unescaping.
type filterNode struct {
	name    string // without an "@instance" suffix
	args    string
	hasArgs bool
}

// isFilterSpace is libavutil's WHITESPACES (" \n\t\r"), tested without a call: the parser
// tests every byte, and under WASM a strings.IndexByte per byte cost more than the rest of it.
func isFilterSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// byteSet is a set of bytes, for the terminators of getToken: inSet marks the bytes of the set,
// quoteOrEscape the backslash and the single quote, which getToken's fast path also stops at,
// so that it looks at each byte once.
type byteSet [256]uint8

const (
	inSet         = 1
	quoteOrEscape = 2
)

func makeByteSet(s string) *byteSet {
	var t byteSet
	for i := 0; i < len(s); i++ {
		t[s[i]] = inSet
	}
	t['\\'] |= quoteOrEscape
	t['\''] |= quoteOrEscape
	return &t
}

// The terminators getToken is called with.
var (
	termFilterName  = makeByteSet("=,;[")
	termFilterArgs  = makeByteSet("[],;")
	termLabel       = makeByteSet("]")
	termOptionValue = makeByteSet(":")
)

func skipSpace(s string, i int) int {
	for i < len(s) && isFilterSpace(s[i]) {
		i++
	}
	return i
}

// getToken is av_get_token: it reads from s[i] up to the first byte of term that is neither
// escaped nor quoted, removes the escapes and quotes, trims leading and unprotected trailing
// whitespace, and returns the token and the position of the terminator.
//
// A token with quotes or escapes is written out. With an arena it is written at the arena's end
// and is its bytes, which are never written again while the arena grows (a full arena is
// replaced, not reallocated in place): under WASM, allocating each such token was about 0.2
// allocations a validation, each costing hundreds of nanoseconds. Without one it is a copy.
func getToken(arena *[]byte, s string, i int, term *byteSet) (string, int) {
	i = skipSpace(s, i)
	// Fast path: no quote or escape before the terminator, so the token is a substring.
	j := i
	for len(s)-j >= 4 {
		w := s[j : j+4]
		if term[w[0]]|term[w[1]]|term[w[2]]|term[w[3]] != 0 {
			break
		}
		j += 4
	}
	for j < len(s) && term[s[j]] == 0 {
		j++
	}
	if j == len(s) || term[s[j]]&inSet != 0 {
		e := j
		for e > i && isFilterSpace(s[e-1]) {
			e--
		}
		return s[i:e], j
	}
	if arena == nil {
		out, end := unquoteToken(make([]byte, 0, 16), s, i, term)
		return string(out), end
	}
	// The token is no longer than what is left of s, so out never outgrows the room made here.
	a := *arena
	if cap(a)-len(a) < len(s)-i {
		a = make([]byte, 0, max(2*cap(a), len(s)-i, 64))
	}
	out, end := unquoteToken(a[len(a):], s, i, term)
	*arena = a[:len(a)+len(out)]
	return unsafe.String(unsafe.SliceData(out), len(out)), end
}

// unquoteToken is getToken's slow path, appending the token to out.
func unquoteToken(out []byte, s string, i int, term *byteSet) ([]byte, int) {
	end := 0
	for i < len(s) && term[s[i]]&inSet == 0 {
		c := s[i]
		i++
		switch {
		case c == '\\' && i < len(s):
			out = append(out, s[i])
			i++
			end = len(out)
		case c == '\'':
			for i < len(s) && s[i] != '\'' {
				out = append(out, s[i])
				i++
			}
			if i < len(s) {
				i++
				end = len(out)
			}
		default:
			out = append(out, c)
		}
	}
	for len(out) > end && isFilterSpace(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	return out, i
}

// swsFlagNames are swscale's flags (its sws_flags option's constants).
var swsFlagNames = map[string]bool{
	"fast_bilinear": true, "bilinear": true, "bicubic": true, "experimental": true, "neighbor": true,
	"area": true, "bicublin": true, "gauss": true, "sinc": true, "lanczos": true, "spline": true,
	"print_info": true, "accurate_rnd": true, "full_chroma_int": true, "full_chroma_inp": true,
	"bitexact": true, "error_diffusion": true,
}

// namedFlags reports whether flags is an AVOption flags value written with names only: names
// joined by + or -, one of them before the first at most (never a number, which would set any
// bit).
func namedFlags(flags string, names map[string]bool) bool {
	if len(flags) > 0 && (flags[0] == '+' || flags[0] == '-') {
		flags = flags[1:]
	}
	n := 0
	for _, f := range strings.FieldsFunc(flags, func(r rune) bool { return r == '+' || r == '-' }) {
		if !names[f] {
			return false
		}
		n++
	}
	// As many names as joins and one: no empty name between two signs or at the end.
	return n > 0 && n == strings.Count(flags, "+")+strings.Count(flags, "-")+1
}

// parseGraph splits a filter graph description into its filters, as
// avfilter_graph_segment_parse does.
func parseGraph(s string) ([]filterNode, string) {
	nodes, bad := parseGraphAppend(nil, nil, s)
	if bad != "" {
		return nil, bad
	}
	return nodes, ""
}

// parseGraphAppend is parseGraph appending to nodes, so that a validation reuses one slice, and
// writing unquoted names and arguments in arena (see getToken).
func parseGraphAppend(nodes []filterNode, arena *[]byte, s string) ([]filterNode, string) {
	i := skipSpace(s, 0)
	if strings.HasPrefix(s[i:], "sws_flags=") {
		semi := strings.IndexByte(s[i:], ';')
		if semi < 0 {
			return nodes, "sws_flags not terminated with ';'"
		}
		// FFmpeg gives the text before the ';' as it is to every scale filter of the graph as
		// flags=<text>, so ":w=12000" there would be one more option of each; and FFmpeg 5.1
		// crashes (SIGSEGV) on a flag it cannot read there. Only swscale's flag names, joined
		// by + or -, may be in it.
		if flags := s[i+len("sws_flags=") : i+semi]; !namedFlags(flags, swsFlagNames) {
			return nodes, fmt.Sprintf("sws_flags=%s: only scaler flag names (bicubic, lanczos+accurate_rnd, ...) joined by + or - may come before the ';'", flags)
		}
		i += semi + 1
	}
	for {
		// One chain.
		for {
			i = skipSpace(s, i)
			var bad string
			if i, bad = skipLabels(arena, s, i); bad != "" {
				return nodes, bad
			}
			i = skipSpace(s, i)
			var name string
			name, i = getToken(arena, s, i, termFilterName)
			if at := strings.IndexByte(name, '@'); at >= 0 {
				name = name[:at]
			}
			if name == "" {
				return nodes, "missing filter name"
			}
			n := filterNode{name: name}
			if i < len(s) && s[i] == '=' {
				n.args, i = getToken(arena, s, i+1, termFilterArgs)
				n.hasArgs = true
			}
			nodes = append(nodes, n)
			i = skipSpace(s, i)
			if i, bad = skipLabels(arena, s, i); bad != "" {
				return nodes, bad
			}
			i = skipSpace(s, i)
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			break
		}
		if i < len(s) && s[i] == ';' {
			i++
			continue
		}
		break
	}
	if i < len(s) {
		return nodes, "unexpected " + quoteByte(s[i])
	}
	return nodes, ""
}

// skipLabels skips "[label]" link names; a label is itself read with av_get_token.
func skipLabels(arena *[]byte, s string, i int) (int, string) {
	for i < len(s) && s[i] == '[' {
		var label string
		label, i = getToken(arena, s, i+1, termLabel)
		if label == "" {
			return i, "empty link label"
		}
		if i >= len(s) || s[i] != ']' {
			return i, "unterminated link label"
		}
		i = skipSpace(s, i+1)
	}
	return i, ""
}

type filterOption struct {
	key   string // "" for a positional value
	value string
}

// parseFilterOptions splits filter arguments into options, as process_options does with
// av_opt_get_key_value(&args, "=", ":", AV_OPT_FLAG_IMPLICIT_KEY, ...).
func parseFilterOptions(args string) ([]filterOption, string) {
	opts, bad := parseFilterOptionsAppend(nil, nil, args)
	if bad != "" {
		return nil, bad
	}
	return opts, ""
}

// parseFilterOptionsAppend is parseFilterOptions appending to opts, writing unquoted values in
// arena (see getToken).
func parseFilterOptionsAppend(opts []filterOption, arena *[]byte, args string) ([]filterOption, string) {
	named := false
	i := 0
	for i < len(args) {
		p := skipSpace(args, i)
		ks := p
		for p < len(args) && isKeyChar(args[p]) {
			p++
		}
		ke := p
		p = skipSpace(args, p)
		var o filterOption
		if p < len(args) && args[p] == '=' {
			o.key = args[ks:ke]
			if o.key == "" {
				return opts, "option with an empty name"
			}
			o.value, p = getToken(arena, args, p+1, termOptionValue)
			named = true
		} else {
			if named {
				return opts, "positional value after a named option"
			}
			o.value, p = getToken(arena, args, i, termOptionValue)
		}
		opts = append(opts, o)
		if p < len(args) {
			p++
		}
		i = p
	}
	return opts, ""
}

// isKeyChar is libavutil's is_key_char.
func isKeyChar(c byte) bool {
	return (c|32 >= 'a' && c|32 <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '/' || c == '.'
}

// checkGraph parses and checks one filter graph given to flag.
func (st *state) checkGraph(flag, graph string) *Error {
	nodes, bad := parseGraphAppend(st.nodes[:0], &st.tokens, graph)
	st.nodes = nodes[:0]
	if bad != "" {
		return filterErr(flag, graph, "%s has an invalid filter graph: %s", flag, bad)
	}
	// checkFilter parses no graph, so nodes stays as parsed.
	for _, n := range nodes {
		if e := st.checkFilter(flag, n); e != nil {
			return e
		}
	}
	return nil
}

func (st *state) checkFilter(flag string, n filterNode) *Error {
	spec := filterIndex.get(n.name)
	if spec == nil {
		return filterErr(flag, n.name, "filter %q is not allowed", n.name)
	}
	if spec.gpu && st.gpuReason == "" {
		st.gpuReason = "filter " + n.name
	}
	if !n.hasArgs {
		return nil
	}
	opts, bad := parseFilterOptionsAppend(st.fopts[:0], &st.tokens, n.args)
	st.fopts = opts[:0]
	if bad != "" {
		return filterErr(flag, n.args, "filter %q has invalid options: %s", n.name, bad)
	}
	pos := 0
	for idx, o := range opts {
		key := o.key
		if strings.IndexByte(key, '/') >= 0 {
			return filterErr(flag, key, "filter %q option %q is not allowed: option values are never loaded from files", n.name, key)
		}
		if key == "" && spec.files != nil {
			if pos >= len(spec.positional) {
				return filterErr(flag, o.value, "filter %q: give option %d (%q) by name", n.name, pos+1, o.value)
			}
			key = spec.positional[pos]
			pos++
		}
		if e := st.checkFileOption(flag, n.name, spec, key, o.value); e != nil {
			return e
		}
		if e := st.checkFilterOption(flag, n.name, key, idx, o.value); e != nil {
			return e
		}
	}
	return nil
}

// checkFileOption checks an option the filter table knows to name a file.
func (st *state) checkFileOption(flag, filter string, spec *filterSpec, key, value string) *Error {
	use := spec.files[key]
	if use == 0 {
		return nil
	}
	what := subject{"filter ", filter, " option ", key}
	switch use {
	case fileRead:
		return st.checkReadName(layerFilters, flag, what, value)
	case fileWrite:
		return st.checkWrittenName(flag, what, value, namePlain)
	case fileForbid:
		return filterErr(flag, value, "%s is not allowed", what.String())
	case fileFont:
		if !validFontName(value) {
			return filterErr(flag, value, "%s %q is not allowed: give a font family name, or a staged fontfile", what.String(), value)
		}
	case fileModel:
		if strings.Contains(strings.ToLower(value), "path") {
			return filterErr(flag, value, "%s %q is not allowed: built-in model versions only", what.String(), value)
		}
	}
	return nil
}

// validFontName accepts fontconfig family names ("DejaVu Sans", "Noto-Sans") but nothing that a
// fontconfig pattern would read as a property (":file=...") or a path.
func validFontName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != ' ' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
