// Package ffmpegjob is the `ffmpeg` job type: a user-written FFmpeg command with staged inputs,
// checked by the nine-layer validator at submit and planned by it again on the runner.
package ffmpegjob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

// Name is the type's name.
const Name = "ffmpeg"

// DefaultTimeout is params.timeout when absent.
const DefaultTimeout = 120

// Input is one entry of `inputs`: a URL to download or inline content to stage.
type Input struct {
	URL     string
	Content *string
}

// Request is a parsed ffmpeg job.
type Request struct {
	Inputs map[string]Input
	// Steps are the commands run in order in one work directory: params.command alone, or
	// params.steps.
	Steps []string
	// Keep names outputs of steps before the last that are outputs of the job too.
	Keep []string
	// chain tells params.steps, even of one command, from params.command: errors name the step.
	chain        bool
	OutputFormat string
	Timeout      int
	Compute      string
	// Split is params.split: "auto" asks for split and stitch, "off" (or empty) for none.
	Split string
}

type params struct {
	Command      *string                    `json:"command"`
	Steps        []string                   `json:"steps"`
	Keep         []string                   `json:"keep"`
	OutputFormat string                     `json:"outputFormat"`
	Timeout      *int                       `json:"timeout"`
	Compute      string                     `json:"compute"`
	Split        string                     `json:"split"`
	Inputs       map[string]json.RawMessage `json:"inputs"`
	// Preset is the record of the preset the control plane made the command from ({name,
	// version, variables}): the command is what runs.
	Preset json.RawMessage `json:"preset"`
}

// Parse reads a job's inputs and params strictly. `inputs` may stand in the body or, as the
// spec's params table lists it, inside params — not in both.
func Parse(rawInputs, rawParams json.RawMessage) (Request, error) {
	var p params
	if len(rawParams) == 0 || string(rawParams) == "null" {
		return Request{}, problem.Reject(problem.CodeValidation, "params is required with params.command")
	}
	if err := jobtype.DecodeStrictAt("params.", rawParams, &p); err != nil {
		return Request{}, err
	}
	steps, err := parseSteps(p)
	if err != nil {
		return Request{}, err
	}
	req := Request{Steps: steps, Keep: p.Keep, chain: p.Steps != nil, OutputFormat: p.OutputFormat, Timeout: DefaultTimeout, Compute: p.Compute, Split: p.Split}
	switch {
	case p.Split != "" && p.Split != "auto" && p.Split != "off":
		return Request{}, problem.Reject(problem.CodeValidation, "params.split %q is not auto or off", p.Split)
	case p.Split == "auto" && p.Steps != nil:
		return Request{}, problem.Reject(problem.CodeValidation, "params.split applies to params.command; a job of params.steps runs whole")
	}
	if p.Timeout != nil {
		req.Timeout = *p.Timeout
	}
	var inputs map[string]json.RawMessage
	if len(rawInputs) > 0 && string(rawInputs) != "null" {
		if err := jobtype.DecodeStrictAt("inputs.", rawInputs, &inputs); err != nil {
			return Request{}, err
		}
	}
	if p.Inputs != nil {
		if inputs != nil {
			return Request{}, problem.Reject(problem.CodeValidation, "inputs is given both in the body and in params; give it once")
		}
		inputs = p.Inputs
	}
	req.Inputs = make(map[string]Input, len(inputs))
	for name, raw := range inputs {
		in, err := parseInput(name, raw)
		if err != nil {
			return Request{}, err
		}
		req.Inputs[name] = in
	}
	return req, nil
}

func parseInput(name string, raw json.RawMessage) (Input, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var u string
		if err := json.Unmarshal(raw, &u); err != nil {
			return Input{}, problem.Reject(problem.CodeValidation, "inputs.%s must be a URL string or an object", name)
		}
		return Input{URL: u}, nil
	}
	var obj struct {
		URL     *string `json:"url"`
		Content *string `json:"content"`
	}
	if err := jobtype.DecodeStrictAt("inputs."+name+".", raw, &obj); err != nil {
		return Input{}, err
	}
	switch {
	case obj.URL != nil && obj.Content != nil:
		return Input{}, problem.Reject(problem.CodeValidation, "inputs.%s has both url and content; give one", name)
	case obj.URL != nil:
		return Input{URL: *obj.URL}, nil
	case obj.Content != nil:
		return Input{Content: obj.Content}, nil
	default:
		return Input{}, problem.Reject(problem.CodeValidation, "inputs.%s needs url or content", name)
	}
}

