package preset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mediajobs/mediajobs/core/problem"
)

// Type is a variable's type.
type Type string

// The variable types.
const (
	Integer Type = "integer"
	Number  Type = "number"
	Enum    Type = "enum"
	String  Type = "string"
)

// Limits on what a preset holds.
const (
	MaxVariables       = 20
	MaxEnumValues      = 32
	MaxStringLength    = 256
	MaxDescriptionSize = 1000
)

// Variable is one typed variable of a template.
type Variable struct {
	Type        Type   `json:"type"`
	Description string `json:"description,omitempty"`
	// Default is the value used when a job gives none; a variable without one must be given.
	Default json.RawMessage `json:"default,omitempty"`
	// Min and Max bound an integer or a number; both are required for them.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Values are an enum's choices.
	Values []string `json:"values,omitempty"`
	// MaxLength caps a string's length in characters (MaxStringLength when 0).
	MaxLength int `json:"maxLength,omitempty"`
}

// Preset is a named template of an FFmpeg command or chain of steps.
type Preset struct {
	AccountID   string              `json:"-"`
	Name        string              `json:"name"`
	Description string              `json:"description,omitempty"`
	Command     string              `json:"command,omitempty"`
	Steps       []string            `json:"steps,omitempty"`
	Keep        []string            `json:"keep,omitempty"`
	Variables   map[string]Variable `json:"variables"`
	// Inputs are the names a job using the preset gives in its inputs, found when it is saved.
	Inputs []string `json:"inputs"`
	// Version starts at 1 and grows by one with each update.
	Version   int       `json:"version"`
	Builtin   bool      `json:"builtin"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Templates are the preset's commands: Command alone, or Steps.
func (p *Preset) Templates() []string {
	if p.Command != "" {
		return []string{p.Command}
	}
	return p.Steps
}

// Ref is the record of the preset a job was made from.
type Ref struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
	// Variables are the values the job was made with, defaults included.
	Variables map[string]json.RawMessage `json:"variables"`
}

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	variableRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]{0,31}$`)
	measuredRE = regexp.MustCompile(`^measured\.[a-z_]{1,32}$`)
	// enumRE: an enum value is a name FFmpeg parses (libx264, yuv420p, +faststart), never a flag,
	// a path, or anything a filter graph or shell reads as syntax.
	enumRE = regexp.MustCompile(`^[A-Za-z0-9+][A-Za-z0-9_.+-]{0,63}$`)
)

// reject is a VALIDATION_ERROR about field.
func reject(field, format string, args ...any) error {
	return &problem.Problem{Code: problem.CodeValidation, Message: problem.Messagef(format, args...), Field: field}
}

// CheckName refuses a name that is not a preset's.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return reject("name", "name %q is not a preset name: 1 to 64 of a-z, 0-9, '.', '_', '-', starting with a letter or digit", name)
	}
	return nil
}

// check checks a variable's declaration.
func (v Variable) check(name string) error {
	field := "variables." + name
	if !variableRE.MatchString(name) {
		return reject(field, "variable name %q: 1 to 32 of a-z, A-Z, 0-9, '_', starting with a lower-case letter", name)
	}
	if v.Type != Integer && v.Type != Number && v.Type != Enum && v.Type != String {
		return reject(field+".type", "%s.type %q: want integer, number, enum or string", field, v.Type)
	}
	bounded := v.Type == Integer || v.Type == Number
	switch {
	case bounded && (v.Min == nil || v.Max == nil):
		return reject(field, "%s: an %s needs min and max", field, v.Type)
	case !bounded && (v.Min != nil || v.Max != nil):
		return reject(field, "%s: min and max are for integers and numbers", field)
	case bounded && *v.Min > *v.Max:
		return reject(field, "%s: min %v is over max %v", field, *v.Min, *v.Max)
	case bounded && (math.Abs(*v.Min) > 1e9 || math.Abs(*v.Max) > 1e9):
		return reject(field, "%s: min and max must lie within ±1e9", field)
	case v.Type == Integer && (*v.Min != math.Trunc(*v.Min) || *v.Max != math.Trunc(*v.Max)):
		return reject(field, "%s: an integer's min and max are whole numbers", field)
	case v.Type != Enum && v.Values != nil:
		return reject(field, "%s: values are for enums", field)
	case v.Type == Enum && (len(v.Values) < 1 || len(v.Values) > MaxEnumValues):
		return reject(field+".values", "%s.values: give 1 to %d values", field, MaxEnumValues)
	case v.Type != String && v.MaxLength != 0:
		return reject(field, "%s: maxLength is for strings", field)
	case v.MaxLength < 0 || v.MaxLength > MaxStringLength:
		return reject(field+".maxLength", "%s.maxLength %d: want 1 to %d", field, v.MaxLength, MaxStringLength)
	case len(v.Description) > MaxDescriptionSize:
		return reject(field+".description", "%s.description is over %d bytes", field, MaxDescriptionSize)
	}
	for i, e := range v.Values {
		if !enumRE.MatchString(e) {
			return reject(fmt.Sprintf("%s.values[%d]", field, i), "%s.values[%d] %q: an enum value is 1 to 64 of A-Z, a-z, 0-9, '_', '.', '+', '-', not starting with '-'", field, i, e)
		}
		if slices.Index(v.Values, e) != i {
			return reject(fmt.Sprintf("%s.values[%d]", field, i), "%s.values[%d] %q is listed twice", field, i, e)
		}
	}
	if v.Default != nil {
		if _, err := v.Value(field+".default", v.Default); err != nil {
			return err
		}
	}
	return nil
}

