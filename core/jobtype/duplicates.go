package jobtype

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/mediajobs/mediajobs/core/problem"
)

// CheckDuplicateKeys refuses a JSON document in which an object names a key twice.
// encoding/json keeps the last value silently, so {"params":{"command":"a"},"params":{...}}
// would run a request other than the one a reviewer (or a proxy's filter) read. The message
// names the key by its path (params.command, jobs[2].type). A document that is not JSON is
// left to the decoder, which says what is wrong with it.
func CheckDuplicateKeys(body []byte) error {
	return checkDuplicatesAt("", body)
}

func checkDuplicatesAt(prefix string, body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := walkValue(dec, prefix)
	var dup *duplicateKey
	if errors.As(err, &dup) {
		return problem.Reject(problem.CodeValidation, "duplicate key %q in the JSON body: each key may appear once", dup.path)
	}
	return nil
}

type duplicateKey struct{ path string }

func (d *duplicateKey) Error() string { return "duplicate key " + d.path }

// walkValue reads one value from dec, checking every object in it.
func walkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	switch tok {
	case json.Delim('{'):
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
			if seen[key] {
				return &duplicateKey{path: child}
			}
			seen[key] = true
			if err := walkValue(dec, child); err != nil {
				return err
			}
		}
		_, err := dec.Token() // }
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ]
		return err
	}
	return nil
}
