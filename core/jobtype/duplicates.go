package jobtype

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/problem"
)

// CheckDuplicateKeys refuses a JSON document in which an object names a key twice.
// encoding/json keeps the last value silently, so {"params":{"command":"a"},"params":{...}}
// would run a request other than the one a reviewer (or a proxy's filter) read. The message
// names the key by its path (params.command, jobs[2].type). A document that is not JSON is
// left to the decoder, which says what is wrong with it.
func CheckDuplicateKeys(body []byte) error {
	return checkKeysAt("", body, nil)
}

// checkKeysAt is CheckDuplicateKeys, the keys named by their path under prefix, that also holds
// the keys of each object decoded into a struct of t (nil: none) to the struct's own spelling. encoding/json matches a key to a field
// without regard to case, Unicode's folding included ("ſteps" and "STEPS" are steps), so such a
// key would set the field while every reader of the stored JSON, which matches exactly, saw
// another: it is refused, naming the field's spelling. Two keys that are one to the decoder are
// a duplicate.
func checkKeysAt(prefix string, body []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := walkValue(dec, prefix, t)
	var dup *duplicateKey
	if errors.As(err, &dup) {
		return problem.Reject(problem.CodeValidation, "duplicate key %q in the JSON body: each key may appear once (keys that differ in case only are one key)", dup.path)
	}
	var spelt *misspeltKey
	if errors.As(err, &spelt) {
		return problem.Reject(problem.CodeValidation, "key %q: keys are case-sensitive; write %q", spelt.path, spelt.want)
	}
	return nil
}

type duplicateKey struct{ path string }

func (d *duplicateKey) Error() string { return "duplicate key " + d.path }

type misspeltKey struct{ path, want string }

func (m *misspeltKey) Error() string { return "key " + m.path + " is spelt otherwise than " + m.want }

// walkValue reads one value from dec, checking every object in it; t is the Go type the value
// decodes into, where known.
func walkValue(dec *json.Decoder, path string, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]structField
		var elem reflect.Type
		switch {
		case t == nil:
		case t.Kind() == reflect.Struct:
			fields = fieldsOf(t)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			child := key
			if path != "" {
				child = path + "." + key
			}
			folded := foldKey(key)
			if seen[folded] {
				return &duplicateKey{path: child}
			}
			seen[folded] = true
			next := elem
			if fields != nil {
				f, ok := fields[folded]
				if ok && f.name != key && !f.anyCase {
					return &misspeltKey{path: child, want: f.name}
				}
				next = f.typ
			}
			if err := walkValue(dec, child, next); err != nil {
				return err
			}
		}
		_, err := dec.Token() // }
		return err
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t != rawMessageType {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, path+"["+strconv.Itoa(i)+"]", elem); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ]
		return err
	}
	return nil
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// structField is a field encoding/json decodes a key into: its key as spelt, its type, and
// whether any spelling is its own (a field whose tag names no key).
type structField struct {
	name    string
	typ     reflect.Type
	anyCase bool
}

var structFields sync.Map // reflect.Type -> map[string]structField, by folded key

// fieldsOf is the fields of struct type t by folded key, those of embedded structs included,
// as encoding/json reads them.
func fieldsOf(t reflect.Type) map[string]structField {
	if m, ok := structFields.Load(t); ok {
		return m.(map[string]structField)
	}
	m := map[string]structField{}
	addFields(m, t, 0)
	structFields.Store(t, m)
	return m
}

func addFields(m map[string]structField, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct && depth < 8 {
			addFields(m, ft, depth+1)
			continue
		}
		if !f.IsExported() {
			continue
		}
		exact := name != "" // a field without a name in its tag takes its key in any case
		if name == "" {
			name = f.Name
		}
		if _, ok := m[foldKey(name)]; !ok || depth == 0 {
			m[foldKey(name)] = structField{name: name, typ: f.Type, anyCase: !exact}
		}
	}
}

// foldKey is key with every character replaced by one of its case-folding orbit, the same for
// the whole orbit (the ASCII lower case where the orbit has an ASCII letter: "ſ" and "S" are
// "s", the Kelvin sign "k"), so two keys encoding/json takes for one have the same foldKey.
func foldKey(key string) string {
	simple := true
	for i := 0; i < len(key); i++ {
		if c := key[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			simple = false
			break
		}
	}
	if simple {
		return key
	}
	var b strings.Builder
	for _, r := range key {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return foldRune(f)
		}
		least = min(least, f)
	}
	return least
}