// Value checks a JSON value given for the variable and formats it as it is substituted:
// integers and numbers in plain decimal, an enum as listed, a string as given. field names the
// value in errors (params.variables.height).
func (v Variable) Value(field string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	quoted := problem.Shorten(string(raw)) // the value as a refusal shows it
	switch v.Type {
	case Integer, Number:
		var f float64
		if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &f) != nil {
			return "", reject(field, "%s must be a %s, not %s", field, v.Type, quoted)
		}
		if v.Type == Integer && f != math.Trunc(f) {
			return "", reject(field, "%s must be an integer, not %s", field, quoted)
		}
		if f < *v.Min || f > *v.Max {
			return "", reject(field, "%s %s is out of range: %v to %v", field, quoted, *v.Min, *v.Max)
		}
		return formatNumber(f), nil
	case Enum:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || !slices.Contains(v.Values, s) {
			return "", reject(field, "%s %s is not one of %s", field, quoted, strings.Join(v.Values, ", "))
		}
		return s, nil
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", reject(field, "%s must be a string, not %s", field, quoted)
	}
	return s, v.checkString(field, s)
}

func formatNumber(f float64) string {
	if f == math.Trunc(f) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func (v Variable) maxLength() int {
	if v.MaxLength == 0 {
		return MaxStringLength
	}
	return v.MaxLength
}

// checkString holds what a string may be anywhere it stands: never empty, never a flag, never
// a control character, and not over its maxLength.
func (v Variable) checkString(field, s string) error {
	switch n := len([]rune(s)); {
	case n == 0:
		return reject(field, "%s is empty", field)
	case n > v.maxLength():
		return reject(field, "%s is %d characters, over its maxLength %d", field, n, v.maxLength())
	case s[0] == '-':
		return reject(field, "%s %q starts with '-': a value is never a flag", field, s)
	case strings.ContainsAny(s, "{}"):
		return reject(field, "%s %q holds a brace: a value never forms a placeholder", field, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			if r == '\n' || r == '\r' {
				return reject(field, "%s holds a newline: a value is one line", field)
			}
			return reject(field, "%s holds a control character %U", field, r)
		}
	}
	return nil
}

// filterSyntax are the characters that end a filter option or a filter, quote or escape in a
// filter graph, and the shell-level quotes: a string standing as a filter option's value holds
// none of them.
const filterSyntax = ":,;[]='\\\"`$"

// checkFilterString is checkString for a string standing as a filter option's value.
func (v Variable) checkFilterString(field, s string) error {
	if err := v.checkString(field, s); err != nil {
		return err
	}
	for _, r := range s {
		if strings.ContainsRune(filterSyntax, r) || unicode.IsSpace(r) {
			return reject(field, "%s %q holds %q, which would end a filter option here: a filter option's value holds no whitespace nor any of %s", field, s, r, filterSyntax)
		}
	}
	return nil
}
