package validator

import (
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Layer 1: syntax. The command arrives as one string, written the way a user types it in a
// shell, but no shell ever runs it: it is split here exactly once, the way a POSIX shell splits
// words, and the words go to FFmpeg as its argv. Anything a shell would treat as an operator or an
// expansion is rejected rather than interpreted, so the words we check are the words FFmpeg gets
// whether or not someone later pastes the command into a real shell.

const (
	// MaxCommandBytes caps the length of a command.
	MaxCommandBytes = 16 << 10
	// MaxArgs caps the number of words after "ffmpeg".
	MaxArgs = 512
)

const layerSyntax = "syntax"

func syntaxErr(value, format string, a ...any) *Error {
	return newError(layerSyntax, "", value, format, a...)
}

// split splits a command into words like a POSIX shell (single quotes, double quotes, backslash
// escapes) and rejects operators, expansions, comments and control characters.
func split(command string) ([]string, *Error) {
	return splitAppend(make([]string, 0, 32), nil, command)
}

// Byte classes of the splitter. Most bytes of a command are sPlain, and a run of them is taken in
// one step: under WASM, where a byte-by-byte switch costs several times what it does natively,
// the table cuts the splitter's time by more than half.
const (
	sPlain    = iota // part of a word
	sWordOnly        // '#', '~': part of a word, refused at its start
	sBlank           // ' ', '\t': ends a word
	sSingle          // '\''
	sDouble          // '"'
	sBackslash
	sOperator // ; | & > < ( )
	sBacktick
	sDollar
	sControl // a control character other than '\t', or DEL
)

var splitClass = func() (t [256]uint8) {
	t[' '], t['\t'] = sBlank, sBlank
	t['\''], t['"'], t['\\'] = sSingle, sDouble, sBackslash
	for _, c := range []byte(";|&><()") {
		t[c] = sOperator
	}
	t['`'], t['$'] = sBacktick, sDollar
	t['#'], t['~'] = sWordOnly, sWordOnly
	for c := range 0x20 {
		if c != '\t' {
			t[c] = sControl
		}
	}
	t[0x7f] = sControl
	return t
}()

// inDoubleQuotes marks the bytes that mean something inside double quotes, and the control
// characters, refused wherever they are.
var inDoubleQuotes = func() (t [256]bool) {
	t['"'], t['\\'], t['`'], t['$'] = true, true, true, true
	for c := range splitClass {
		t[c] = t[c] || splitClass[c] == sControl
	}
	return t
}()

// inSingleQuotes marks the bytes that end a single-quoted run: the closing quote and the control
// characters.
var inSingleQuotes = func() (t [256]bool) {
	t['\''] = true
	for c := range splitClass {
		t[c] = t[c] || splitClass[c] == sControl
	}
	return t
}()

// splitAppend is split appending the words to words, so that a caller validating many commands
// can reuse the slice. With an arena, a slice whose capacity is at least len(command), the words
// that are not substrings of the command (quoted or escaped ones) are written there and are
// its bytes rather than copies: no allocation, but they are valid only until the arena is
// written again. Unquoting never makes the words longer than the command, so the arena is
// never outgrown.
func splitAppend(words []string, arena []byte, command string) ([]string, *Error) {
	if len(command) > MaxCommandBytes {
		return nil, syntaxErr("", "command is %d bytes, over the %d byte limit", len(command), MaxCommandBytes)
	}
	if !utf8.ValidString(command) {
		return nil, syntaxErr("", "command is not valid UTF-8")
	}
	words, err := splitWords(words, arena, command)
	if err != nil {
		// A control character anywhere is the error, even after the one splitWords refused.
		if e := controlErr(command); e != nil {
			return nil, e
		}
	}
	return words, err
}

// errControl is what splitWords returns on a control character; splitAppend replaces it with
// controlErr's error.
var errControl = &Error{Layer: layerSyntax, Message: "control character"}

// controlErr refuses the first control character of s, if it has one.
func controlErr(s string) *Error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; splitClass[c] == sControl {
			if c == '\n' || c == '\r' {
				return syntaxErr("", "newline is not allowed: a command is one line")
			}
			return syntaxErr("", "control character %s is not allowed", strconv.QuoteRune(rune(c)))
		}
	}
	return nil
}

