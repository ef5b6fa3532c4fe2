package preset_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/problem"
)

func f(v float64) *float64 { return &v }

var env = jobtype.Env{AssetURLPrefix: "https://media.example/assets/"}

// base is a preset with one variable of each type.
func base(command string) *preset.Preset {
	return &preset.Preset{Name: "p", Command: command, Variables: map[string]preset.Variable{}}
}

func withVar(p *preset.Preset, name string, v preset.Variable) *preset.Preset {
	p.Variables[name] = v
	return p
}

var (
	intVar  = preset.Variable{Type: preset.Integer, Min: f(144), Max: f(2160), Default: json.RawMessage("720")}
	textVar = preset.Variable{Type: preset.String, MaxLength: 100, Default: json.RawMessage(`"hello"`)}
	enumVar = preset.Variable{Type: preset.Enum, Values: []string{"libx264", "libx265"}, Default: json.RawMessage(`"libx264"`)}
)

func wantField(t *testing.T, err error, field, contains string) {
	t.Helper()
	var p *problem.Problem
	if !errors.As(err, &p) || p.Code != problem.CodeValidation {
		t.Fatalf("error %v: want a VALIDATION_ERROR", err)
	}
	if p.Field != field {
		t.Errorf("field %q, want %q (message %q)", p.Field, field, p.Message)
	}
	if !strings.Contains(p.Message, contains) {
		t.Errorf("message %q does not say %q", p.Message, contains)
	}
}

// TestPlacementRules: a placeholder stands only where a whole flag value or a filter option's
// value stands; each refusal names the template and the variable.
func TestPlacementRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, command string
		v             preset.Variable
		refused       string // "" when accepted
	}{
		{"whole flag value", "ffmpeg -i in.mp4 -crf {{x}} out.mp4", intVar, ""},
		{"number beside text in a flag value", "ffmpeg -i in.mp4 -b:v {{x}}k out.mp4", intVar, ""},
		{"filter option value", "ffmpeg -i in.mp4 -vf scale=-2:{{x}} out.mp4", intVar, ""},
		{"filter option value by key", "ffmpeg -i in.mp4 -vf scale=w=-2:h={{x}} out.mp4", intVar, ""},
		{"number in a filter expression", "ffmpeg -i in.mp4 -vf 'fps=1/{{x}}' out.mp4", intVar, ""},
		{"string as a drawtext value", "ffmpeg -i in.mp4 -vf drawtext=text={{x}}:fontsize=20 out.mp4", textVar, ""},
		{"enum as a flag value", "ffmpeg -i in.mp4 -c:v {{x}} out.mp4", enumVar, ""},
		{"program name", "{{x}} -i in.mp4 out.mp4", textVar, "program's name"},
		{"placeholder as a flag", "ffmpeg -i in.mp4 -{{x}} 1 out.mp4", textVar, "stands in a flag"},
		{"placeholder as a whole flag", "ffmpeg -i in.mp4 {{x}} out.mp4", textVar, "no flag's value"},
		{"placeholder as an output", "ffmpeg -i in.mp4 -y {{x}}", textVar, "no flag's value"},
		{"placeholder inside an output path", "ffmpeg -i in.mp4 -c copy {{x}}.mp4", intVar, "no flag's value"},
		{"placeholder as an input", "ffmpeg -i {{x}} out.mp4", textVar, "file name -i takes"},
		{"placeholder inside an input path", "ffmpeg -i in{{x}}.mp4 out.mp4", intVar, "file name -i takes"},
		{"placeholder in an HLS name", "ffmpeg -i in.mp4 -f hls -hls_segment_filename s{{x}}_%03d.ts out.m3u8", intVar, "file name -hls_segment_filename"},
		{"placeholder as a filter name", "ffmpeg -i in.mp4 -vf {{x}}=1 out.mp4", textVar, "filter's name"},
		{"placeholder after a filter", "ffmpeg -i in.mp4 -vf scale=1:1,{{x}} out.mp4", textVar, "filter's name"},
		{"placeholder as an option name", "ffmpeg -i in.mp4 -vf scale={{x}}=1 out.mp4", textVar, "option's name"},
		{"placeholder as a label", "ffmpeg -i in.mp4 -filter_complex [0:v]scale=1:1[{{x}}] -map [out] out.mp4", textVar, "link label"},
		{"placeholder in filter quotes", "ffmpeg -i in.mp4 -vf \"drawtext=text='{{x}}'\" out.mp4", textVar, "quotes or escapes"},
		{"string beside text", "ffmpeg -i in.mp4 -metadata title={{x}} out.mp4", textVar, "stands alone"},
		{"string beside text in a filter", "ffmpeg -i in.mp4 -vf drawtext=text=a{{x}} out.mp4", textVar, "stands alone"},
		{"enum beside text", "ffmpeg -i in.mp4 -c:v lib{{x}} out.mp4", enumVar, "stands alone"},
		{"after an unknown flag", "ffmpeg -i in.mp4 -filter_script {{x}} out.mp4", textVar, "no flag's value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := preset.Parse(withVar(base(tc.command), "x", tc.v))
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantField(t, err, "command", tc.refused)
			if err != nil && !strings.Contains(err.Error(), "{{x}}") {
				t.Errorf("message %q does not name {{x}}", err)
			}
		})
	}
}

