package validator

import (
	"strconv"
	"unicode/utf8"
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
	return &Error{Layer: layerSyntax, Value: value, Message: sprintf(format, a...)}
}

// split splits a command into words like a POSIX shell (single quotes, double quotes, backslash
// escapes) and rejects operators, expansions, comments and control characters.
func split(command string) ([]string, *Error) {
	if len(command) > MaxCommandBytes {
		return nil, syntaxErr("", "command is %d bytes, over the %d byte limit", len(command), MaxCommandBytes)
	}
	if !utf8.ValidString(command) {
		return nil, syntaxErr("", "command is not valid UTF-8")
	}
	for i := 0; i < len(command); i++ {
		c := command[i]
		if (c < 0x20 && c != '\t') || c == 0x7f {
			if c == '\n' || c == '\r' {
				return nil, syntaxErr("", "newline is not allowed: a command is one line")
			}
			return nil, syntaxErr("", "control character %s is not allowed", strconv.QuoteRune(rune(c)))
		}
	}

	words := make([]string, 0, 32)
	var buf []byte
	inWord := false
	// A word without quotes or escapes is a substring of the command and is not copied.
	verbatim, start := true, 0
	s := command
	for i := 0; i < len(s); {
		c := s[i]
		if !inWord {
			start = i
		}
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				if verbatim {
					words = append(words, s[start:i])
				} else {
					words = append(words, string(buf))
				}
				buf = buf[:0]
				inWord = false
				verbatim = true
				if len(words) > MaxArgs+1 {
					return nil, syntaxErr("", "command has more than %d arguments", MaxArgs)
				}
			}
			i++
		case c == '\'':
			if verbatim {
				buf, verbatim = append(buf[:0], s[start:i]...), false
			}
			j := indexByteFrom(s, '\'', i+1)
			if j < 0 {
				return nil, syntaxErr("", "unterminated single quote")
			}
			buf = append(buf, s[i+1:j]...)
			inWord = true
			i = j + 1
		case c == '"':
			if verbatim {
				buf, verbatim = append(buf[:0], s[start:i]...), false
			}
			i++
			inWord = true
			closed := false
			for i < len(s) {
				d := s[i]
				if d == '"' {
					closed = true
					i++
					break
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
		case c == '\\':
			if i+1 >= len(s) {
				return nil, syntaxErr("\\", "trailing backslash")
			}
			if verbatim {
				buf, verbatim = append(buf[:0], s[start:i]...), false
			}
			buf = append(buf, s[i+1])
			inWord = true
			i += 2
		case c == ';' || c == '|' || c == '&' || c == '>' || c == '<' || c == '(' || c == ')':
			op := string(c)
			if i+1 < len(s) && (s[i+1] == c || (c == '>' && s[i+1] == '&') || (c == '|' && s[i+1] == '&')) {
				op = s[i : i+2]
			}
			return nil, syntaxErr(op, "shell operator %q is not allowed", op)
		case c == '`':
			return nil, syntaxErr("`", "shell command substitution \"`\" is not allowed")
		case c == '$':
			if e := checkDollar(s, i); e != nil {
				return nil, e
			}
			if !verbatim {
				buf = append(buf, c)
			}
			inWord = true
			i++
		case c == '#' && !inWord:
			return nil, syntaxErr("#", "shell comment \"#\" is not allowed")
		case c == '~' && !inWord:
			return nil, syntaxErr("~", "shell tilde expansion \"~\" is not allowed")
		default:
			if !verbatim {
				buf = append(buf, c)
			}
			inWord = true
			i++
		}
	}
	if inWord {
		if verbatim {
			words = append(words, s[start:])
		} else {
			words = append(words, string(buf))
		}
	}
	if len(words) == 0 {
		return nil, syntaxErr("", "command is empty")
	}
	if words[0] != "ffmpeg" {
		return nil, syntaxErr(words[0], "command must start with ffmpeg, not %q", words[0])
	}
	if len(words)-1 > MaxArgs {
		return nil, syntaxErr("", "command has more than %d arguments", MaxArgs)
	}
	return words[1:], nil
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

func indexByteFrom(s string, c byte, from int) int {
	for j := from; j < len(s); j++ {
		if s[j] == c {
			return j
		}
	}
	return -1
}
