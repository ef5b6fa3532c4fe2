package validator

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Options travel to validator.wasm in this compact form rather than as JSON: decoding JSON in
// WASM costs more than validating the command (measured: a staged command at about 11x native
// with JSON options, 5x without). The form is a version byte, then fields of a tag byte and
// their values; a string is its uvarint length and its bytes, an integer a varint.
//
//	'f' OutputFormat   'c' Compute   'a' AssetURLPrefix   't' Timeout
//	'n' an input: its name, its URL, its ContentSize and a byte 1 when Inline
//	'p' one of AllowPrivateNetworks, as its text ("127.0.0.0/8"; "" for the zero Prefix)
const optionsVersion = 1

// AppendOptions appends the compact form of o to dst; DecodeOptions reads it back.
func AppendOptions(dst []byte, o *Options) []byte {
	dst = append(dst, optionsVersion)
	str := func(tag byte, s string) {
		if s != "" {
			dst = appendString(append(dst, tag), s)
		}
	}
	str('f', o.OutputFormat)
	str('c', o.Compute)
	str('a', o.AssetURLPrefix)
	if o.Timeout != 0 {
		dst = binary.AppendVarint(append(dst, 't'), int64(o.Timeout))
	}
	for _, p := range o.AllowPrivateNetworks {
		text := ""
		if p.IsValid() {
			text = p.String()
		}
		dst = appendString(append(dst, 'p'), text)
	}
	for name, in := range o.Inputs {
		dst = appendString(append(dst, 'n'), name)
		dst = appendString(dst, in.URL)
		dst = binary.AppendVarint(dst, int64(in.ContentSize))
		inline := byte(0)
		if in.Inline {
			inline = 1
		}
		dst = append(dst, inline)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// IsCompactOptions tells the compact form from JSON.
func IsCompactOptions(b []byte) bool { return len(b) > 0 && b[0] == optionsVersion }

var errOptions = errors.New("malformed compact options")

// DecodeOptions reads what AppendOptions wrote.
func DecodeOptions(b []byte) (Options, error) {
	var o Options
	if !IsCompactOptions(b) {
		return o, errOptions
	}
	b = b[1:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	num := func() (int, bool) {
		v, k := binary.Varint(b)
		if k <= 0 || int64(int(v)) != v {
			return 0, false
		}
		b = b[k:]
		return int(v), true
	}
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		ok := true
		switch tag {
		case 'f':
			o.OutputFormat, ok = str()
		case 'c':
			o.Compute, ok = str()
		case 'a':
			o.AssetURLPrefix, ok = str()
		case 't':
			o.Timeout, ok = num()
		case 'p':
			var text string
			if text, ok = str(); ok {
				var p netip.Prefix
				if text != "" {
					var err error
					p, err = netip.ParsePrefix(text)
					ok = err == nil
				}
				o.AllowPrivateNetworks = append(o.AllowPrivateNetworks, p)
			}
		case 'n':
			var name string
			var in Input
			if name, ok = str(); ok {
				in.URL, ok = str()
			}
			if ok {
				in.ContentSize, ok = num()
			}
			if ok && len(b) > 0 && b[0] <= 1 {
				in.Inline = b[0] == 1
				b = b[1:]
			} else {
				ok = false
			}
			if ok {
				if o.Inputs == nil {
					o.Inputs = map[string]Input{}
				}
				o.Inputs[name] = in
			}
		default:
			ok = false
		}
		if !ok {
			return Options{}, errOptions
		}
	}
	return o, nil
}
