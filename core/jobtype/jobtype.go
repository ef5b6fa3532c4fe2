package jobtype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Request is the body of POST /jobs: the same for every type.
type Request struct {
	Type   string          `json:"type"`
	Inputs json.RawMessage `json:"inputs,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// Priority is low, normal or high (job.Priority); empty is normal. The submit gate checks it.
	Priority string `json:"priority,omitempty"`
	// Destination, when set, names one of the account's destinations its outputs are copied
	// to once it completes; the submit gate checks it.
	Destination *destination.Request `json:"destination,omitempty"`
}

// Env is what a type needs to know of the service to validate a request.
type Env struct {
	// AssetURLPrefix is "{base_url}/assets/": URLs under it name uploaded assets.
	AssetURLPrefix string
	// AllowPrivateNetworks are the address ranges the operator opened to the input fetcher
	// (MEDIAJOBS_ALLOW_PRIVATE_NETWORKS): input URLs naming addresses in them are not refused
	// as non-public, so that a job the fetcher would run is not refused at submit.
	AllowPrivateNetworks []netip.Prefix
}

// Spec is what a type found in a valid request: where the job runs and for how long it asks.
type Spec struct {
	Class job.Class
	// Timeout is the time limit the request asks for; the submit gate caps it by plan.
	Timeout time.Duration
	// Assets are the IDs of the uploaded assets the request reads: the submit gate checks that
	// they belong to the caller.
	Assets []string
	// Pattern is the output pattern the request asks for by its command; empty when the files
	// it writes decide (job.NewOutput).
	Pattern job.Pattern
	// Split is set when the request asks to be split (params.split "auto"), with the reason
	// its command cannot be when it cannot.
	Split *job.Split
}

// Type is one job type.
type Type interface {
	// Name is the value of `type` that selects it.
	Name() string
	// Prepare validates inputs and params. A rejection is a *problem.Problem with
	// VALIDATION_ERROR whose message names the offending field, flag or value.
	Prepare(req Request, env Env) (Spec, error)
}

// Registry maps type names to types.
type Registry struct {
	types map[string]Type
}

// NewRegistry registers types; two with one name is a programming error.
func NewRegistry(types ...Type) (*Registry, error) {
	r := &Registry{types: make(map[string]Type, len(types))}
	for _, t := range types {
		if _, dup := r.types[t.Name()]; dup {
			return nil, fmt.Errorf("job type %q registered twice", t.Name())
		}
		r.types[t.Name()] = t
	}
	return r, nil
}

// Names lists the registered type names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.types))
	for n := range r.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the type named name.
func (r *Registry) Lookup(name string) (Type, bool) {
	t, ok := r.types[name]
	return t, ok
}

// Prepare finds the request's type and lets it validate the request. An unknown type is a
// VALIDATION_ERROR naming it and the known ones.
func (r *Registry) Prepare(req Request, env Env) (Spec, error) {
	if req.Type == "" {
		return Spec{}, problem.Reject(problem.CodeValidation, "type is required; one of: %s", strings.Join(r.Names(), ", "))
	}
	t, ok := r.types[req.Type]
	if !ok {
		return Spec{}, problem.Reject(problem.CodeValidation, "type %q is not a job type; one of: %s", req.Type, strings.Join(r.Names(), ", "))
	}
	return t.Prepare(req, env)
}

// DecodeRequest reads a job request strictly: unknown fields, wrong types, trailing data and
// non-object inputs or params are VALIDATION_ERRORs naming the field.
func DecodeRequest(body []byte) (Request, error) { return DecodeRequestAt("", body) }

// DecodeRequestAt is DecodeRequest for a request nested in a body: messages name fields with
// the prefix ("jobs[3]." gives "jobs[3].params must be an object").
func DecodeRequestAt(prefix string, body []byte) (Request, error) {
	var req Request
	if err := DecodeStrictAt(prefix, body, &req); err != nil {
		return Request{}, err
	}
	for _, name := range []string{"inputs", "params"} {
		raw := req.Inputs
		if name == "params" {
			raw = req.Params
		}
		if len(raw) > 0 && string(raw) != "null" && bytes.TrimSpace(raw)[0] != '{' {
			return Request{}, problem.Reject(problem.CodeValidation, "%s%s must be an object", prefix, name)
		}
	}
	req.Inputs, _ = withoutNulls(req.Inputs)
	req.Params, _ = withoutNulls(req.Params)
	return req, nil
}

// withoutNulls is raw with every object member whose value is null left out, in nested objects
// too, and nil for null itself: a null optional field is one not given, neither stored nor
// echoed, and a null required one is refused as missing, naming it. raw comes back as it is
// when it holds no such member. It reads raw once, whatever its depth.
func withoutNulls(raw json.RawMessage) (json.RawMessage, bool) {
	if string(raw) == "null" {
		return nil, true
	}
	if len(raw) == 0 || raw[0] != '{' || !bytes.Contains(raw, []byte("null")) {
		return raw, false
	}
	d := nullDropper{raw: raw, dec: json.NewDecoder(bytes.NewReader(raw))}
	d.dec.UseNumber() // a number past float64 (1e400) is copied, not an error
	out, _, ok := d.value(make([]byte, 0, len(raw)))
	if !ok || !d.dropped {
		return raw, false
	}
	return out, true
}

// nullDropper copies a JSON document, token by token, leaving out object members whose value
// is null.
type nullDropper struct {
	raw     []byte
	dec     *json.Decoder
	dropped bool
}

// value appends the next value to out, the null members of its objects left out, and says
// whether it was null; false when raw is not JSON.
func (d *nullDropper) value(out []byte) (_ []byte, null, ok bool) {
	start := d.dec.InputOffset()
	tok, err := d.dec.Token()
	if err != nil {
		return out, false, false
	}
	switch tok {
	case json.Delim('{'):
		out = append(out, '{')
		for first := true; d.dec.More(); {
			keyStart := d.dec.InputOffset()
			if _, err := d.dec.Token(); err != nil {
				return out, false, false
			}
			member := len(out)
			if !first {
				out = append(out, ',')
			}
			out = append(append(out, bytes.TrimLeft(d.raw[keyStart:d.dec.InputOffset()], " \t\r\n,")...), ':')
			if out, null, ok = d.value(out); !ok {
				return out, false, false
			}
			if null {
				out, d.dropped = out[:member], true
				continue
			}
			first = false
		}
		_, err = d.dec.Token() // }
		return append(out, '}'), false, err == nil
	case json.Delim('['):
		out = append(out, '[')
		for first := true; d.dec.More(); first = false {
			if !first {
				out = append(out, ',')
			}
			if out, _, ok = d.value(out); !ok {
				return out, false, false
			}
		}
		_, err = d.dec.Token() // ]
		return append(out, ']'), false, err == nil
	}
	return append(out, bytes.TrimLeft(d.raw[start:d.dec.InputOffset()], " \t\r\n,:")...), tok == nil, true
}

// DecodeStrict decodes JSON into v, refusing unknown fields and trailing data, and turns the
// decoder's errors into VALIDATION_ERRORs that name the field. Job types decode params with it.
func DecodeStrict(body []byte, v any) error { return DecodeStrictAt("", body, v) }

// DecodeStrictAt is DecodeStrict for a nested object: field names in messages get the prefix
// ("params." gives "params.timeout must be an integer"). A number with a whole value is an
// integer however it is written (480.0, 4.8e2), and reads back as 480 from a json.RawMessage.
func DecodeStrictAt(prefix string, body []byte, v any) error {
	body = integralNumbers(body)
	if err := checkKeysAt(strings.TrimSuffix(prefix, "."), body, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return problem.Reject(problem.CodeValidation, "%s", describeJSONError(prefix, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problem.Reject(problem.CodeValidation, "request body has data after the JSON object")
	}
	return nil
}

func describeJSONError(prefix string, err error) string {
	what := "body"
	if prefix != "" {
		what = strings.TrimSuffix(prefix, ".")
	}
	var (
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return fmt.Sprintf("%s must be a JSON object, not %s", what, problem.Shorten(typeErr.Value))
		}
		return fmt.Sprintf("%s%s must be %s, not %s", prefix, field, jsonKind(typeErr.Type.Kind().String()), problem.Shorten(typeErr.Value))
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%s is not valid JSON at byte %d: %v", what, syntaxErr.Offset, syntaxErr)
	case errors.Is(err, io.EOF):
		return what + " is empty; a JSON object is required"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return what + " is truncated JSON"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return problem.Messagef("field %q is not allowed", prefix+name)
	default:
		return what + " is not valid JSON: " + err.Error()
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	default:
		return "an object"
	}
}
