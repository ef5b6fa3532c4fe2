package jobtype

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/problem"
)

// CheckUnicode refuses a JSON body that is not UTF-8 text, or that escapes half a surrogate
// pair: encoding/json would store U+FFFD in its place, so a name or an inline input would be
// saved other than as sent. The REST API and the MCP server both hold their bodies to it.
func CheckUnicode(body []byte) error {
	if at := notUnicode(body); at >= 0 {
		return problem.Reject(problem.CodeValidation, "the request body is not UTF-8 text at byte %d (a byte that is not UTF-8, or a \\u escape of half a surrogate pair)", at)
	}
	return nil
}

// notUnicode is the offset of the first byte of body that is not UTF-8, or of a \u escape of
// a surrogate that is not one of a pair (\ud83d\ude00 is one character, \ud800 alone none);
// -1 when there is none. A backslash stands only in JSON strings, where it starts an escape.
func notUnicode(body []byte) int {
	if !utf8.Valid(body) {
		for i := 0; i < len(body); {
			r, n := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && n <= 1 {
				return i
			}
			i += n
		}
	}
	escape := func(i int) (rune, bool) { // the \uXXXX at i
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' || i+1 >= len(body) {
			continue
		}
		if body[i+1] != 'u' {
			i++ // \\, \" and the like
			continue
		}
		r, ok := escape(i)
		switch {
		case !ok:
			i++ // not JSON: the decoder says so
		case utf16.IsSurrogate(r) && r < 0xdc00:
			low, ok := escape(i + 6)
			if !ok || low < 0xdc00 || low > 0xdfff {
				return i
			}
			i += 11
		case utf16.IsSurrogate(r):
			return i // a low half without its high one
		default:
			i += 5
		}
	}
	return -1
}
