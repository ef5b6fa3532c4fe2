package service

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces what a read must not echo: the values of a URL's query and its user
// information, where presigned URLs (S3's X-Amz-Signature, a CDN's token) carry their secret.
const Redacted = "REDACTED"

// redactURL hides the query values and user information of an http(s) URL; other strings are
// returned as they are. It reports whether it changed anything.
func redactURL(s string) (string, bool) {
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		return s, false
	}
	u, err := url.Parse(s)
	if err != nil || (u.RawQuery == "" && u.User == nil) {
		return s, false
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{Redacted}
		}
		u.RawQuery = q.Encode()
	}
	return u.String(), true
}

// commandURL finds the URLs of a command line.
var commandURL = regexp.MustCompile(`https?://[^\s'"]+`)

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
			changed := false
			s := commandURL.ReplaceAllStringFunc(x, func(u string) string {
				r, ok := redactURL(u)
				changed = changed || ok
				return r
			})
			return s, changed
		}
		return redactURL(x)
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
