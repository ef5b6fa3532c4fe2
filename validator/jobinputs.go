package validator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// ParseJobInputs reads a job's `inputs` as POST /jobs takes them — each name maps to a URL
// string, {"url": ...} or {"content": ...} — into Options.Inputs, so that every pre-check (POST
// /ffmpeg/validate, MCP validate_command, `mediajobs validate`, the WASM module and the
// playground) reads the same shape the same way. null or an empty body is no inputs. Errors
// name the offending entry as inputs.<name>; names themselves are checked by Validate.
func ParseJobInputs(data []byte) (map[string]Input, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("inputs must be an object of names to a URL string, {url} or {content}")
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	inputs := make(map[string]Input, len(raw))
	for _, name := range names {
		in, err := parseJobInput(name, bytes.TrimSpace(raw[name]))
		if err != nil {
			return nil, err
		}
		inputs[name] = in
	}
	return inputs, nil
}

func parseJobInput(name string, raw []byte) (Input, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var u string
		if err := json.Unmarshal(raw, &u); err != nil {
			return Input{}, fmt.Errorf("inputs.%s must be a URL string or an object", name)
		}
		return Input{URL: u}, nil
	}
	var obj struct {
		URL     *string `json:"url"`
		Content *string `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if len(raw) == 0 || raw[0] != '{' || dec.Decode(&obj) != nil {
		return Input{}, fmt.Errorf("inputs.%s must be a URL string, {url} or {content}", name)
	}
	switch {
	case obj.URL != nil && obj.Content != nil:
		return Input{}, fmt.Errorf("inputs.%s has both url and content; give one", name)
	case obj.URL != nil:
		return Input{URL: *obj.URL}, nil
	case obj.Content != nil:
		return Input{Inline: true, ContentSize: len(*obj.Content)}, nil
	}
	return Input{}, fmt.Errorf("inputs.%s needs url or content", name)
}
