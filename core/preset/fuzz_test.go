package preset

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzTemplate reads untrusted templates and values: whatever they hold, a template Parse
// accepts renders, with any value Substitute accepts, to a command of exactly the template's
// words, each literal word unchanged and each word with a placeholder one argument that is
// never a flag.
func FuzzTemplate(f *testing.F) {
	for _, s := range []struct{ command, value string }{
		{"ffmpeg -i in.mp4 -metadata {{v}} out.mp4", "-i /etc/passwd"},
		{"ffmpeg -i in.mp4 -vf drawtext=text={{v}}:x=1 out.mp4", "x:filename=/etc/passwd"},
		{"ffmpeg -i in.mp4 -vf \"drawtext=text={{v}}\" out.mp4", "a,movie=/etc/passwd"},
		{"ffmpeg -i in.mp4 -metadata '{{v}}' out.mp4", "a\nb"},
		{"ffmpeg -i in.mp4 -metadata {{v}} out.mp4", "it's a \"b\" $HOME `x` \\"},
		{"ffmpeg -i in.mp4 -{{v}} out.mp4", "y"},
		{"ffmpeg -i {{v}}.mp4 out.mp4", "x"},
	} {
		f.Add(s.command, s.value)
	}
	f.Fuzz(func(t *testing.T, command, value string) {
		p := &Preset{Name: "fuzz", Command: command, Variables: map[string]Variable{"v": {Type: String}}}
		c, err := Parse(p)
		if err != nil {
			return
		}
		raw, _ := json.Marshal(value)
		out, _, err := c.Substitute(map[string]json.RawMessage{"v": raw})
		if err != nil {
			return
		}
		want := c.templates[0].words
		got, err := splitWords("out", out[0], false)
		if err != nil {
			t.Fatalf("rendered %q does not split: %v", out[0], err)
		}
		if len(got) != len(want) {
			t.Fatalf("template %q with %q: %d words, rendered %q has %d", command, value, len(want), out[0], len(got))
		}
		for i, w := range want {
			g, _ := got[i].literal()
			if l, ok := w.literal(); ok && g != l {
				t.Fatalf("word %d %q became %q", i, l, g)
			}
			if _, ok := w.literal(); !ok && strings.HasPrefix(g, "-") && !strings.HasPrefix(w[0].text, "-") {
				t.Fatalf("word %d became the flag %q", i, g)
			}
		}
	})
}
