package ffmpegjob

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/validator"
)

// MaxSteps is the most commands params.steps may chain.
const MaxSteps = 10

// Checked is a request the validator accepted: one plan per step, in order.
type Checked struct {
	Plans []*validator.Plan
	// Keep are the outputs of steps before the last that are outputs of the job too.
	Keep []string
	// keptSteps are the steps a kept HLS or DASH manifest comes from: every file such a step
	// made is a part of it.
	keptSteps map[int]bool
	// measured are the steps that take values an earlier step measured (Resolve), and renames
	// the download names each step's plan was given (renameDownload), which Resolve gives again.
	measured map[int]bool
	renames  map[int][]rename
}

// rename is a step's k-th download, fetched under name.
type rename struct {
	k    int
	name string
}

// Last is the plan of the last step, whose outputs are the job's.
func (c Checked) Last() *validator.Plan { return c.Plans[len(c.Plans)-1] }

// Downloads are the remote files every step reads, each local name once.
func (c Checked) Downloads() []validator.Download {
	var out []validator.Download
	seen := map[string]bool{}
	for _, p := range c.Plans {
		for _, d := range p.Downloads {
			if !seen[d.Name] {
				seen[d.Name] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// parseSteps reads params.command or params.steps (one of them) into the commands to run.
func parseSteps(p params) ([]string, error) {
	switch {
	case p.Command != nil && p.Steps != nil:
		return nil, problem.Reject(problem.CodeValidation, "params has both command and steps; give one: steps for a chain of commands")
	case p.Steps != nil:
		if len(p.Steps) < 1 || len(p.Steps) > MaxSteps {
			return nil, rejectField("params.steps", "params.steps has %d commands; give 1 to %d", len(p.Steps), MaxSteps)
		}
		for i, s := range p.Steps {
			if strings.TrimSpace(s) == "" {
				return nil, rejectField(stepField(i), "%s is empty: each step is an FFmpeg command starting with ffmpeg", stepField(i))
			}
		}
		return p.Steps, nil
	case p.Keep != nil:
		return nil, rejectField("params.keep", "params.keep names outputs of earlier steps, and needs params.steps")
	case p.Command == nil || strings.TrimSpace(*p.Command) == "":
		return nil, problem.Reject(problem.CodeValidation, "params.command is required: an FFmpeg command starting with ffmpeg (or params.steps, a list of them)")
	}
	return []string{*p.Command}, nil
}

func stepField(i int) string { return fmt.Sprintf("params.steps[%d]", i) }

// rejectField is a VALIDATION_ERROR about field.
func rejectField(field, format string, args ...any) error {
	return &problem.Problem{Code: problem.CodeValidation, Message: problem.Messagef(format, args...), Field: field}
}

// validateSteps checks the whole chain before anything runs. Each step is validated as a
// command of its own over the job's inputs; a name it reads that the inputs do not provide must
// be an output of an earlier step; no step writes a name an earlier step wrote or an input
// holds; and one local name stands for one URL in every step.
func (r Request) validateSteps(env jobtype.Env) (Checked, error) {
	chain := r.chain
	opts := r.Options(env)
	var c Checked
	wrote := map[string]int{}      // output name → the index of the step that wrote it
	fetched := map[string]string{} // download name → its URL
	for i, command := range r.Steps {
		field, where := "params.command", ""
		if chain {
			field, where = stepField(i), fmt.Sprintf("step %d of %d: ", i+1, len(r.Steps))
		}
		names, err := measuredIn(command)
		if err != nil {
			return c, rejectField(field, "%s%v", where, err)
		}
		if len(names) > 0 {
			if !slices.ContainsFunc(c.Plans, func(p *validator.Plan) bool { return p.Analysis }) {
				return c, rejectField(field, "%suses {{measured.%s}}, which needs an earlier step that measures (loudnorm=print_format=json ... -f null -)", where, names[0])
			}
			if c.measured == nil {
				c.measured = map[int]bool{}
			}
			c.measured[i] = true
			command = WithSampleMeasured(command)
		}
		res := validator.Validate(command, opts)
		if !res.Valid {
			p := &problem.Problem{Code: problem.CodeValidation, Message: where + res.Error, Field: field}
			if res.Err != nil {
				p.Cause = res.Err
			}
			return c, p
		}
		var missing []string
		for _, name := range res.RequiredInputs {
			if _, ok := wrote[name]; !ok {
				missing = append(missing, name)
			}
		}
		// A job must supply every name a step reads: a pre-check answers such a command as valid,
		// with the names.
		res.RequiredInputs = missing
		if e := res.MissingInputsError(); e != nil {
			msg := e.Message
			if chain {
				msg = where + strings.Replace(msg, "add each name to inputs", "add each name to inputs, or write it in an earlier step", 1)
				field = stepField(i)
			} else {
				field = "inputs"
			}
			return c, &problem.Problem{Code: problem.CodeValidation, Message: msg, Field: field}
		}
		for _, name := range res.Plan.Outputs {
			if j, ok := wrote[name]; ok {
				return c, rejectField(field,
					"%s%q is written by step %d already; give each step's outputs names of their own", where, name, j+1)
			}
			wrote[name] = i
		}
		plan := res.Plan
		for k, d := range plan.Downloads {
			if u, ok := fetched[d.Name]; ok && u != d.URL {
				// The validator names a command's URL inputs input_0, input_1, ... in each step
				// alike: a later step's other URL gets a name of its own.
				rn := rename{k, fmt.Sprintf("step%d_%s", i+1, d.Name)}
				plan = renameDownload(plan, rn.k, rn.name)
				d = plan.Downloads[k]
				if c.renames == nil {
					c.renames = map[int][]rename{}
				}
				c.renames[i] = append(c.renames[i], rn)
			}
			fetched[d.Name] = d.URL
		}
		c.Plans = append(c.Plans, plan)
	}
	last := len(r.Steps) - 1
	for _, k := range r.Keep {
		if j, ok := wrote[k]; !ok || j == last {
			return c, rejectField("params.keep",
				"params.keep names %q, which no step before the last writes (the last step's outputs are kept anyway)", k)
		}
	}
	c.Keep = slices.Clone(r.Keep)
	for _, k := range c.Keep {
		if job.IsManifest(k) {
			if c.keptSteps == nil {
				c.keptSteps = map[int]bool{}
			}
			c.keptSteps[wrote[k]] = true
		}
	}
	return c, nil
}

// renameDownload is plan with its k-th download fetched under name: the download and the -i
// argument that reads it are renamed, in copies.
func renameDownload(plan *validator.Plan, k int, name string) *validator.Plan {
	p := *plan
	old := p.Downloads[k].Name
	p.Downloads = slices.Clone(p.Downloads)
	p.Downloads[k].Name = name
	p.Args = slices.Clone(p.Args)
	for i := 1; i < len(p.Args); i++ {
		if p.Args[i] == old && p.Args[i-1] == "-i" {
			p.Args[i] = name
		}
	}
	return &p
}

// Kept tells whether a file that step (an index) left in the work directory, before the last
// step ran, is one of the job's outputs: it is named in Keep, is one file of a numbered pattern
// in Keep (frame_%03d.png), or comes from the step of a kept HLS or DASH manifest (a segment).
func (c Checked) Kept(name string, step int) bool {
	if c.keptSteps[step] {
		return true
	}
	for _, k := range c.Keep {
		if k == name || strings.Contains(k, "%") && matchNumbered(k, name) {
			return true
		}
	}
	return false
}

// matchNumbered tells whether name is one file of the printf-style pattern (one %d, %0Nd).
func matchNumbered(pattern, name string) bool {
	i := strings.IndexByte(pattern, '%')
	j := i + 1
	for j < len(pattern) && pattern[j] >= '0' && pattern[j] <= '9' {
		j++
	}
	if i < 0 || j >= len(pattern) || pattern[j] != 'd' {
		return false
	}
	prefix, suffix := pattern[:i], pattern[j+1:]
	mid, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, suffix)
	if !ok || mid == "" {
		return false
	}
	for _, ch := range mid {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}