// Options are the validator's options for this request in env.
func (r Request) Options(env jobtype.Env) validator.Options {
	opts := validator.Options{OutputFormat: r.OutputFormat, Compute: r.Compute, Timeout: r.Timeout,
		AssetURLPrefix: env.AssetURLPrefix, AllowPrivateNetworks: env.AllowPrivateNetworks,
		Inputs: make(map[string]validator.Input, len(r.Inputs))}
	for name, in := range r.Inputs {
		if in.Content != nil {
			opts.Inputs[name] = validator.Input{Inline: true, ContentSize: len(*in.Content)}
		} else {
			opts.Inputs[name] = validator.Input{URL: in.URL}
		}
	}
	return opts
}

// Validate runs the validator on every step of the request, in order, before anything runs; a
// rejection is a VALIDATION_ERROR carrying the validator's message, which names the offending
// flag or value (and the step, in a chain), and so is a command that reads a name neither the
// inputs nor an earlier step provide.
func (r Request) Validate(env jobtype.Env) (Checked, error) {
	if r.Timeout < 1 || r.Timeout > 900 {
		return Checked{}, problem.Reject(problem.CodeValidation, "params.timeout %d is out of range: 1 to 900 seconds", r.Timeout)
	}
	c, err := r.validateSteps(env)
	if err != nil {
		return c, err
	}
	for _, plan := range c.Plans {
		if e := r.checkInline(plan); e != nil {
			return c, &problem.Problem{Code: problem.CodeValidation, Message: e.Message, Field: "inputs." + e.Value}
		}
	}
	return c, nil
}

// checkInline applies the runner's staged-input rules (validator.CheckStaged) to inline
// content, whose bytes are known at submit: a playlist named .srt or a concat list naming a
// host file is refused here, before a job exists. Downloaded inputs are checked by the runner.
func (r Request) checkInline(plan *validator.Plan) *validator.Error {
	concat := map[string]bool{}
	for _, read := range validator.InputReads(plan.Args) {
		if read.Format == "concat" {
			concat[read.Name] = true
		}
	}
	staged := func(name string) bool {
		if _, ok := r.Inputs[name]; ok {
			return true
		}
		for _, d := range plan.Downloads {
			if d.Name == name {
				return true
			}
		}
		return false
	}
	names := make([]string, 0, len(r.Inputs))
	for name := range r.Inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		in := r.Inputs[name]
		if in.Content == nil {
			continue
		}
		f := validator.StagedFile{Name: name, Content: []byte(*in.Content), Concat: concat[name]}
		if e := validator.CheckStaged(f, staged); e != nil {
			return e
		}
	}
	return nil
}

// AssetIDs lists the uploaded assets the plan downloads, sorted.
func AssetIDs(plan *validator.Plan, assetURLPrefix string) []string {
	seen := map[string]bool{}
	for _, d := range plan.Downloads {
		if id, ok := AssetID(d.URL, assetURLPrefix); ok {
			seen[id] = true
		}
	}
	var ids []string
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// AssetID extracts the asset ID from "{prefix}<id>/content".
func AssetID(url, prefix string) (string, bool) {
	if prefix == "" || !strings.HasPrefix(url, prefix) {
		return "", false
	}
	id, ok := strings.CutSuffix(strings.TrimPrefix(url, prefix), "/content")
	if !ok || id == "" || strings.ContainsAny(id, "/?#") {
		return "", false
	}
	return id, true
}

// Type is the registered ffmpeg job type.
type Type struct{}

// Name is "ffmpeg".
func (Type) Name() string { return Name }

// Prepare validates the request through the validator and tells its compute class.
func (Type) Prepare(req jobtype.Request, env jobtype.Env) (jobtype.Spec, error) {
	r, err := Parse(req.Inputs, req.Params)
	if err != nil {
		return jobtype.Spec{}, err
	}
	c, err := r.Validate(env)
	if err != nil {
		return jobtype.Spec{}, err
	}
	class := job.ClassCPU
	var assets []string
	for _, plan := range c.Plans {
		if plan.Compute == string(job.ClassGPU) {
			class = job.ClassGPU
		}
		assets = append(assets, AssetIDs(plan, env.AssetURLPrefix)...)
	}
	slices.Sort(assets)
	pattern, err := job.ParsePattern(c.Last().Pattern)
	if err != nil {
		return jobtype.Spec{}, fmt.Errorf("the validator's plan: %w", err)
	}
	spec := jobtype.Spec{Class: class, Timeout: time.Duration(r.Timeout) * time.Second,
		Assets: slices.Compact(assets), Pattern: pattern}
	if r.Split == "auto" {
		// Whether the command can be split is known now; whether its input is long enough, and
		// more than one slot free, when it runs.
		spec.Split = &job.Split{Reason: validator.Splittable(c.Last()).Reason}
	}
	return spec, nil
}
