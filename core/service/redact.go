package service

import (
	"bytes"
	"encoding/json"

	"github.com/mediajobs/mediajobs/core/redact"
)

// Redacted replaces what a read must not echo: the values of a URL's query and its user
// information, where presigned URLs (S3's X-Amz-Signature, a CDN's token) carry their secret.
const Redacted = redact.Redacted

// redactJSON rewrites a request's inputs or params: every string that is an http(s) URL, and
// every URL inside params.command, is redacted. Without anything to hide it returns raw as it
// was, byte for byte.
func redactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !bytes.Contains(raw, []byte("://")) {
		return raw
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return raw
	}
	v, changed := redactValue(v, "")
	if !changed {
		return raw
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // keep & in URLs readable
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return bytes.TrimRight(out.Bytes(), "\n")
}

func redactValue(v any, key string) (any, bool) {
	switch x := v.(type) {
	case string:
		if key == "command" {
			return redact.Text(x)
		}
		return redact.URL(x)
	case map[string]any:
		changed := false
		for k, e := range x {
			r, ok := redactValue(e, k)
			if ok {
				x[k], changed = r, true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, e := range x {
			r, ok := redactValue(e, key)
			if ok {
				x[i], changed = r, true
			}
		}
		return x, changed
	}
	return v, false
}
