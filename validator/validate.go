package validator

import (
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// sprintf is fmt.Sprintf for the verbs the messages use (%s and %q of strings, %d of ints, %c of
// bytes and runes, %%), written out because fmt costs more than a whole validation under WASM,
// where refusals are common. Anything else, flags and widths included, goes to fmt.Sprintf, so
// the text is always fmt's.
//
// The arguments are strings, ints, bytes and runes only (any other type prints as "?";
// TestSprintfArgTypes type-checks every call). Reading them only through that type switch keeps
// a from escaping, so the callers box their arguments on the stack: boxing a string on the heap
// was about half an allocation per validation, each costing hundreds of nanoseconds under WASM.
// Only the rare fallback to fmt boxes them again.
func sprintf(format string, a ...any) string {
	buf := appendf(make([]byte, 0, len(format)+32), format, a...)
	// buf is not written again, so the string can be its bytes: one allocation rather than two.
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}

// appendf is sprintf appending to dst.
func appendf(dst []byte, format string, a ...any) []byte {
	base := len(dst)
	n := 0
	for i := 0; i < len(format); i++ {
		// The text up to the next verb in one append: byte by byte, it was a tenth of a refusal
		// under WASM.
		j := i
		for j < len(format) && format[j] != '%' {
			j++
		}
		dst = append(dst, format[i:j]...)
		if i = j; i == len(format) {
			break
		}
		if i+1 >= len(format) {
			return append(dst[:base], fmtSprintf(format, a)...)
		}
		i++
		verb := format[i]
		if verb == '%' {
			dst = append(dst, '%')
			continue
		}
		if n >= len(a) {
			return append(dst[:base], fmtSprintf(format, a)...)
		}
		arg := sprintfArg(a[n])
		n++
		switch {
		case arg.kind == argString && verb == 's':
			dst = append(dst, arg.s...)
		case arg.kind == argString && verb == 'q':
			dst = appendQuote(dst, Shortened(arg.s))
		case arg.kind == argInt && verb == 'd':
			dst = strconv.AppendInt(dst, arg.n, 10)
		case arg.kind == argByte && verb == 'c':
			dst = append(dst, string(rune(arg.n))...)
		default:
			return append(dst[:base], fmtSprintf(format, a)...)
		}
	}
	if n != len(a) {
		return append(dst[:base], fmtSprintf(format, a)...)
	}
	return dst
}

// MaxQuoted is how much of a value a refusal quotes: a value is the client's own, and a line of
// a 64 KiB list quoted whole would come back whole. The service's other refusals quote by the
// same rule (core/problem).
const MaxQuoted = 200

// Shortened is s, or its first MaxQuoted bytes (whole characters) and "…" when it is longer.
func Shortened(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// appendQuote is strconv.AppendQuote, which goes rune by rune through utf8 and unicode.IsPrint:
// a few percent of a validation under WASM, where refusals quote their values. Printable ASCII
// without '"' or '\\', what most values are, comes out as it is, so it is copied in one append.
func appendQuote(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.AppendQuote(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// errorBox is an Error with room for its message. Under WASM each allocation costs hundreds of
// nanoseconds and about two commands in five of the benchmark mix are refused, so building the
// refusal in one allocation rather than two (the Error, then its message) matters. errorText
// holds nine messages in ten of that mix; a longer one is appended elsewhere, as before.
type errorBox struct {
	err  Error
	text [errorText]byte
}

const errorText = 192

// newError is &Error{layer, flag, value, sprintf(format, a...)} in one allocation, the message
// living in the same object as the Error while it fits.
func newError(layer, flag, value, format string, a ...any) *Error {
	b := &errorBox{err: Error{Layer: layer, Flag: flag, Value: value}}
	msg := appendf(b.text[:0], format, a...)
	b.err.Message = unsafe.String(unsafe.SliceData(msg), len(msg))
	return &b.err
}

const (
	argString = iota
	argInt
	argByte
	argRune
	argOther // a type sprintf does not know: TestSprintfArgTypes keeps every call free of one
)

// sprintfValue is one argument of sprintf, taken out of its interface.
type sprintfValue struct {
	kind int
	s    string
	n    int64
}

func sprintfArg(v any) sprintfValue {
	switch v := v.(type) {
	case string:
		return sprintfValue{kind: argString, s: v}
	case int:
		return sprintfValue{kind: argInt, n: int64(v)}
	case byte:
		return sprintfValue{kind: argByte, n: int64(v)}
	case rune:
		return sprintfValue{kind: argRune, n: int64(v)}
	}
	// Keeping v would make every argument escape; a message with "?" in it beats a panic.
	return sprintfValue{kind: argOther}
}

// fmtSprintf is fmt.Sprintf(format, a...) with every argument boxed again, so that a itself
// never reaches fmt.
func fmtSprintf(format string, a []any) string {
	b := make([]any, len(a))
	for i, v := range a {
		switch arg := sprintfArg(v); arg.kind {
		case argString:
			b[i] = arg.s
		case argInt:
			b[i] = int(arg.n)
		case argByte:
			b[i] = byte(arg.n)
		case argRune:
			b[i] = rune(arg.n)
		default:
			b[i] = "?"
		}
	}
	return fmt.Sprintf(format, b...)
}

// fileOpts are the per-file options given before an -i or an output name; FFmpeg resets them
// after each file.
type fileOpts struct {
	first           string // the first per-file flag, to report options after the last output
	format          string // -f
	segmentFormat   string // -segment_format
	hlsSegmentType  string // -hls_segment_type
	dashSegmentType string // -dash_segment_type
	startNumber     int    // -start_number, for an image-sequence input
	loop            string // -loop before an input: the image2 demuxer loops the image
	streamLoop      int    // -stream_loop before an input; -1 loops forever
	bounded         string // the first of -t, -to, -frames, -vframes, -aframes, -fs
	shortest        bool   // -shortest
}

// state is one validation in progress.
type state struct {
	opts      Options
	planArgs  []string
	downloads []Download
	nextLocal int
	outputs   []output
	sideFiles []sideFile
	pending   fileOpts
	gpuReason string // the first GPU-only thing the command uses, for routing and messages
	// passWrites says that a -pass 1 or 3 writes the two-pass log; passLogs are the
	// -passlogfile prefixes it is written under (FFmpeg's default when none).
	passWrites bool
	passLogs   []string
	required   []string
	inputs     []inputInfo
	// graphEndless says which source filter of a -filter_complex, -vf or -af graph never ends.
	graphEndless string
	// nodes and fopts are the parse of the graph and of the filter being checked, kept to reuse
	// their memory.
	nodes []filterNode
	fopts []filterOption
	// tokens is getToken's arena for the filter names, arguments and values it unquotes. It is
	// only appended to during a validation, so those strings stay valid after it; reset keeps
	// its memory for the next validation of a scratch.
	tokens []byte
	// names are the staged inputs' names, sorted, kept to reuse their memory.
	names []string
}

// Validate checks an FFmpeg command against the nine layers and, when it is accepted, plans its
// execution. It never panics and its answer depends only on its arguments.
func Validate(command string, opts Options) Result {
	plan, args, format, st, err := validate(command, opts)
	if err != nil {
		return Result{Valid: false, Error: err.Message, Err: err}
	}
	return Result{Valid: true, Args: args, InferredOutputFormat: format, RequiredInputs: st.required, Plan: plan}
}

func validate(command string, opts Options) (*Plan, []string, string, *state, *Error) {
	args, err := split(command)
	if err != nil {
		return nil, nil, "", nil, err
	}
	st := &state{}
	format, pattern, compute, err := st.run(args, opts)
	if err != nil {
		return nil, nil, "", nil, err
	}
	plan := &Plan{
		Downloads: st.downloads,
		Args:      st.planArgs,
		Outputs:   make([]string, 0, len(st.outputs)),
		Compute:   compute,
		Pattern:   pattern,
	}
	for _, o := range st.outputs {
		if o.null {
			plan.Analysis = true
			continue
		}
		plan.Outputs = append(plan.Outputs, o.name)
	}
	for _, f := range st.sideFiles {
		plan.SideFiles = append(plan.SideFiles, f.name)
	}
	return plan, args, format, st, nil
}

// run checks the split arguments of a command against every layer after the syntax. st is new,
// or reset by scratch.reset.
func (st *state) run(args []string, opts Options) (format, pattern, compute string, err *Error) {
	names, err := checkOptions(&opts, st.names)
	if err != nil {
		return "", "", "", err
	}
	st.names = names
	st.opts = opts
	st.planArgs = append(st.planArgs, args...)
	if err := st.checkStagedURLs(names); err != nil {
		return "", "", "", err
	}
	if err := st.walk(args); err != nil {
		return "", "", "", err
	}
	if err := st.addPassLogs(); err != nil {
		return "", "", "", err
	}
	format, pattern, err = st.checkOutputs()
	if err != nil {
		return "", "", "", err
	}
	if err := st.checkOverwrites(); err != nil {
		return "", "", "", err
	}
	compute, err = st.compute()
	if err != nil {
		return "", "", "", err
	}
	if err := st.checkEndless(); err != nil {
		return "", "", "", err
	}
	return format, pattern, compute, nil
}

// scratch is the memory of one validation, kept between the calls of AppendValidateJSON.
type scratch struct {
	st    state
	words []string
	// text is the splitter's arena, for the words that are not substrings of the command.
	text []byte
}

// scratchPool holds scratch for AppendValidateJSON. Under WASM, where allocating and collecting
// cost far more than natively, reusing it halves the allocations of a validation.
var scratchPool = sync.Pool{New: func() any { return newScratch() }}

func newScratch() *scratch {
	// MaxArgs+2 words: "ffmpeg", the arguments, and the one over the limit that split refuses.
	return &scratch{words: make([]string, 0, MaxArgs+2)}
}

// reset empties the scratch, keeping the capacity of its slices.
func (sc *scratch) reset() {
	st := &sc.st
	*st = state{
		planArgs:  st.planArgs[:0],
		downloads: st.downloads[:0],
		outputs:   st.outputs[:0],
		sideFiles: st.sideFiles[:0],
		required:  st.required[:0],
		inputs:    st.inputs[:0],
		nodes:     st.nodes[:0],
		fopts:     st.fopts[:0],
		tokens:    st.tokens[:0],
		names:     st.names[:0],
	}
	sc.words = sc.words[:0]
}

// AppendValidateJSON appends the JSON of Validate(command, opts) to dst, byte for byte what
// Result.AppendJSON gives, without building the Plan and reusing the memory of earlier calls.
func AppendValidateJSON(dst []byte, command string, opts Options) []byte {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	return sc.appendValidateJSON(dst, command, opts)
}

// A Checker validates commands one after another, reusing its memory from each to the next: it
// is AppendValidateJSON without the pool, for a caller that validates in one goroutine, such as
// the WASM module, where the pool's pinning and bookkeeping cost about 2% of a validation. The
// zero value is ready to use; a Checker is not safe for concurrent use.
type Checker struct {
	sc *scratch
}

// AppendValidateJSON is the package's AppendValidateJSON, answered from c's memory.
func (c *Checker) AppendValidateJSON(dst []byte, command string, opts Options) []byte {
	if c.sc == nil {
		c.sc = newScratch()
	}
	return c.sc.appendValidateJSON(dst, command, opts)
}

func (sc *scratch) appendValidateJSON(dst []byte, command string, opts Options) []byte {
	sc.reset()
	var r Result
	if cap(sc.text) < len(command) && len(command) <= MaxCommandBytes {
		sc.text = make([]byte, 0, len(command))
	}
	args, err := splitAppend(sc.words, sc.text, command)
	if err == nil {
		var format string
		if format, _, _, err = sc.st.run(args, opts); err == nil {
			r = Result{Valid: true, Args: args, InferredOutputFormat: format, RequiredInputs: sc.st.required}
		}
	}
	if err != nil {
		r = Result{Valid: false, Error: err.Message}
	}
	return r.AppendJSON(dst)
}

// walk reads the arguments in order, checking each flag and its value and collecting inputs and
// outputs.
func (st *state) walk(args []string) *Error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			fo := st.pending
			st.pending = fileOpts{}
			if fo.format == "null" || a == "-" {
				if e := checkNullOutput(fo.format, a); e != nil {
					return e
				}
				st.outputs = append(st.outputs, output{name: a, opts: fo, null: true})
				continue
			}
			if fo.format != "" {
				if e := checkOutputFormat(fo.format); e != nil {
					return e
				}
			}
			if e := checkOutputName(a); e != nil {
				return e
			}
			st.outputs = append(st.outputs, output{name: a, opts: fo})
			continue
		}
		spec, base, e := lookupFlag(a)
		if e != nil {
			return e
		}
		var v string
		if spec.takesValue() {
			if i+1 >= len(args) {
				return flagErr(a, "", "flag %s needs a value", a)
			}
			i++
			v = args[i]
		}
		if !spec.global && st.pending.first == "" && base != "i" {
			st.pending.first = a
		}
		if e := st.applyResource(a, base, v); e != nil {
			return e
		}
		if e := st.apply(a, base, spec, v, i); e != nil {
			return e
		}
	}
	return nil
}

// apply checks the value of one flag; i is the value's index in the arguments.
func (st *state) apply(flag, base string, spec *flagSpec, v string, i int) *Error {
	switch spec.kind {
	case vInput:
		fo := st.pending
		st.pending = fileOpts{}
		if e := st.addInput(i, v, &fo); e != nil {
			return e
		}
		lavfi := ""
		if fo.format == "lavfi" {
			if src := st.endlessGraph(v); src != "" {
				lavfi = "-f lavfi source " + src + " without a duration"
			}
		}
		st.inputs = append(st.inputs, inputInfo{name: v, endless: st.endlessInput(&fo, lavfi)})
	case vFormat:
		st.pending.format = v
	case vSegFormat:
		if e := checkSegmentFormat(v); e != nil {
			return e
		}
		st.pending.segmentFormat = v
	case vCodec:
		if !validCodecName(v) {
			return flagErr(flag, v, "%s value %q is not a codec name", flag, v)
		}
		st.noteCodec(flag, v)
	case vGraph:
		if e := st.checkGraph(flag, v); e != nil {
			return e
		}
		if src := st.endlessGraph(v); src != "" && st.graphEndless == "" {
			st.graphEndless = "source " + src + " in " + flag + " without a duration"
		}
	case vWrite:
		return st.checkWrittenName(flag, subject{flag, " value"}, v, nameNumbered)
	case vWritePlain:
		return st.checkWrittenName(flag, subject{flag, " value"}, v, namePlain)
	case vTemplate:
		return st.checkWrittenName(flag, subject{flag, " value"}, v, nameTemplate)
	case vRelURL:
		return checkRelativeURL(flag, v)
	case vX26x:
		return checkX26xParams(flag, v)
	case vVarStreamMap:
		return checkVarStreamMap(flag, v)
	case vHLSFlags:
		if !namedFlags(v, hlsFlagNames) {
			return flagErr(flag, v, "%s %q: the flags are names joined by + (single_file, delete_segments, independent_segments, ...); append_list and periodic_rekey are not allowed", flag, v)
		}
	case vSafe:
		return checkSafe(v)
	case vPatternType:
		return checkPatternType(v)
	case vHwaccel:
		if e := checkEnum(layerFlags, flag, v, "none", "cuda"); e != nil {
			return e
		}
		if v == "cuda" && st.gpuReason == "" {
			st.gpuReason = flag + " cuda"
		}
	case vHwFormat:
		if e := checkEnum(layerFlags, flag, v, "cuda"); e != nil {
			return e
		}
		if st.gpuReason == "" {
			st.gpuReason = flag + " cuda"
		}
	case vHLSSegType:
		if e := checkEnum(layerFormats, flag, v, "mpegts", "fmp4"); e != nil {
			return e
		}
		st.pending.hlsSegmentType = v
	case vDASHSegType:
		if e := checkEnum(layerFormats, flag, v, "auto", "mp4", "webm"); e != nil {
			return e
		}
		st.pending.dashSegmentType = v
	case vUpdate:
		return checkEnum(layerFlags, flag, v, "0", "1", "true", "false")
	case vRead:
		return st.checkReadName(layerFlags, flag, subject{flag, " value"}, v)
	case vPass:
		return st.checkPass(flag, v)
	case vPassLog:
		return st.checkPassLogFile(flag, v)
	case vName:
		if !validName(v) {
			return flagErr(flag, v, "%s value %q is not allowed: a name or number only", flag, v)
		}
	}
	return nil
}