// TestInjectionValues: values that would become a flag, a path or filter syntax are refused at
// submit, naming params.variables.<name>.
func TestInjectionValues(t *testing.T) {
	t.Parallel()
	flagValue := withVar(base("ffmpeg -i in.mp4 -metadata {{text}} out.mp4"), "text", textVar)
	filterValue := withVar(base("ffmpeg -i in.mp4 -vf drawtext=text={{text}} out.mp4"), "text", textVar)
	for _, tc := range []struct {
		name  string
		p     *preset.Preset
		value string
		says  string
	}{
		{"a flag and a path", flagValue, `"-i /etc/passwd"`, "never a flag"},
		{"a newline", flagValue, `"title=a\nb"`, "newline"},
		{"a control character", flagValue, `"a\u0000b"`, "control character"},
		{"over maxLength", flagValue, `"` + strings.Repeat("x", 101) + `"`, "maxLength"},
		{"empty", flagValue, `""`, "empty"},
		{"an option ended by :", filterValue, `"x:filename=/etc/passwd"`, "':'"},
		{"a filter ended by ,", filterValue, `"a,movie=/etc/passwd"`, "','"},
		{"a chain ended by ;", filterValue, `"a;[0]null"`, "';'"},
		{"a label", filterValue, `"[out]"`, "'['"},
		{"an option key", filterValue, `"fontfile=/etc/passwd"`, "'='"},
		{"a filter quote", filterValue, `"a'b"`, `'\''`},
		{"a filter escape", filterValue, `"a\\b"`, `'\\'`},
		{"whitespace in a filter", filterValue, `"a b"`, "' '"},
		{"a newline in a filter", filterValue, `"a\nb"`, "newline"},
		{"a flag in a filter", filterValue, `"-x"`, "never a flag"},
		{"a number for a string", filterValue, `5`, "must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := preset.Parse(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Substitute(map[string]json.RawMessage{"text": json.RawMessage(tc.value)})
			wantField(t, err, "params.variables.text", tc.says)
		})
	}
}

func TestSubstitute(t *testing.T) {
	t.Parallel()
	p := base("ffmpeg -i in.mp4 -vf \"scale=-2:{{height}},drawtext=text={{title}}\" -c:v {{codec}} -af volume={{gain}} -metadata {{comment}} out.mp4")
	p.Variables = map[string]preset.Variable{
		"height": intVar, "codec": enumVar, "title": textVar,
		"gain":    {Type: preset.Number, Min: f(-10), Max: f(10), Default: json.RawMessage("1.5")},
		"comment": {Type: preset.String},
	}
	c, err := preset.Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		values string
		want   string
		field  string
	}{
		{"defaults", `{"comment":"it's a b"}`,
			`ffmpeg -i in.mp4 -vf scale=-2:720,drawtext=text=hello -c:v libx264 -af volume=1.5 -metadata 'it'\''s a b' out.mp4`, ""},
		{"given", `{"height":480,"codec":"libx265","title":"Hi!","gain":-2,"comment":"x"}`,
			`ffmpeg -i in.mp4 -vf 'scale=-2:480,drawtext=text=Hi!' -c:v libx265 -af volume=-2 -metadata x out.mp4`, ""},
		{"unknown", `{"comment":"x","width":3}`, "", "params.variables.width"},
		{"missing without default", `{}`, "", "params.variables.comment"},
		{"integer as a string", `{"comment":"x","height":"480"}`, "", "params.variables.height"},
		{"integer with a fraction", `{"comment":"x","height":480.5}`, "", "params.variables.height"},
		{"below min", `{"comment":"x","height":100}`, "", "params.variables.height"},
		{"over max", `{"comment":"x","gain":10.5}`, "", "params.variables.gain"},
		{"not in the enum", `{"comment":"x","codec":"libvpx"}`, "", "params.variables.codec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var given map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.values), &given); err != nil {
				t.Fatal(err)
			}
			got, _, err := c.Substitute(given)
			if tc.field != "" {
				wantField(t, err, tc.field, tc.field)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != tc.want {
				t.Errorf("got  %s\nwant %s", got[0], tc.want)
			}
		})
	}
}

