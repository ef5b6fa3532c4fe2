package destination

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// DefaultPath is the template of a job that names a destination without a path.
const DefaultPath = "{job_id}/{name}"

// MaxPathLen bounds a template, and a key made from one, in bytes (S3's key limit is 1024).
const MaxPathLen = 512

// Placeholders are the names a template may use, in braces.
var Placeholders = []string{"job_id", "name", "ext", "date", "preset"}

// Template is a parsed path template: literal text and placeholders, relative, without "..".
type Template struct {
	raw   string
	parts []part
}

type part struct {
	text        string
	placeholder bool
}

// ParseTemplate parses a job's destination path, which a client writes: it must be relative,
// name only known placeholders, and hold no ".." segment, empty segment, backslash or control
// character. The error names what is wrong; the caller names the field.
func ParseTemplate(s string) (Template, error) {
	switch {
	case s == "":
		return Template{}, fmt.Errorf("is empty; use placeholders such as %s", DefaultPath)
	case len(s) > MaxPathLen:
		return Template{}, fmt.Errorf("is %d bytes; at most %d", len(s), MaxPathLen)
	case strings.HasPrefix(s, "/"):
		return Template{}, fmt.Errorf("%q is absolute; write it relative to the destination's prefix", s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return Template{}, fmt.Errorf("%q holds a control character or a backslash", s)
		}
	}
	for seg := range strings.SplitSeq(s, "/") {
		switch seg {
		case "..", ".":
			return Template{}, fmt.Errorf("%q holds a %q segment", s, seg)
		case "":
			return Template{}, fmt.Errorf("%q holds an empty segment (//) or ends in /", s)
		}
	}
	t := Template{raw: s}
	rest := s
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.parts = append(t.parts, part{text: rest})
			break
		}
		if rest[i] == '}' {
			return Template{}, fmt.Errorf("%q has a } without its {", s)
		}
		if i > 0 {
			t.parts = append(t.parts, part{text: rest[:i]})
		}
		end := strings.IndexAny(rest[i+1:], "{}")
		if end < 0 || rest[i+1+end] != '}' {
			return Template{}, fmt.Errorf("%q has a { without its }", s)
		}
		name := rest[i+1 : i+1+end]
		if !known(name) {
			return Template{}, fmt.Errorf("{%s} is not a placeholder; use {%s}", name, strings.Join(Placeholders, "}, {"))
		}
		t.parts = append(t.parts, part{text: name, placeholder: true})
		rest = rest[i+2+end:]
	}
	if !t.uses("name") {
		// Without {name} every file of a job would land on one key, each overwriting the last.
		return Template{}, fmt.Errorf("%q does not use {name}; each output file needs a key of its own", s)
	}
	return t, nil
}

func known(name string) bool {
	for _, p := range Placeholders {
		if p == name {
			return true
		}
	}
	return false
}

func (t Template) uses(name string) bool {
	for _, p := range t.parts {
		if p.placeholder && p.text == name {
			return true
		}
	}
	return false
}

// String is the template as written.
func (t Template) String() string { return t.raw }

// Vars are the values of a template's placeholders for one file.
type Vars struct {
	JobID string
	// Name is the output file's name as the job wrote it, relative to its work directory
	// (segment files of a stream may be in a subdirectory).
	Name string
	// Preset is the job's preset name; empty for a job without one.
	Preset string
	// Date is the day of {date}, in UTC.
	Date time.Time
}

// Expand returns the key of one file: the template with its placeholders replaced, empty
// segments (an empty {preset}) dropped. {ext} is the name's extension without its dot.
func (t Template) Expand(v Vars) string {
	var b strings.Builder
	for _, p := range t.parts {
		if !p.placeholder {
			b.WriteString(p.text)
			continue
		}
		switch p.text {
		case "job_id":
			b.WriteString(v.JobID)
		case "name":
			b.WriteString(v.Name)
		case "ext":
			b.WriteString(strings.TrimPrefix(path.Ext(v.Name), "."))
		case "date":
			b.WriteString(v.Date.UTC().Format(time.DateOnly))
		case "preset":
			b.WriteString(v.Preset)
		}
	}
	segs := strings.Split(b.String(), "/")
	kept := segs[:0]
	for _, s := range segs {
		// A value never adds a segment that climbs out (names and presets are checked where
		// they are made; this holds even if one were not).
		if s != "" && s != "." && s != ".." {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, "/")
}

// Key is where a file lands in a destination: its prefix, then the expanded template.
func Key(prefix string, t Template, v Vars) string {
	k := t.Expand(v)
	if prefix == "" {
		return k
	}
	return strings.TrimSuffix(prefix, "/") + "/" + k
}

// Request is a job's destination as a client names it: a destination's ID and a path
// template (DefaultPath when empty).
type Request struct {
	ID   string `json:"id"`
	Path string `json:"path,omitempty"`
}