// splitWords is splitAppend after the length and UTF-8 checks. It stops at a control character
// wherever it meets one, in a word or in quotes, rather than looking for them in a pass of its
// own first: that pass made the splitter about a third slower under WASM.
func splitWords(words []string, arena []byte, s string) ([]string, *Error) {
	first := len(words)
	inArena := arena != nil
	buf := arena[:0]
	inWord := false
	// A word without quotes or escapes is a substring of the command and is not copied.
	verbatim, start := true, 0
	for i := 0; i < len(s); {
		c := s[i]
		if !inWord {
			start = i
			if splitClass[c] == sPlain {
				// Most words are plain, taken here in one step: the switch below costs
				// several indirect jumps a byte class under WASM.
				j := plainEnd(s, i+1)
				if j < len(s) && splitClass[s[j]] != sBlank {
					inWord = true // a quote, an escape or an operator follows: go on below
					i = j
					continue
				}
				words = append(words, s[i:j])
				if j < len(s) && len(words)-first > MaxArgs+1 {
					return nil, syntaxErr("", "command has more than %d arguments", MaxArgs)
				}
				i = j
				continue
			}
		}
		switch splitClass[c] {
		case sWordOnly:
			if !inWord {
				if c == '#' {
					return nil, syntaxErr("#", "shell comment \"#\" is not allowed")
				}
				return nil, syntaxErr("~", "shell tilde expansion \"~\" is not allowed")
			}
			fallthrough
		case sPlain:
			j := plainEnd(s, i+1)
			if !verbatim {
				buf = append(buf, s[i:j]...)
			}
			inWord = true
			i = j
		case sBlank:
			if inWord {
				if verbatim {
					words = append(words, s[start:i])
				} else {
					words = append(words, takeWord(&buf, inArena))
				}
				buf = buf[:0]
				inWord = false
				verbatim = true
				if len(words)-first > MaxArgs+1 {
					return nil, syntaxErr("", "command has more than %d arguments", MaxArgs)
				}
			}
			i++
		case sSingle:
			if verbatim {
				buf, verbatim = append(buf[:0], s[start:i]...), false
			}
			j := i + 1
			for j < len(s) && !inSingleQuotes[s[j]] {
				j++
			}
			if j == len(s) {
				return nil, syntaxErr("", "unterminated single quote")
			}
			if s[j] != '\'' {
				return nil, errControl
			}
			buf = append(buf, s[i+1:j]...)
			inWord = true
			i = j + 1
		case sDouble:
			if verbatim {
				buf, verbatim = append(buf[:0], s[start:i]...), false
			}
			i++
			inWord = true
			closed := false
			for i < len(s) {
				d := s[i]
				if !inDoubleQuotes[d] {
					j := i + 1
					for j < len(s) && !inDoubleQuotes[s[j]] {
						j++
					}
					buf = append(buf, s[i:j]...)
					i = j
					continue
				}
				if d == '"' {
					closed = true
					i++
					break
				}
				if splitClass[d] == sControl {
					return nil, errControl
				}
				if d == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case '$', '`', '"', '\\':
						buf = append(buf, s[i+1])
						i += 2
						continue
					}
					buf = append(buf, d)
					i++
					continue
				}
				if d == '`' {
					return nil, syntaxErr("`", "shell command substitution \"`\" is not allowed")
				}
				if d == '$' && i+1 < len(s) && s[i+1] != '"' && s[i+1] != '\'' {
					if e := checkDollar(s, i); e != nil {
						return nil, e
					}
				}
				buf = append(buf, d)
				i++
			}
			if !closed {
				return nil, syntaxErr("", "unterminated double quote")
			}
		case sBackslash:
			if i+1 >= len(s) {
				return nil, syntaxErr("\\", "trailing backslash")
			}
			if splitClass[s[i+1]] == sControl {
				return nil, errControl
			}
			if verbatim {
				buf, verbatim = append(buf[:0], s[start:i]...), false
			}
			buf = append(buf, s[i+1])
			inWord = true
			i += 2
		case sOperator:
			op := string(c)
			if i+1 < len(s) && (s[i+1] == c || (c == '>' && s[i+1] == '&') || (c == '|' && s[i+1] == '&')) {
				op = s[i : i+2]
			}
			return nil, syntaxErr(op, "shell operator %q is not allowed", op)
		case sBacktick:
			return nil, syntaxErr("`", "shell command substitution \"`\" is not allowed")
		case sDollar:
			if e := checkDollar(s, i); e != nil {
				return nil, e
			}
			if !verbatim {
				buf = append(buf, c)
			}
			inWord = true
			i++
		case sControl:
			return nil, errControl
		}
	}
	if inWord {
		if verbatim {
			words = append(words, s[start:])
		} else {
			words = append(words, takeWord(&buf, inArena))
		}
	}
	if len(words) == first {
		return nil, syntaxErr("", "command is empty")
	}
	if words[first] != "ffmpeg" {
		return nil, syntaxErr(words[first], "command must start with ffmpeg, not %q", words[first])
	}
	if len(words)-first-1 > MaxArgs {
		return nil, syntaxErr("", "command has more than %d arguments", MaxArgs)
	}
	return words[first+1:], nil
}

// takeWord returns the word in buf: a copy, or in an arena its bytes, buf going on after them.
func takeWord(buf *[]byte, inArena bool) string {
	if !inArena {
		return string(*buf)
	}
	b := *buf
	if len(b) == 0 {
		return ""
	}
	*buf = b[len(b):]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// plainEnd returns the end of the run of word bytes (sPlain, sWordOnly) that starts at s[j].
// It takes four bytes a step while it can: the classes of word bytes are 0 and 1, so four are
// all word bytes when the OR of their classes is at most 1.
func plainEnd(s string, j int) int {
	for len(s)-j >= 4 {
		w := s[j : j+4]
		if splitClass[w[0]]|splitClass[w[1]]|splitClass[w[2]]|splitClass[w[3]] > sWordOnly {
			break
		}
		j += 4
	}
	for j < len(s) && splitClass[s[j]] <= sWordOnly {
		j++
	}
	return j
}

// checkDollar rejects a "$" that a shell would expand: $VAR, ${...}, $(...), $1, $$, $? and the
// like. A "$" followed by anything else is literal to a shell too.
func checkDollar(s string, i int) *Error {
	if i+1 >= len(s) {
		return nil
	}
	n := s[i+1]
	switch {
	case n == '(':
		return syntaxErr("$(", "shell command substitution \"$(\" is not allowed")
	case n == '{':
		return syntaxErr("${", "shell parameter expansion \"${\" is not allowed")
	case n == '_' || n == '?' || n == '$' || n == '!' || n == '#' || n == '*' || n == '@' || n == '-' ||
		(n >= 'a' && n <= 'z') || (n >= 'A' && n <= 'Z') || (n >= '0' && n <= '9'):
		end := i + 2
		for end < len(s) && isNameByte(s[end]) {
			end++
		}
		v := s[i:end]
		return syntaxErr(v, "shell expansion %q is not allowed", v)
	case n == '\'' || n == '"':
		return syntaxErr("$"+string(n), "shell quoting \"$%c\" is not allowed", n)
	}
	return nil
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
