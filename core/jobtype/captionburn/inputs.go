package captionburn

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

// URLInputs reads an `inputs` object whose entries are URLs (a string, or {"url": ...}):
// required names must be there, optional ones may be, nothing else is allowed.
func URLInputs(raw json.RawMessage, required, optional []string) (map[string]string, error) {
	var m map[string]json.RawMessage
	if len(raw) > 0 && string(raw) != "null" {
		if err := jobtype.DecodeStrictAt("inputs.", raw, &m); err != nil {
			return nil, err
		}
	}
	known := map[string]bool{}
	for _, n := range append(append([]string{}, required...), optional...) {
		known[n] = true
	}
	out := make(map[string]string, len(m))
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if !known[name] {
			return nil, problem.Reject(problem.CodeValidation, "inputs.%s is not an input of this type; inputs: %s", name, strings.Join(append(append([]string{}, required...), optional...), ", "))
		}
		u, err := urlValue(name, m[name])
		if err != nil {
			return nil, err
		}
		out[name] = u
	}
	for _, n := range required {
		if _, ok := out[n]; !ok {
			return nil, problem.Reject(problem.CodeValidation, "inputs.%s is required: an https URL or an uploaded asset URL", n)
		}
	}
	return out, nil
}

func urlValue(name string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var u string
		if err := json.Unmarshal(raw, &u); err != nil {
			return "", problem.Reject(problem.CodeValidation, "inputs.%s must be a URL string", name)
		}
		return u, nil
	}
	var obj struct {
		URL *string `json:"url"`
	}
	if len(raw) == 0 || raw[0] != '{' {
		return "", problem.Reject(problem.CodeValidation, "inputs.%s must be a URL string or {\"url\": ...}", name)
	}
	if err := jobtype.DecodeStrictAt("inputs."+name+".", raw, &obj); err != nil {
		return "", err
	}
	if obj.URL == nil {
		return "", problem.Reject(problem.CodeValidation, "inputs.%s needs url", name)
	}
	return *obj.URL, nil
}

// CheckURLs runs every input URL through the FFmpeg validator's input rules, so these types
// accept exactly the URLs an `ffmpeg` job may read (https or uploaded assets, no playlists),
// and returns the uploaded assets they name.
func CheckURLs(inputs map[string]string, env jobtype.Env) ([]string, error) {
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	opts := validator.Options{AssetURLPrefix: env.AssetURLPrefix, AllowPrivateNetworks: env.AllowPrivateNetworks,
		Inputs: map[string]validator.Input{}}
	cmd := "ffmpeg"
	for _, n := range names {
		u := inputs[n]
		if u == "" || strings.ContainsAny(u, " \t\r\n'\"\\") {
			return nil, problem.Reject(problem.CodeValidation, "inputs.%s %q is not allowed: only https URLs and uploaded assets", n, u)
		}
		opts.Inputs[n] = validator.Input{URL: u}
		cmd += " -i " + n
	}
	res := validator.Validate(cmd+" out.mp4", opts)
	if !res.Valid {
		return nil, problem.Reject(problem.CodeValidation, "%s", res.Error)
	}
	return ffmpegjob.AssetIDs(res.Plan, env.AssetURLPrefix), nil
}
