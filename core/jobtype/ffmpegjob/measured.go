package ffmpegjob

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/validator"
)

// A step of a chain may take numbers an earlier step measured: {{measured.input_i}} stands for
// the integrated loudness loudnorm's first pass printed (loudnorm=print_format=json ... -f null
// -), so that a second pass can normalise with it (measured_I={{measured.input_i}}). The names
// are loudnorm's own. The values are numbers the runner parsed from FFmpeg's log, written as
// plain decimals; a placeholder stands for one number, so it cannot become a flag, a path or a
// filter of its own. A step that uses one is validated with sample numbers at submit and again,
// with the measured numbers, on the runner just before it runs.

// MeasuredNames are the values {{measured.NAME}} may name: loudnorm's measurement.
var MeasuredNames = []string{"input_i", "input_tp", "input_lra", "input_thresh", "target_offset"}

// sampleMeasured are the numbers a step is validated with at submit.
var sampleMeasured = map[string]float64{"input_i": -23, "input_tp": -2, "input_lra": 7, "input_thresh": -33, "target_offset": 0.5}

var measuredRE = regexp.MustCompile(`\{\{\s*measured\.([A-Za-z0-9_]*)\s*\}\}`)

// measuredIn lists the names step uses, in order of first use, refusing unknown ones.
func measuredIn(step string) ([]string, error) {
	var names []string
	for _, m := range measuredRE.FindAllStringSubmatch(step, -1) {
		if !slices.Contains(MeasuredNames, m[1]) {
			return nil, fmt.Errorf("%s names no measured value: give one of %s", m[0], strings.Join(MeasuredNames, ", "))
		}
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names, nil
}

// withMeasured is step with every {{measured.NAME}} replaced by its value, a plain decimal.
func withMeasured(step string, values map[string]float64) string {
	return measuredRE.ReplaceAllStringFunc(step, func(p string) string {
		return strconv.FormatFloat(values[measuredRE.FindStringSubmatch(p)[1]], 'f', 2, 64)
	})
}

// WithSampleMeasured is step with the sample numbers a step is validated with at submit in
// place of its {{measured.NAME}} placeholders.
func WithSampleMeasured(step string) string { return withMeasured(step, sampleMeasured) }

// UsesMeasured tells whether step i takes measured values, which Resolve substitutes.
func (c Checked) UsesMeasured(i int) bool { return c.measured[i] }

// Resolve is step i's plan with the values an earlier step measured in place of its
// placeholders, validated again: the runner calls it just before the step runs. measured holds
// the values by name (MeasuredNames); one the step needs and that is missing, or that is not a
// finite number (loudnorm prints -inf for silence), is an error naming it.
func (r Request) Resolve(c Checked, i int, measured map[string]float64, env jobtype.Env) (*validator.Plan, error) {
	if !c.measured[i] {
		return c.Plans[i], nil
	}
	names, err := measuredIn(r.Steps[i])
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		v, ok := measured[n]
		if !ok {
			return nil, fmt.Errorf("{{measured.%s}} has no value: no earlier step printed loudnorm's measurement (loudnorm=print_format=json ... -f null -)", n)
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("{{measured.%s}} was measured as %v, not a number to normalise with (is the input silent?)", n, v)
		}
	}
	res := validator.Validate(withMeasured(r.Steps[i], measured), r.Options(env))
	if !res.Valid {
		return nil, fmt.Errorf("with the measured values: %s", res.Error)
	}
	plan := res.Plan
	for _, rn := range c.renames[i] {
		plan = renameDownload(plan, rn.k, rn.name)
	}
	return plan, nil
}
