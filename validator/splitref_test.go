package validator

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// splitByteByByte is split as it was first written, one byte per step: the reference the
// table-driven split is held to.
func splitByteByByte(command string) ([]string, *Error) {
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

// FuzzSplitReference holds split to splitByteByByte: the same words, or the same error.
func FuzzSplitReference(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.Command)
	}
	for _, c := range []string{
		`ffmpeg a#b ~c`, `ffmpeg a~ #`, `ffmpeg "a\\\$x\q" b`, `ffmpeg 'x'y"z"\ w`, `ffmpeg é 'ü' "ß"`,
		`ffmpeg a$`, `ffmpeg "$"`, `ffmpeg "a$b"`, `ffmpeg a >&b`, `ffmpeg "a` + "`" + `b"`, "ffmpeg \t'a'\t\"b\"",
		"ffmpeg" + strings.Repeat(" a", MaxArgs+1), "ffmpeg" + strings.Repeat(" a", MaxArgs),
		// Control characters, which split refuses where it meets them, before or after another
		// error, in words, quotes and escapes.
		"ffmpeg 'a\nb'", "ffmpeg \"a\x01\" b", "ffmpeg a\\\x7f", "ffmpeg a; b\r", "ffmpeg 'x\x00",
		"ffmpeg \x1b$(id)", "ffmpeg \"x\tb\"\n", "\x00ffmpeg", "ffmpeg a\x00b 'c", "ffmpeg a\tb",
	} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, command string) {
		got, gotErr := split(command)
		want, wantErr := splitByteByByte(command)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("split(%q) words (-reference +got):\n%s", command, diff)
		}
		if diff := cmp.Diff(wantErr, gotErr); diff != "" {
			t.Fatalf("split(%q) error (-reference +got):\n%s", command, diff)
		}
		// In an arena, as AppendValidateJSON splits, the same words.
		arena := make([]byte, 0, len(command))
		inArena, inArenaErr := splitAppend(nil, arena, command)
		if diff := cmp.Diff(want, inArena); diff != "" {
			t.Fatalf("splitAppend(%q) in an arena, words (-reference +got):\n%s", command, diff)
		}
		if diff := cmp.Diff(wantErr, inArenaErr); diff != "" {
			t.Fatalf("splitAppend(%q) in an arena, error (-reference +got):\n%s", command, diff)
		}
	})
}

func indexByteFrom(s string, c byte, from int) int {
	for j := from; j < len(s); j++ {
		if s[j] == c {
			return j
		}
	}
	return -1
}
