package preset

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

// maxSampleSets caps the combinations of sample values a template is validated with when saved:
// under it every combination is, over it each variable's samples in turn beside the others'
// first.
const maxSampleSets = 64

// Compiled is a preset whose templates are parsed and placed: ready to substitute.
type Compiled struct {
	Preset    *Preset
	templates []template
	places    map[string][]placement
}

// Parse checks a preset's declarations and parses its templates with the placement rules; it
// does not run the validator (Check does).
func Parse(p *Preset) (*Compiled, error) {
	if err := CheckName(p.Name); err != nil {
		return nil, err
	}
	switch {
	case len(p.Description) > MaxDescriptionSize:
		return nil, reject("description", "description is over %d bytes", MaxDescriptionSize)
	case p.Command != "" && p.Steps != nil:
		return nil, reject("steps", "give command or steps, not both")
	case p.Command == "" && len(p.Steps) == 0:
		return nil, reject("command", "command is required: an FFmpeg command with {{name}} placeholders (or steps, a list of them)")
	case len(p.Steps) > ffmpegjob.MaxSteps:
		return nil, reject("steps", "steps has %d commands; give 1 to %d", len(p.Steps), ffmpegjob.MaxSteps)
	case p.Keep != nil && p.Steps == nil:
		return nil, reject("keep", "keep names outputs of earlier steps, and needs steps")
	case len(p.Variables) > MaxVariables:
		return nil, reject("variables", "variables has %d entries, over %d", len(p.Variables), MaxVariables)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Variables)) {
		if err := p.Variables[name].check(name); err != nil {
			return nil, err
		}
	}
	c := &Compiled{Preset: p, places: map[string][]placement{}}
	for i, command := range p.Templates() {
		field := "command"
		if p.Steps != nil {
			field = fmt.Sprintf("steps[%d]", i)
		}
		t, places, err := parseTemplate(field, command)
		if err != nil {
			return nil, err
		}
		for _, name := range t.names {
			v, ok := p.Variables[name]
			if !ok {
				return nil, reject(field, "%s: {{%s}} is not a declared variable: add it to variables", field, name)
			}
			for _, pl := range places[name] {
				if !pl.whole && (v.Type == String || v.Type == Enum) {
					return nil, reject(field, "%s: {{%s}} is an %s and stands beside other text: a string or an enum stands alone, as a whole flag value or a whole filter option value", field, name, v.Type)
				}
			}
			c.places[name] = append(c.places[name], places[name]...)
		}
		c.templates = append(c.templates, t)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Variables)) {
		if c.places[name] == nil {
			return nil, reject("variables."+name, "variables.%s is used by no template: remove it or write {{%s}} where it goes", name, name)
		}
	}
	return c, nil
}

// Substitute checks the values a job gives (absent ones take their defaults) and returns the
// concrete commands, one per template, and every variable's value as used. Errors name
// params.variables.<name>.
func (c *Compiled) Substitute(given map[string]json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if _, ok := c.Preset.Variables[name]; !ok {
			return nil, nil, reject("params.variables."+name, "params.variables.%s is not a variable of preset %s (it has: %s)",
				problem.Shorten(name), c.Preset.Name, strings.Join(slices.Sorted(maps.Keys(c.Preset.Variables)), ", "))
		}
	}
	values := make(map[string]string, len(c.Preset.Variables))
	used := make(map[string]json.RawMessage, len(c.Preset.Variables))
	for _, name := range slices.Sorted(maps.Keys(c.Preset.Variables)) {
		v, field := c.Preset.Variables[name], "params.variables."+name
		raw, ok := given[name]
		if !ok {
			if v.Default == nil {
				return nil, nil, reject(field, "%s is required: preset %s gives it no default", field, c.Preset.Name)
			}
			raw = v.Default
		}
		s, err := c.value(name, field, raw)
		if err != nil {
			return nil, nil, err
		}
		values[name], used[name] = s, raw
	}
	return c.render(values), used, nil
}

// value checks one value against its variable and against every place it stands in.
func (c *Compiled) value(name, field string, raw json.RawMessage) (string, error) {
	v := c.Preset.Variables[name]
	s, err := v.Value(field, raw)
	if err != nil {
		return "", err
	}
	if v.Type == String {
		for _, pl := range c.places[name] {
			if pl.filter {
				if err := v.checkFilterString(field, s); err != nil {
					return "", err
				}
			}
		}
	}
	return s, nil
}

