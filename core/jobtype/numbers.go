package jobtype

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// integralNumbers rewrites each number of a JSON document whose value is a whole number but is
// written with a fraction or an exponent (480.0, 4.8e2) in plain decimal (480), leaving every
// other byte as it is. JSON has no integer type, so 480.0 is the integer 480 to JSON Schema (and
// to a preset's integer variable); encoding/json would refuse it for an int field. A document
// that is not JSON comes back as it is, for the decoder to say what is wrong with it.
func integralNumbers(body []byte) []byte {
	// Only valid JSON is rewritten: the decoder's message for one that is not names a byte
	// offset, which must be the client's, not the rewrite's.
	if !hasFraction(body) || !json.Valid(body) {
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out []byte
	last := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		n, ok := tok.(json.Number)
		if !ok || !strings.ContainsAny(string(n), ".eE") {
			continue
		}
		if whole := wholeNumber(string(n)); whole != "" {
			end := int(dec.InputOffset())
			out = append(append(out, body[last:end-len(n)]...), whole...)
			last = end
		}
	}
	if out == nil {
		return body
	}
	return append(out, body[last:]...)
}

// wholeNumber is the plain decimal of a JSON number literal whose value is a whole number of at
// most 15 digits (exact in a float64, as JSON readers take numbers), or "" for any other. It
// reads the digits rather than a float, which would round 4503599627370496.5 to a whole number.
func wholeNumber(lit string) string {
	sign := ""
	if strings.HasPrefix(lit, "-") {
		sign, lit = "-", lit[1:]
	}
	exp := 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || e > 1000 || e < -1000 {
			return ""
		}
		exp, lit = e, lit[:i]
	}
	digits := lit
	if i := strings.IndexByte(lit, '.'); i >= 0 {
		digits = lit[:i] + lit[i+1:]
		exp -= len(lit) - i - 1
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = strings.TrimLeft(trimmed, "0")
	switch {
	case digits == "":
		return "0"
	case exp < 0 || len(digits)+exp > 15:
		return ""
	}
	return sign + digits + strings.Repeat("0", exp)
}

// hasFraction says whether a number of the document may be written with a fraction or an
// exponent: a '.', or an 'e' or 'E' after a digit, outside strings. Most bodies have none, and
// this pass is much cheaper than the decoder's tokens.
func hasFraction(body []byte) bool {
	inString := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '.':
			return true
		case (c == 'e' || c == 'E') && i > 0 && body[i-1] >= '0' && body[i-1] <= '9':
			return true
		}
	}
	return false
}
