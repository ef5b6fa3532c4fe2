package validator

import (
	"strconv"
	"strings"
)

// Layer 6: paths. Every name the command writes, and every file name inside an option or a
// filter, must be a bare name inside the work directory. The rule is a charset, not a list of bad
// things: letters, digits, '.', '_', '-' and '+', never leading '-' or '.', never "..". That
// excludes '/', '\', ':' (so no protocol prefix such as "file:" or "pipe:"), ',' and '|' (so no
// "concat:"/"subfile," tricks) and every shell or glob character. '%' is accepted only as the
// numbered-pattern forms FFmpeg expands (%d, %03d, %%, and %v for HLS variant streams).

const layerPaths = "paths"

// maxNameBytes is the usual file-system limit on one name.
const maxNameBytes = 255

// nameKind says which pattern forms a name may use.
type nameKind int

const (
	namePlain    nameKind = iota // a plain file name
	nameNumbered                 // may hold %d-style counters (image sequences, segments)
	nameTemplate                 // may also hold DASH $Identifier$ templates
)

// checkName reports why name is not a bare, path-safe name of the given kind; "" when it is.
func checkName(name string, kind nameKind) string {
	// Most names are safe bytes only, without "..", neither starting with '-' or '.': one pass
	// over a table tells, where checkNameSteps' search for ".." and its switch a byte cost
	// several times more under WASM. Any other name goes through checkNameSteps, so that it
	// gets the same reason.
	if len(name) > 0 && len(name) <= maxNameBytes && name[0] != '-' && name[0] != '.' {
		i := 0
		for i < len(name) && safeNameByte[name[i]] && (name[i] != '.' || name[i-1] != '.') {
			i++
		}
		if i == len(name) {
			return ""
		}
	}
	return checkNameSteps(name, kind)
}

// checkNameSteps is checkName, one rule after another.
func checkNameSteps(name string, kind nameKind) string {
	if name == "" {
		return "is empty"
	}
	if len(name) > maxNameBytes {
		return "is longer than 255 bytes"
	}
	if name[0] == '-' {
		return "starts with '-'"
	}
	if name[0] == '.' {
		return "starts with '.'"
	}
	if strings.Contains(name, "..") {
		return "contains \"..\""
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case isSafeNameByte(c):
		case c == '/' || c == '\\':
			return "is not a bare file name (it contains a directory separator)"
		case c == ':':
			return "is not a bare file name (protocol prefixes and ':' are not allowed)"
		case c == '%' && kind >= nameNumbered:
			n := patternLen(name, i, kind)
			if n == 0 {
				return "has an invalid '%' pattern"
			}
			i += n - 1
		case c == '$' && kind == nameTemplate:
			n := templateLen(name, i)
			if n == 0 {
				return "has an invalid '$' template"
			}
			i += n - 1
		default:
			return "contains " + quoteByte(c) + ": only letters, digits, '.', '_', '-' and '+' are allowed"
		}
	}
	return ""
}

// safeNameByte is isSafeNameByte as a table.
var safeNameByte = func() (t [256]bool) {
	for c := range t {
		t[c] = isSafeNameByte(byte(c))
	}
	return t
}()

func isSafeNameByte(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '.' || c == '_' || c == '-' || c == '+'
}

func quoteByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return "a non-ASCII or control byte"
	}
	return "'" + string(c) + "'"
}

// patternLen returns the length of the counter pattern at name[i] ('%'), or 0 when it is not one:
// "%%", "%d", "%Nd", "%0Nd" (N at most two digits) and, for numbered names, "%v".
func patternLen(name string, i int, kind nameKind) int {
	j := i + 1
	if j >= len(name) {
		return 0
	}
	if name[j] == '%' {
		return 2
	}
	if name[j] == 'v' {
		return 2
	}
	start := j
	for j < len(name) && name[j] >= '0' && name[j] <= '9' {
		j++
	}
	if j-start > 2 || j >= len(name) || name[j] != 'd' {
		return 0
	}
	return j + 1 - i
}

// dashIdentifiers are the identifiers the DASH muxer substitutes in segment name templates.
var dashIdentifiers = map[string]bool{"RepresentationID": true, "Number": true, "Bandwidth": true, "Time": true, "ext": true}

// dashIdentifierIndex is dashIdentifiers for lookups.
var dashIdentifierIndex = newStrTable(dashIdentifiers)

// templateLen returns the length of the DASH template at name[i] ('$'): "$Number$",
// "$Number%05d$", "$$"; 0 when it is not one.
func templateLen(name string, i int) int {
	end := strings.IndexByte(name[i+1:], '$')
	if end < 0 {
		return 0
	}
	body := name[i+1 : i+1+end]
	if body == "" {
		return 2
	}
	id, format, hasFormat := strings.Cut(body, "%")
	if !dashIdentifierIndex.get(id) {
		return 0
	}
	if hasFormat {
		f := "%" + format
		if patternLen(f, 0, nameNumbered) != len(f) || f == "%%" || f == "%v" {
			return 0
		}
	}
	return end + 2
}