func (c *Compiled) render(values map[string]string) []string {
	out := make([]string, len(c.templates))
	for i, t := range c.templates {
		out[i] = t.render(values)
	}
	return out
}

// samples are the values a variable is validated with: its default, min and max, each enum
// value, a plain word and a string of its maxLength.
func (c *Compiled) samples(name string) []string {
	v := c.Preset.Variables[name]
	var raws []json.RawMessage
	if v.Default != nil {
		raws = append(raws, v.Default)
	}
	switch v.Type {
	case Integer, Number:
		raws = append(raws, json.RawMessage(formatNumber(*v.Min)), json.RawMessage(formatNumber(*v.Max)))
	case Enum:
		for _, e := range v.Values {
			b, _ := json.Marshal(e)
			raws = append(raws, b)
		}
	case String:
		b, _ := json.Marshal(strings.Repeat("x", v.maxLength()))
		raws = append(raws, json.RawMessage(`"Sample"`), b)
	}
	var out []string
	for _, raw := range raws {
		// A default was checked with its declaration; every other sample is valid by construction.
		if s, err := c.value(name, "", raw); err == nil && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// sampleSets are the combinations of samples a preset is validated with.
func (c *Compiled) sampleSets() []map[string]string {
	names := slices.Sorted(maps.Keys(c.Preset.Variables))
	samples := make(map[string][]string, len(names))
	total := 1
	for _, n := range names {
		samples[n] = c.samples(n)
		total *= len(samples[n])
		if total > maxSampleSets {
			total = maxSampleSets + 1
		}
	}
	sets := []map[string]string{{}}
	if total <= maxSampleSets {
		for _, n := range names {
			var next []map[string]string
			for _, set := range sets {
				for _, s := range samples[n] {
					m := maps.Clone(set)
					m[n] = s
					next = append(next, m)
				}
			}
			sets = next
		}
		return sets
	}
	for _, n := range names {
		sets[0][n] = samples[n][0]
	}
	for _, n := range names {
		for _, s := range samples[n][1:] {
			m := maps.Clone(sets[0])
			m[n] = s
			sets = append(sets, m)
		}
	}
	return sets
}

// Check parses a preset and validates its templates with every sample set through the job
// type's validator, as a job's params would be; it sets p.Inputs to the names a job gives.
func Check(p *Preset, env jobtype.Env) (*Compiled, error) {
	c, err := Parse(p)
	if err != nil {
		return nil, err
	}
	for _, set := range c.sampleSets() {
		steps := c.render(set)
		inputs, err := c.validate(steps, env)
		if err != nil {
			var prob *problem.Problem
			if errors.As(err, &prob) {
				withValues := *prob
				withValues.Field = strings.TrimPrefix(prob.Field, "params.")
				if len(set) > 0 {
					withValues.Message = fmt.Sprintf("with %s: %s", describe(set), prob.Message)
				}
				return nil, &withValues
			}
			return nil, err
		}
		p.Inputs = inputs
	}
	return c, nil
}

func describe(set map[string]string) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(set)) {
		parts = append(parts, n+"="+set[n])
	}
	return strings.Join(parts, ", ")
}

// validate runs the validator over concrete steps as one job, with the names the steps read
// and no earlier step writes as its inputs, and returns those names.
func (c *Compiled) validate(steps []string, env jobtype.Env) ([]string, error) {
	inputs := []string{}
	written := map[string]bool{}
	for _, step := range steps {
		res := validator.Validate(ffmpegjob.WithSampleMeasured(step), validator.Options{Timeout: ffmpegjob.DefaultTimeout, AssetURLPrefix: env.AssetURLPrefix})
		if !res.Valid {
			break // the job's validation below says why, naming the step
		}
		for _, name := range res.RequiredInputs {
			if !written[name] && !slices.Contains(inputs, name) {
				inputs = append(inputs, name)
			}
		}
		for _, name := range res.Plan.Outputs {
			written[name] = true
		}
	}
	req := ffmpegjob.Request{Inputs: map[string]ffmpegjob.Input{}, Steps: steps, Keep: c.Preset.Keep, Timeout: ffmpegjob.DefaultTimeout}
	if c.Preset.Steps != nil && req.Keep == nil && len(steps) == 1 {
		req.Keep = []string{}
	}
	for _, name := range inputs {
		req.Inputs[name] = ffmpegjob.Input{URL: "https://example.com/" + name}
	}
	_, err := req.Validate(env)
	return inputs, err
}
