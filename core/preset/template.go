package preset

import (
	"fmt"
	"strings"

	"github.com/mediajobs/mediajobs/validator"
)

// A template is an FFmpeg command written as a shell line with {{name}} placeholders. It is split
// into words here, once, the way the validator splits a command (blanks, single and double
// quotes, backslash), and a substituted command is rendered back word by word, each word quoted
// as a whole: a value becomes part of exactly the word its placeholder stood in, whatever it holds.
//
// The placement rules (docs/security.md) say which words and which parts of them a placeholder
// may stand in:
//
//  1. Only in the value of an allowed flag that takes one: never in the first word, a flag, a
//     word that is no flag's value (an output file), nor a word that starts with '-'.
//  2. Never in the value of a flag that names a file (-i, -attach, -passlogfile, the HLS and DASH
//     names): a value never becomes a path.
//  3. In a filter graph (-vf, -af, -filter, -filter_complex, -lavfi), only inside a filter
//     option's value: after '=' or ':', up to ':', ',', ';', '[' or the end; never a filter's
//     name, an option's name, a link label, nor inside the graph's quotes or escapes. A string
//     there holds none of : , ; [ ] = ' \ " ` $ nor whitespace.
//  4. An enum or a string stands alone, as the whole flag value or the whole option value; an
//     integer or a number, which is formatted here as plain decimal, may stand beside literal
//     text (-b:v {{kbps}}k, fps=1/{{interval}}).
//
// {{measured.NAME}} placeholders belong to the runner, which fills them from an earlier
// analysis step's measurements: they are left as they are, and a preset's variables cannot be
// named so.

// MeasuredPrefix begins the placeholders the runner resolves.
const MeasuredPrefix = "measured."

// segment is literal text, or a placeholder when name is set.
type segment struct {
	text string
	name string
}

// word is one argument of a template: its segments, unquoted.
type word []segment

func (w word) literal() (string, bool) {
	var b strings.Builder
	for _, s := range w {
		if s.name != "" {
			return "", false
		}
		b.WriteString(s.text)
	}
	return b.String(), true
}

// template is one parsed command.
type template struct {
	words []word
	// names are the variables the template uses, each once, in order.
	names []string
}

// placement is where a placeholder stands, found when the template is parsed.
type placement struct {
	filter bool // inside a filter option's value
	whole  bool // the whole flag value or the whole option value
}

// parseTemplate splits a template into words and applies the placement rules. field names the
// template in errors (command, steps[1]).
func parseTemplate(field, command string) (template, map[string][]placement, error) {
	words, err := splitTemplate(field, command)
	if err != nil {
		return template{}, nil, err
	}
	t := template{words: words}
	places := map[string][]placement{}
	for i, w := range words {
		for j, s := range w {
			if s.name == "" || strings.HasPrefix(s.name, MeasuredPrefix) {
				continue
			}
			pl, err := place(field, words, i, j)
			if err != nil {
				return template{}, nil, err
			}
			if places[s.name] == nil {
				t.names = append(t.names, s.name)
			}
			places[s.name] = append(places[s.name], pl)
		}
	}
	return t, places, nil
}

// place applies the placement rules to the placeholder w[i][j].
func place(field string, words []word, i, j int) (placement, error) {
	w, name := words[i], words[i][j].name
	refuse := func(why string) error {
		return reject(field, "%s: {{%s}} %s", field, name, why)
	}
	if i == 0 {
		return placement{}, refuse("stands in the program's name")
	}
	if first := w[0]; first.name == "" && strings.HasPrefix(first.text, "-") {
		return placement{}, refuse("stands in a flag: a placeholder stands only in a flag's value")
	}
	flag, ok := words[i-1].literal()
	kind := validator.ValueNone
	if ok {
		kind = validator.ValueOf(flag)
	}
	switch kind {
	case validator.ValueNone:
		return placement{}, refuse("stands where no flag's value is (an output file or a flag): a placeholder stands only in the value of a flag that takes one")
	case validator.ValueFile:
		return placement{}, refuse(fmt.Sprintf("stands in the file name %s takes: a value never becomes a path", flag))
	case validator.ValueGraph:
		return placeFilter(refuse, w, j)
	}
	return placement{whole: len(w) == 1}, nil
}

// filterEnds are the bytes that bound a filter option's value, and the graph's quote and escape.
const filterEnds = "=:,;[]'\\"

