package runner

import (
	"math"
	"strconv"
	"strings"

	"github.com/mediajobs/mediajobs/validator"
)

// Progress needs the length of what FFmpeg writes: its -progress lines say how much of the
// output is done (out_time_us), never how much there is. Where the command itself bounds the
// output, the length is read from its arguments here, so that a job whose input is generated
// (-f lavfi) or read past its end shows progress too. Every bound the command gives counts and
// the smallest wins:
//   - an output's -t, or its -to less its -ss;
//   - -frames:v (-vframes) over the output's -r, or over the rate of the first input when the
//     command gives it (-r or -framerate before the -i, the r= or rate= of a lavfi video source);
//   - the inputs: an input's -t or -to, and a lavfi graph's d= or duration= on each of its
//     sources, less the input's -ss. The output lasts as long as its longest input (so every
//     input must be bounded), or its shortest with -shortest.
//
// With several outputs the longest counts (FFmpeg reports the furthest one); any unbounded
// output leaves the length unknown.

// commandDuration is the length in seconds of the output of planned arguments (Plan.Args, which
// the validator accepted, with Plan.Outputs the names it writes) where the command bounds it; 0
// where it does not.
func commandDuration(args, outputs []string) float64 {
	inputAt := map[int]validator.InputRead{}
	for _, r := range validator.InputReads(args) {
		inputAt[r.Index] = r
	}
	isOutput := map[string]bool{}
	for _, o := range outputs {
		isOutput[o] = true
	}
	var (
		inputs  []inputBound
		longest float64
		found   bool
	)
	start := 0
	for i := 0; i < len(args); i++ {
		if r, ok := inputAt[i]; ok && i+1 < len(args) {
			inputs = append(inputs, boundInput(fileOptions(args[start:i]), r))
			i++
			start = i + 1
			continue
		}
		if a := args[i]; !isOutput[a] || strings.HasPrefix(a, "-") {
			continue
		}
		d := boundOutput(fileOptions(args[start:i]), inputs)
		start = i + 1
		if d <= 0 {
			return 0
		}
		longest, found = max(longest, d), true
	}
	if !found {
		return 0
	}
	return longest
}

// fileOpts are the options of one input or output that bound its length, as given: "" when
// absent.
type fileOpts struct {
	t, to, ss, frames, rate string
	shortest                bool
}

// fileOptions reads the options given before one input or output name. Only flags that take a
// value are looked for, by exact spelling, each with the word after it: the words are the
// validator's, which accepted each flag and its value.
func fileOptions(words []string) fileOpts {
	var o fileOpts
	for j := 0; j < len(words); j++ {
		if words[j] == "-shortest" {
			o.shortest = true
			continue
		}
		if j+1 >= len(words) {
			break
		}
		v := &o.t
		switch words[j] {
		case "-t":
		case "-to":
			v = &o.to
		case "-ss":
			v = &o.ss
		case "-frames:v", "-vframes":
			v = &o.frames
		case "-r", "-r:v", "-framerate":
			v = &o.rate
		default:
			continue
		}
		*v = words[j+1]
		j++
	}
	return o
}

// span is the length -t, or -to less -ss, give; 0 when neither does.
func (o fileOpts) span() float64 {
	if t := parseTime(o.t); t > 0 {
		return t
	}
	if to := parseTime(o.to); to > 0 {
		return max(to-max(parseTime(o.ss), 0), 0)
	}
	return 0
}

// inputBound is what the command says of one input: its length and its video frame rate, each
// 0 when unknown.
type inputBound struct {
	seconds, rate float64
}

func boundInput(o fileOpts, r validator.InputRead) inputBound {
	b := inputBound{seconds: o.span(), rate: parseRate(o.rate)}
	if r.Format == "lavfi" {
		g := lavfiSources(r.Name)
		if g.seconds > 0 {
			if ss := parseTime(o.ss); ss > 0 {
				g.seconds = max(g.seconds-ss, 0)
			}
			b.seconds = minKnown(b.seconds, g.seconds)
		}
		if b.rate == 0 {
			b.rate = g.rate
		}
	}
	return b
}

func boundOutput(o fileOpts, inputs []inputBound) float64 {
	d := o.span()
	if frames, err := strconv.ParseFloat(o.frames, 64); err == nil && frames > 0 {
		rate := parseRate(o.rate)
		if rate == 0 && len(inputs) > 0 {
			rate = inputs[0].rate
		}
		if rate > 0 {
			d = minKnown(d, frames/rate)
		}
	}
	in := 0.0
	if o.shortest {
		for _, b := range inputs {
			in = minKnown(in, b.seconds)
		}
	} else {
		for _, b := range inputs {
			if b.seconds <= 0 {
				in = 0
				break
			}
			in = max(in, b.seconds)
		}
	}
	if ss := parseTime(o.ss); in > 0 && ss > 0 {
		in = max(in-ss, 0)
	}
	return minKnown(d, in)
}