// isNumbered tells a name holding a frame or segment counter from a plain one.
func isNumbered(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] != '%' {
			continue
		}
		n := patternLen(name, i, nameNumbered)
		if n == 0 {
			continue
		}
		if name[i+1] != '%' && name[i+1] != 'v' {
			return true
		}
		i += n - 1
	}
	return false
}

// expandNumbered is the name FFmpeg's av_get_frame_filename makes of a counter pattern for
// frame number n: every %d, %Nd and %0Nd is n padded with zeros to N digits, %% is '%'.
func expandNumbered(pattern string, n int) string {
	var b strings.Builder
	num := strconv.Itoa(n)
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		l := patternLen(pattern, i, nameNumbered)
		switch {
		case l == 0:
			b.WriteByte(c)
			continue
		case pattern[i+1] == '%':
			b.WriteByte('%')
		case pattern[i+1] == 'v':
			b.WriteString(pattern[i : i+2])
		default:
			// FFmpeg pads with zeros whether or not the width starts with 0 ("%0*d").
			width, _ := strconv.Atoi(pattern[i+1 : i+l-1])
			for k := len(num); k < width; k++ {
				b.WriteByte('0')
			}
			b.WriteString(num)
		}
		i += l - 1
	}
	return b.String()
}

// extOf returns the lower-case extension of a name without the dot, "" when there is none.
func extOf(name string) string {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || dot == len(name)-1 {
		return ""
	}
	return strings.ToLower(name[dot+1:])
}

func pathErr(flag, value, format string, a ...any) *Error {
	return newError(layerPaths, flag, value, format, a...)
}

// checkOutputName checks one output of the command: a bare name or a numbered pattern.
func checkOutputName(name string) *Error {
	if why := checkName(name, nameNumbered); why != "" {
		return pathErr("", name, "output %q %s", name, why)
	}
	return nil
}

// checkOverwrites runs once every input is known: no output and no side file may replace an
// input, and no two outputs may share a name.
func (st *state) checkOverwrites() *Error {
	for _, o := range st.outputs {
		if st.isInputName(o.name) {
			return pathErr("", o.name, "output %q would overwrite input %q", o.name, o.name)
		}
	}
	for _, f := range st.sideFiles {
		if st.isInputName(f.name) {
			return pathErr(f.flag, f.name, "%s %q would overwrite input %q", f.what.String(), f.name, f.name)
		}
	}
	return nil
}

// checkWrittenName checks a file name written through an option (an HLS segment pattern, a
// segment list, a filter's stats file) and records it as a side file of the plan.
// The overwrite check waits for the end of the command, when every input is known.
func (st *state) checkWrittenName(flag string, what subject, name string, kind nameKind) *Error {
	if why := checkName(name, kind); why != "" {
		return pathErr(flag, name, "%s %q %s", what.String(), name, why)
	}
	st.sideFiles = append(st.sideFiles, sideFile{flag: flag, what: what, name: name})
	return nil
}

type sideFile struct {
	flag string
	what subject
	name string
}

// subject is what a checked name is for, in a refusal's words: the parts of "-x value" or
// "filter f option k", joined only when a message needs them. Most names pass, and building
// the words for each was about 0.15 allocations a validation, each costing hundreds of
// nanoseconds under WASM.
type subject [4]string

func (s *subject) String() string { return s[0] + s[1] + s[2] + s[3] }

// checkReadName checks a file name read through an option or a filter: a bare name (layer
// paths); one that is not staged yet is a required input.
func (st *state) checkReadName(layer, flag string, what subject, name string) *Error {
	if why := checkName(name, namePlain); why != "" {
		return pathErr(flag, name, "%s %q %s", what.String(), name, why)
	}
	if _, ok := st.opts.Inputs[name]; !ok {
		st.require(name)
	}
	return nil
}

// checkRelativeURL checks a value a muxer writes into its playlists as the start of each
// segment's URL (-hls_base_url). A player resolves it against the playlist's own URL, so only a
// relative name keeps it there: a scheme (file:, data:, http:) or a host ("//host") sends it
// elsewhere, a leading '/' to the root of the server and ".." up from the playlist. Empty is
// FFmpeg's default, no prefix.
func checkRelativeURL(flag, v string) *Error {
	why := ""
	switch {
	case strings.IndexByte(v, ':') >= 0:
		if why = checkURLHost(v, nil); why == "" {
			why = "has a scheme or a ':'"
		}
	case v != "" && v[0] == '/':
		why = "starts with '/'"
	case strings.Contains(v, "//"):
		why = `contains "//"`
	case strings.Contains(v, ".."):
		why = `contains ".."`
	default:
		for i := 0; i < len(v); i++ {
			if c := v[i]; !isSafeNameByte(c) && c != '/' {
				why = "contains " + quoteByte(c) + ": only letters, digits, '.', '_', '-', '+' and '/' are allowed"
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return pathErr(flag, v, "%s value %q is not allowed: it %s; it must be a relative name (no scheme, no leading '/', no \"..\", no \"//\")", flag, v, why)
}
