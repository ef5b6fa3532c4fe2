package validator

import (
	"strconv"
	"strings"
)

// Layer 7 (limits), continued: commands that can only burn resources. The sandbox's deadline
// stops any job at its plan's cap, but a command that can never finish on its own is a mistake
// or an attack whichever it is, and costs a runner until the cap: it is refused here instead.
//
//   - An input that never ends — an image looped with -loop 1, a file repeated with
//     -stream_loop -1, an -f lavfi source without a duration — needs a bound: -t or -to on the
//     input, or on every output -t, -to, -frames (-frames:v, -vframes, -aframes), -fs, or
//     -shortest with at least one input that ends. So does a source filter without a duration in
//     -filter_complex, -vf or -af (color, nullsrc, sine, ...), unless its graph ends at its
//     shortest input (shortest=1, trim, amerge, amix duration=shortest).
//   - -threads, -filter_threads and -filter_complex_threads at most MaxThreads.
//   - Frame sizes (-s, -video_size, the size of lavfi sources, literal scale and pad sizes) at
//     most MaxFrameSide on each side; frame rates (-r, -framerate, -fpsmax, rate and fps
//     options) at most MaxFrameRate; -stream_loop at most MaxStreamLoop repeats.

const (
	// MaxThreads caps -threads and the filter thread counts: no runner has more cores.
	MaxThreads = 64
	// MaxFrameSide caps the width and the height of a frame: 8192 covers 8K (7680x4320) and
	// DCI 8K (8192x4320).
	MaxFrameSide = 8192
	// MaxFrameRate caps frame rates, in frames per second: slow-motion footage is shot at 240.
	MaxFrameRate = 480
	// MaxStreamLoop caps -stream_loop repeats.
	MaxStreamLoop = 1000
)

// inputInfo is what the limits need to know of one input.
type inputInfo struct {
	name    string
	endless string // why the input never ends ("-loop 1"), "" when it ends
}

// applyResource checks the flags that bound or size the work; it runs for every flag before
// the flag's own value check.
func (st *state) applyResource(flag, base, v string) *Error {
	switch base {
	case "t", "to", "frames", "vframes", "aframes", "fs":
		if st.pending.bounded == "" {
			st.pending.bounded = flag
		}
	case "shortest":
		st.pending.shortest = true
	case "loop":
		st.pending.loop = v
	case "stream_loop":
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			return limitErr(flag, v, "%s %q is not a number of repeats (-1 for ever)", flag, v)
		}
		if n > MaxStreamLoop {
			return limitErr(flag, v, "%s %d is over the maximum of %d repeats", flag, n, MaxStreamLoop)
		}
		st.pending.streamLoop = n
	case "start_number":
		n, err := strconv.Atoi(v)
		if err != nil {
			// -start_number of the HLS and segment muxers takes the same integers.
			return flagErr(flag, v, "%s %q is not an integer", flag, v)
		}
		st.pending.startNumber = n
	case "threads", "filter_threads", "filter_complex_threads":
		if v == "auto" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return limitErr(flag, v, "%s %q is not a thread count", flag, v)
		}
		if n > MaxThreads {
			return limitErr(flag, v, "%s %d is over the maximum of %d threads", flag, n, MaxThreads)
		}
	case "s", "video_size":
		return checkFrameSizeIn(layerLimits, flag, flag, v)
	case "r", "framerate", "fpsmax":
		return checkFrameRateIn(layerLimits, flag, flag, v)
	}
	return nil
}

// checkFrameSize checks a WxH size; abbreviations (hd720, 4k, ...) are all within the limit and
// left to FFmpeg.
func checkFrameSizeIn(layer, flag, what, v string) *Error {
	ws, hs, ok := strings.Cut(v, "x")
	if !ok {
		return nil
	}
	w, errW := strconv.Atoi(ws)
	h, errH := strconv.Atoi(hs)
	if errW != nil || errH != nil {
		// Not a literal size: FFmpeg refuses it, or it is an expression sized elsewhere.
		return nil
	}
	if w > MaxFrameSide || h > MaxFrameSide {
		return newError(layer, flag, v, "%s %s is over the maximum frame size of %dx%d", what, v, MaxFrameSide, MaxFrameSide)
	}
	return nil
}

// frameRateNames are FFmpeg's frame rate abbreviations, all of them below 60.
var frameRateNames = map[string]bool{
	"ntsc": true, "pal": true, "qntsc": true, "qpal": true, "sntsc": true, "spal": true,
	"film": true, "ntsc-film": true,
}