// minKnown is the smaller of two lengths, where 0 is unknown rather than zero.
func minKnown(a, b float64) float64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// audioSources are the lavfi sources whose r= is a sample rate, not a frame rate.
var audioSources = map[string]bool{"anullsrc": true, "anoisesrc": true, "aevalsrc": true, "afirsrc": true,
	"afdelaysrc": true, "sine": true, "flite": true, "hilbert": true, "sinc": true}

// lavfiSources reads a lavfi graph's sources (the first filter of each chain that takes no
// labelled input): the length is the longest source's d= or duration=, 0 unless every source
// gives one; the rate is the r=, rate= or framerate= of the first video source that gives one.
func lavfiSources(graph string) inputBound {
	var b inputBound
	sources := 0
	for _, chain := range splitGraph(graph, ';') {
		first := strings.TrimSpace(splitGraph(chain, ',')[0])
		if strings.HasPrefix(first, "[") || strings.HasPrefix(first, "sws_flags=") || first == "" {
			continue
		}
		for strings.HasSuffix(first, "]") {
			i := strings.LastIndexByte(first, '[')
			if i < 0 {
				break
			}
			first = strings.TrimSpace(first[:i]) // an output label
		}
		name, args, _ := strings.Cut(first, "=")
		if i := strings.IndexAny(name, "@["); i >= 0 {
			name = name[:i]
		}
		sources++
		seconds := 0.0
		for _, opt := range splitGraph(args, ':') {
			k, v, ok := strings.Cut(opt, "=")
			if !ok {
				continue
			}
			switch v = unquote(v); k {
			case "d", "duration":
				seconds = parseTime(v)
			case "r", "rate", "framerate":
				if b.rate == 0 && !audioSources[name] {
					b.rate = parseRate(v)
				}
			}
		}
		if seconds <= 0 {
			b.seconds = -1
		} else if b.seconds >= 0 {
			b.seconds = max(b.seconds, seconds)
		}
	}
	if sources == 0 || b.seconds < 0 {
		b.seconds = 0
	}
	return b
}

// splitGraph splits a filter graph's text at sep outside quotes, brackets and escapes, keeping
// them in the parts.
func splitGraph(s string, sep byte) []string {
	var (
		parts  []string
		quoted bool
		depth  int
	)
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '[':
			depth++
		case c == ']':
			depth = max(depth-1, 0)
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unquote takes the quotes and escapes of a filter option's value away.
func unquote(v string) string {
	if !strings.ContainsAny(v, `'\`) {
		return v
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\'':
			quoted = !quoted
		case c == '\\' && !quoted && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// parseTime reads an FFmpeg time duration, [-][HH:]MM:SS[.m...] or [-]S+[.m...][s|ms|us], in
// seconds; 0 when it is none or not positive.
func parseTime(s string) float64 {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "-") {
		return 0
	}
	var sec float64
	if strings.Contains(s, ":") {
		parts := strings.Split(s, ":")
		if len(parts) > 3 {
			return 0
		}
		for i, p := range parts {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil || v < 0 || (i < len(parts)-1 && strings.Contains(p, ".")) {
				return 0
			}
			sec = sec*60 + v
		}
	} else {
		unit := 1.0
		switch {
		case strings.HasSuffix(s, "ms"):
			s, unit = strings.TrimSuffix(s, "ms"), 1e-3
		case strings.HasSuffix(s, "us"):
			s, unit = strings.TrimSuffix(s, "us"), 1e-6
		case strings.HasSuffix(s, "s"):
			s = strings.TrimSuffix(s, "s")
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || strings.ContainsAny(s, "eEnNxX+") {
			return 0
		}
		sec = v * unit
	}
	if math.IsInf(sec, 0) || math.IsNaN(sec) || sec <= 0 {
		return 0
	}
	return sec
}

// videoRates are the frame rate abbreviations FFmpeg takes (av_parse_video_rate).
var videoRates = map[string]float64{"ntsc": 30000.0 / 1001, "pal": 25, "qntsc": 30000.0 / 1001, "qpal": 25,
	"sntsc": 30000.0 / 1001, "spal": 25, "film": 24, "ntsc-film": 24000.0 / 1001}

// parseRate reads a frame rate: a number, a fraction or an abbreviation; 0 when it is none.
func parseRate(s string) float64 {
	if r, ok := videoRates[s]; ok {
		return r
	}
	num, den, frac := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || strings.ContainsAny(num, "eEnNxX+") || n <= 0 {
		return 0
	}
	if frac {
		d, err := strconv.ParseFloat(den, 64)
		if err != nil || strings.ContainsAny(den, "eEnNxX+") || d <= 0 {
			return 0
		}
		n /= d
	}
	if math.IsInf(n, 0) {
		return 0
	}
	return n
}