// TestCheck: a preset is validated when saved with its sample values through the validator.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		p     *preset.Preset
		field string
		says  string
	}{
		{"a flag outside the allowlist", base("ffmpeg -i in.mp4 -filter_script x out.mp4"), "command", "not allowed"},
		{"an undeclared variable", base("ffmpeg -i in.mp4 -crf {{crf}} out.mp4"), "command", "not a declared variable"},
		{"an unused variable", withVar(base("ffmpeg -i in.mp4 out.mp4"), "crf", intVar), "variables.crf", "used by no template"},
		{"an integer without bounds", withVar(base("ffmpeg -i in.mp4 -crf {{crf}} out.mp4"), "crf", preset.Variable{Type: preset.Integer}), "variables.crf", "min and max"},
		{"a bad default", withVar(base("ffmpeg -i in.mp4 -crf {{crf}} out.mp4"), "crf", preset.Variable{Type: preset.Integer, Min: f(0), Max: f(51), Default: json.RawMessage("99")}), "variables.crf.default", "out of range"},
		{"an enum value that is a flag", withVar(base("ffmpeg -i in.mp4 -c:v {{c}} out.mp4"), "c", preset.Variable{Type: preset.Enum, Values: []string{"-i"}}), "variables.c.values[0]", "not starting with '-'"},
		{"an enum value with filter syntax", withVar(base("ffmpeg -i in.mp4 -c:v {{c}} out.mp4"), "c", preset.Variable{Type: preset.Enum, Values: []string{"a,b"}}), "variables.c.values[0]", "enum value"},
		{"a sample the validator refuses", withVar(base("ffmpeg -i in.mp4 -threads {{n}} out.mp4"), "n", preset.Variable{Type: preset.Integer, Min: f(1), Max: f(1000)}), "command", "n=1000"},
		{"a bad name", &preset.Preset{Name: "A B", Command: "ffmpeg -i in.mp4 out.mp4"}, "name", "not a preset name"},
		{"measured as a variable name", base("ffmpeg -i in.mp4 -af volume={{measured}} out.mp4"), "command", "not a declared variable"},
		{"an unclosed placeholder", base("ffmpeg -i in.mp4 -crf {{crf out.mp4"), "command", "{{ without }}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := preset.Check(tc.p, env)
			wantField(t, err, tc.field, tc.says)
		})
	}
}

// TestBuiltins: every built-in passes the checks a saved preset passes, with all its samples,
// and its {{measured.*}} placeholders are left for the runner.
func TestBuiltins(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, b := range preset.Builtins() {
		names[b.Name] = true
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			c, err := preset.Check(b, env)
			if err != nil {
				t.Fatal(err)
			}
			steps, _, err := c.Substitute(nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.Name, "loudness") != strings.Contains(strings.Join(steps, " "), "{{measured.input_i}}") {
				t.Errorf("measured placeholders: %q", steps)
			}
			if got := strings.Join(b.Inputs, ","); got != "in.mp4" {
				t.Errorf("inputs %q, want in.mp4", got)
			}
		})
	}
	for _, want := range []string{"web-mp4", "hls-ladder", "thumbnail-sprite", "loudness-r128", "gif-preview"} {
		if !names[want] {
			t.Errorf("no built-in %s", want)
		}
	}
}

func TestSpriteIndex(t *testing.T) {
	t.Parallel()
	got := preset.SpriteIndex("sprite.jpg", 10, 160, 90, 2, 2)
	want := "WEBVTT\n\n00:00:00.000 --> 00:00:10.000\nsprite.jpg#xywh=0,0,160,90\n" +
		"\n00:00:10.000 --> 00:00:20.000\nsprite.jpg#xywh=160,0,160,90\n" +
		"\n00:00:20.000 --> 00:00:30.000\nsprite.jpg#xywh=0,90,160,90\n" +
		"\n00:00:30.000 --> 00:00:40.000\nsprite.jpg#xywh=160,90,160,90\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