// frameRateNameIndex is frameRateNames for lookups.
var frameRateNameIndex = newStrTable(frameRateNames)

// checkFrameRate checks a rate given as a number, a fraction (30000/1001, 30000:1001) or an
// abbreviation.
func checkFrameRateIn(layer, flag, what, v string) *Error {
	if frameRateNameIndex.get(v) {
		return nil
	}
	rate, ok := parseRate(v)
	if !ok {
		return newError(layer, flag, v, "%s %q is not a frame rate", what, v)
	}
	if rate > MaxFrameRate {
		return newError(layer, flag, v, "%s %s is over the maximum frame rate of %d", what, v, MaxFrameRate)
	}
	return nil
}

func parseRate(v string) (float64, bool) {
	num, den, frac := strings.Cut(v, "/")
	if !frac {
		num, den, frac = strings.Cut(v, ":")
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 || n != n {
		return 0, false
	}
	if !frac {
		return n, true
	}
	d, err := strconv.ParseFloat(den, 64)
	if err != nil || d <= 0 {
		return 0, false
	}
	return n / d, true
}

// endlessInput says why an input with these options never ends, "" when it ends.
func (st *state) endlessInput(fo *fileOpts, lavfiEndless string) string {
	if fo.bounded != "" {
		return ""
	}
	switch {
	case fo.loop != "" && fo.loop != "0":
		return "-loop " + fo.loop
	case fo.streamLoop < 0:
		return "-stream_loop " + strconv.Itoa(fo.streamLoop)
	}
	return lavfiEndless
}

// lavfiSources are the source filters of -f lavfi inputs; each runs for ever unless given a
// duration (d or duration) or cut by trim/atrim in the same graph.
var lavfiSources = map[string]bool{
	"testsrc": true, "testsrc2": true, "smptebars": true, "smptehdbars": true, "color": true,
	"nullsrc": true, "rgbtestsrc": true, "yuvtestsrc": true, "mandelbrot": true, "allrgb": true,
	"allyuv": true, "gradients": true, "pal75bars": true, "pal100bars": true,
	"colorchart": true, "colorspectrum": true, "zoneplate": true, "haldclutsrc": true,
	"sierpinski": true, "sine": true, "anullsrc": true, "aevalsrc": true, "anoisesrc": true,
}

// lavfiSourceIndex is lavfiSources for lookups.
var lavfiSourceIndex = newStrTable(lavfiSources)

// endlessGraph says which source of a filter graph never ends, "" when every source has a
// duration or the graph ends at its shortest input (trim/atrim, shortest=1 on a filter such as
// overlay, amix duration=shortest, amerge).
func (st *state) endlessGraph(graph string) string {
	nodes, bad := parseGraphAppend(st.nodes[:0], &st.tokens, graph)
	st.nodes = nodes[:0]
	if bad != "" {
		return ""
	}
	endless := ""
	for _, n := range nodes {
		if n.name == "trim" || n.name == "atrim" || n.name == "amerge" {
			return ""
		}
		var opts []filterOption
		if n.hasArgs {
			opts, bad = parseFilterOptionsAppend(st.fopts[:0], &st.tokens, n.args)
			st.fopts = opts[:0]
			if bad != "" {
				opts = nil
			}
		}
		hasDuration := false
		for _, o := range opts {
			switch {
			case o.key == "shortest" && (o.value == "1" || o.value == "true"):
				return ""
			case n.name == "amix" && o.key == "duration" && o.value == "shortest":
				return ""
			case o.key == "d" || o.key == "duration":
				hasDuration = true
			}
		}
		if !hasDuration && endless == "" && lavfiSourceIndex.get(n.name) {
			endless = n.name
		}
	}
	return endless
}

// checkEndless refuses a command that reads an endless input, or runs an endless source in a
// filter graph, into an output without a bound.
func (st *state) checkEndless() *Error {
	endless := st.graphEndless
	finite := false
	for _, in := range st.inputs {
		if in.endless == "" {
			finite = true
		} else if endless == "" {
			endless = in.endless
		}
	}
	if endless == "" {
		return nil
	}
	for _, o := range st.outputs {
		if o.opts.bounded != "" || (o.opts.shortest && finite) {
			continue
		}
		return limitErr("", o.name, "output %q never ends: an input never ends (%s); bound it with -t, -to, -frames or -shortest", o.name, endless)
	}
	return nil
}
