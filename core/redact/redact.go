// Package redact hides the secrets that URLs carry (a presigned URL's signature, a token in
// the query, user information) wherever the service repeats a URL a user gave: a job's
// inputs, error messages, events, deliveries and logs all go through it.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces each query value and the user information of a URL.
const Redacted = "REDACTED"

// URL hides the query values, the fragment and the user information of an http(s) URL (a URL
// without a host, which no client would fetch, is hidden whole); other strings are returned as
// they are. It reports whether it changed anything.
func URL(s string) (string, bool) {
	scheme, ok := cutScheme(s)
	if !ok {
		return s, false
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return scheme + Redacted, s != scheme+Redacted
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{Redacted}
		}
		u.RawQuery = q.Encode()
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = Redacted, ""
	}
	out := u.String()
	return out, out != s
}

func cutScheme(s string) (string, bool) {
	for _, p := range []string{"https://", "http://"} {
		if strings.HasPrefix(s, p) {
			return p, true
		}
	}
	return "", false
}

// inText finds the URLs in running text or a command line.
var inText = regexp.MustCompile(`https?://[^\s'"<>]+`)

// Text redacts every http(s) URL in s (a message, a command line) and reports whether it
// changed anything.
func Text(s string) (string, bool) {
	if !strings.Contains(s, "://") {
		return s, false
	}
	changed := false
	out := inText.ReplaceAllStringFunc(s, func(u string) string {
		// Punctuation that ends the sentence around a URL is not the URL's.
		trimmed := strings.TrimRight(u, ".,;:!?)]}")
		r, ok := URL(trimmed)
		changed = changed || ok
		return r + u[len(trimmed):]
	})
	return out, changed
}
