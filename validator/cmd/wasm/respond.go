package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/mediajobs/mediajobs/validator"
)

// MaxRequest bounds a request. It is far above any real command with its inputs (inline content
// is counted by size, not carried) and keeps a confused host from growing memory without end.
const MaxRequest = 1 << 20

// request is the JSON the host sends to validate.
type request struct {
	Command *string           `json:"command"`
	Options validator.Options `json:"options"`
	// Inputs are a job's inputs as POST /jobs takes them (URL strings, {url}, {content}); they
	// are added to Options.Inputs.
	Inputs json.RawMessage `json:"inputs"`
}

// respond decodes one request and returns json.Marshal of the validator's Result. It is the whole
// of the module's behaviour apart from memory handling, kept free of the ABI so it is tested
// natively.
func respond(req []byte) (out []byte, err error) {
	var r request
	dec := json.NewDecoder(bytes.NewReader(req))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode request: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode request: data after the JSON object")
	}
	if r.Command == nil {
		return nil, errors.New(`decode request: "command" is missing`)
	}
	inputs, err := validator.ParseJobInputs(r.Inputs)
	if err != nil {
		// A malformed inputs map is the caller's mistake, answered like an invalid command.
		return json.Marshal(validator.Result{Valid: false, Error: err.Error()})
	}
	if len(inputs) > 0 && r.Options.Inputs == nil {
		r.Options.Inputs = make(map[string]validator.Input, len(inputs))
	}
	for name, in := range inputs {
		r.Options.Inputs[name] = in
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("validator panicked on %q: %v", *r.Command, p)
		}
	}()
	return validator.AppendValidateJSON(nil, *r.Command, r.Options), nil
}

// checkRequest answers check: command is the command's bytes, rest the options in the compact
// form of validator.AppendOptions, the JSON object {"options", "inputs"}, or empty. The command is read in place, without a copy: nothing of it
// outlives the call, since the answer is appended to dst before returning.
func checkRequest(dst, command, rest []byte) (out []byte, err error) {
	var opts validator.Options
	if validator.IsCompactOptions(rest) {
		if opts, err = validator.DecodeOptions(rest); err != nil {
			return nil, err
		}
	} else if len(rest) > 0 {
		var r struct {
			Options validator.Options `json:"options"`
			Inputs  json.RawMessage   `json:"inputs"`
		}
		dec := json.NewDecoder(bytes.NewReader(rest))
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("decode options: %w", err)
		}
		if dec.More() {
			return nil, errors.New("decode options: data after the JSON object")
		}
		inputs, err := validator.ParseJobInputs(r.Inputs)
		if err != nil {
			res := validator.Result{Valid: false, Error: err.Error()}
			return res.AppendJSON(dst), nil
		}
		opts = r.Options
		if len(inputs) > 0 && opts.Inputs == nil {
			opts.Inputs = make(map[string]validator.Input, len(inputs))
		}
		for name, in := range inputs {
			opts.Inputs[name] = in
		}
	}
	cmd := unsafe.String(unsafe.SliceData(command), len(command))
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("validator panicked on %q: %v", cmd, p)
		}
	}()
	return checker.AppendValidateJSON(dst, cmd, opts), nil
}

// checker answers check: the module runs one call at a time, so one Checker is all it needs, and
// it costs less than the pool behind validator.AppendValidateJSON.
var checker validator.Checker
