package validator

import "unicode/utf8"

// AppendJSON appends the JSON of r to dst: byte for byte what json.Marshal(r) gives, without
// reflection. The WASM build answers with it, where encoding/json costs more than validating;
// a test and a fuzz target hold it to json.Marshal.
func (r *Result) AppendJSON(dst []byte) []byte {
	if r.Valid {
		dst = append(dst, `{"valid":true`...)
	} else {
		dst = append(dst, `{"valid":false`...)
	}
	if len(r.Args) > 0 {
		dst = appendJSONStrings(append(dst, `,"args":`...), r.Args)
	}
	if r.InferredOutputFormat != "" {
		dst = appendJSONString(append(dst, `,"inferredOutputFormat":`...), r.InferredOutputFormat)
	}
	if len(r.RequiredInputs) > 0 {
		dst = appendJSONStrings(append(dst, `,"requiredInputs":`...), r.RequiredInputs)
	}
	if r.Error != "" {
		dst = appendJSONString(append(dst, `,"error":`...), r.Error)
	}
	return append(dst, '}')
}

func appendJSONStrings(dst []byte, list []string) []byte {
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// jsonEscape marks, with 1, the bytes appendJSONString does not copy as they are: controls,
// '"', '\\', the HTML-escaped '<', '>' and '&', and non-ASCII bytes (checked for invalid UTF-8,
// U+2028 and U+2029). A table rather than six comparisons a byte, which under WASM made the
// JSON answer about 6% of a validation; numbers rather than booleans, so that four bytes are
// checked with one OR.
var jsonEscape = func() (t [256]uint8) {
	for b := range t {
		if b < 0x20 || b >= utf8.RuneSelf {
			t[b] = 1
		}
	}
	t['"'], t['\\'], t['<'], t['>'], t['&'] = 1, 1, 1, 1, 1
	return t
}()

// appendJSONString is encoding/json's appendString with HTML escaping, as json.Marshal does it:
// '<', '>' and '&' as \u003c, \u003e and \u0026, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Four bytes a step while they are plain: under WASM each turn of a loop costs an
		// indirect jump, and one byte a step made the strings about a fifth slower.
		for len(s)-i >= 4 {
			w := s[i : i+4]
			if jsonEscape[w[0]]|jsonEscape[w[1]]|jsonEscape[w[2]]|jsonEscape[w[3]] != 0 {
				break
			}
			i += 4
		}
		if i == len(s) {
			break
		}
		if jsonEscape[s[i]] == 0 {
			i++
			continue
		}
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