// placeFilter finds the option value the placeholder w[j] stands in, in a filter graph: the text
// between the nearest delimiters on either side (0 for the word's start or end).
func placeFilter(refuse func(string) error, w word, j int) (placement, error) {
	var left, right byte
	wholeLeft, wholeRight := j == 0, j == len(w)-1
	for k := j - 1; k >= 0; k-- {
		if s := w[k]; s.name == "" {
			if at := strings.LastIndexAny(s.text, filterEnds); at >= 0 {
				left, wholeLeft = s.text[at], k == j-1 && at == len(s.text)-1
				break
			}
		}
		wholeLeft = false
	}
	for k := j + 1; k < len(w); k++ {
		if s := w[k]; s.name == "" {
			if at := strings.IndexAny(s.text, filterEnds); at >= 0 {
				right, wholeRight = s.text[at], k == j+1 && at == 0
				break
			}
		}
		wholeRight = false
	}
	switch {
	case left == '\'' || left == '\\' || right == '\'' || right == '\\':
		return placement{}, refuse("stands inside a filter graph's quotes or escapes: write the option value bare")
	case left != '=' && left != ':':
		return placement{}, refuse("stands in a filter's name or a link label: a placeholder stands only in a filter option's value, after = or :")
	case right == '=' || right == ']':
		return placement{}, refuse("stands in a filter option's name or a link label: a placeholder stands only in a filter option's value")
	}
	return placement{filter: true, whole: wholeLeft && wholeRight}, nil
}

// splitTemplate splits a template into words like the validator's splitter, with {{name}}
// placeholders as segments of their own wherever they stand, quoted or not.
func splitTemplate(field, command string) ([]word, error) {
	return splitWords(field, command, true)
}

// splitWords splits a command into words, with placeholders as segments when placeholders is
// set and as text otherwise.
func splitWords(field, command string, placeholders bool) ([]word, error) {
	var words []word
	var cur word
	inWord := false
	lit := func(s string) {
		inWord = true
		if n := len(cur); n > 0 && cur[n-1].name == "" {
			cur[n-1].text += s
			return
		}
		cur = append(cur, segment{text: s})
	}
	end := func() {
		if inWord {
			words = append(words, cur)
		}
		cur, inWord = nil, false
	}
	// text adds quoted or unquoted text, with its placeholders.
	text := func(s string) error {
		for {
			open := strings.Index(s, "{{")
			if !placeholders {
				open = -1
			}
			if open < 0 {
				if placeholders && strings.Contains(s, "}}") {
					return reject(field, "%s: }} without {{", field)
				}
				if s != "" {
					lit(s)
				}
				return nil
			}
			closing := strings.Index(s[open:], "}}")
			if closing < 0 {
				return reject(field, "%s: {{ without }}: a placeholder is written {{name}} within one quoted or unquoted run", field)
			}
			name := s[open+2 : open+closing]
			if !variableRE.MatchString(name) && !measuredRE.MatchString(name) {
				return reject(field, "%s: {{%s}} is not a placeholder: a variable's name is a-z, A-Z, 0-9 and '_', starting with a lower-case letter", field, name)
			}
			if s[:open] != "" {
				lit(s[:open])
			}
			inWord = true
			cur = append(cur, segment{name: name})
			s = s[open+closing+2:]
		}
	}
	for i := 0; i < len(command); {
		c := command[i]
		switch {
		case c == ' ' || c == '\t':
			end()
			i++
		case c == '\'':
			closing := strings.IndexByte(command[i+1:], '\'')
			if closing < 0 {
				return nil, reject(field, "%s: a single quote is not closed", field)
			}
			if err := text(command[i+1 : i+1+closing]); err != nil {
				return nil, err
			}
			inWord = true
			i += closing + 2
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(command) && command[j] != '"'; j++ {
				if command[j] == '\\' && j+1 < len(command) && strings.IndexByte("\"\\$`", command[j+1]) >= 0 {
					j++
				}
				b.WriteByte(command[j])
			}
			if j == len(command) {
				return nil, reject(field, "%s: a double quote is not closed", field)
			}
			if err := text(b.String()); err != nil {
				return nil, err
			}
			inWord = true
			i = j + 1
		case c == '\\' && i+1 < len(command):
			lit(command[i+1 : i+2])
			i += 2
		default:
			j := i
			for j < len(command) && strings.IndexByte(" \t'\"\\", command[j]) < 0 {
				j++
			}
			if j == i { // a trailing backslash
				j++
			}
			if err := text(command[i:j]); err != nil {
				return nil, err
			}
			i = j
		}
	}
	end()
	return words, nil
}

// quoteWord writes a word so that a POSIX splitter reads it back as that one word.
func quoteWord(b *strings.Builder, w string) {
	bare := w != "" && w[0] != '#' && w[0] != '~'
	for i := 0; i < len(w) && bare; i++ {
		c := w[i]
		bare = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-+=:,./@%{}", c) >= 0
	}
	if bare {
		b.WriteString(w)
		return
	}
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(w, "'", `'\''`))
	b.WriteByte('\'')
}

// render writes the template with values (formatted, checked) in place of its placeholders;
// {{measured.*}} placeholders stay as written, for the job type to check and the runner to fill.
func (t template) render(values map[string]string) string {
	var b strings.Builder
	for i, w := range t.words {
		if i > 0 {
			b.WriteByte(' ')
		}
		var arg strings.Builder
		for _, s := range w {
			switch {
			case s.name == "":
				arg.WriteString(s.text)
			case strings.HasPrefix(s.name, MeasuredPrefix):
				arg.WriteString("{{" + s.name + "}}")
			default:
				arg.WriteString(values[s.name])
			}
		}
		quoteWord(&b, arg.String())
	}
	return b.String()
}
