package validator

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// shellQuote writes a word so that split reads it back unchanged.
func shellQuote(w string) string {
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// FuzzSplit: the tokenizer never panics, never returns more than MaxArgs words, and what it
// returns survives a round trip through single quotes.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"ffmpeg -i a b", `ffmpeg "a b" 'c d' e\ f`, "ffmpeg $(id)", "ffmpeg 'x", `ffmpeg "\$x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		words, err := split(command)
		if err != nil {
			if err.Layer != layerSyntax || err.Message == "" {
				t.Fatalf("split(%q) error %+v", command, err)
			}
			return
		}
		if len(words) > MaxArgs {
			t.Fatalf("split(%q) returned %d words", command, len(words))
		}
		quoted := make([]string, 0, len(words)+1)
		quoted = append(quoted, "ffmpeg")
		for _, w := range words {
			quoted = append(quoted, shellQuote(w))
		}
		again, err := split(strings.Join(quoted, " "))
		if err != nil && err.Message != sprintf("command is %d bytes, over the %d byte limit", len(strings.Join(quoted, " ")), MaxCommandBytes) {
			t.Fatalf("re-split of %q failed: %s", words, err.Message)
		}
		if err == nil {
			if diff := cmp.Diff(words, again); diff != "" {
				t.Fatalf("round trip of %q (-first +second):\n%s", command, diff)
			}
		}
	})
}

// FuzzFilterGraph: the graph and option parsers never panic, and a graph the filters layer
// accepts names only allowlisted filters and never a file-loading option key.
func FuzzFilterGraph(f *testing.F) {
	for _, s := range []string{
		"scale=640:-2", "[0:v][1:v]overlay=10:10[out];[out]null", "'mo'vie=x", `mov\ie=x`,
		"drawtext=text='a\\\\':textfile=x", "sws_flags=a;scale=1:1", "subtitles=s.srt:force_style='A=1,B=2'",
		"drawtext=/text=x", "lut3d=g.cube:tetrahedral", "[in]split[a][b];[a][b]hstack",
	} {
		f.Add(s)
	}
	opts := Options{Inputs: map[string]Input{"s.srt": {Inline: true}, "g.cube": {Inline: true}, "font.ttf": {Inline: true}}}
	f.Fuzz(func(t *testing.T, graph string) {
		nodes, bad := parseGraph(graph)
		for _, n := range nodes {
			if n.hasArgs {
				parseFilterOptions(n.args)
			}
		}
		st := &state{opts: opts}
		if err := st.checkGraph("-vf", graph); err != nil {
			return
		}
		if bad != "" {
			t.Fatalf("graph %q accepted although it does not parse: %s", graph, bad)
		}
		for _, n := range nodes {
			spec := filterTable[n.name]
			if spec == nil {
				t.Fatalf("graph %q accepted with filter %q", graph, n.name)
			}
			if !n.hasArgs {
				continue
			}
			fopts, _ := parseFilterOptions(n.args)
			for _, o := range fopts {
				if strings.Contains(o.key, "/") {
					t.Fatalf("graph %q accepted with option key %q", graph, o.key)
				}
				if use := spec.files[o.key]; use == fileRead {
					_, staged := opts.Inputs[o.value]
					if !staged && (!slices.Contains(st.required, o.value) || checkName(o.value, namePlain) != "") {
						t.Fatalf("graph %q accepted reading %q, neither staged nor required", graph, o.value)
					}
				}
				if !freeText[n.name][o.key] && pathLike(o.value) != "" {
					t.Fatalf("graph %q accepted option value %q", graph, o.value)
				}
			}
		}
		for _, sf := range st.sideFiles {
			if why := checkName(sf.name, namePlain); why != "" {
				t.Fatalf("graph %q accepted writing %q", graph, sf.name)
			}
		}
	})
}

// FuzzValidate: Validate never panics, answers the same twice, and for any accepted command no
// file name outside the work directory survives in the plan.
func FuzzValidate(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.Command, "s.srt", c.Options.Compute)
	}
	f.Fuzz(func(t *testing.T, command, staged, compute string) {
		opts := Options{Compute: compute, AssetURLPrefix: "http://localhost:8080/assets/",
			Inputs: map[string]Input{staged: {Inline: true, ContentSize: 10}, "v.mp4": {URL: "https://h/v.mp4"}}}
		r := Validate(command, opts)
		again := Validate(command, opts)
		if diff := cmp.Diff(r, again); diff != "" {
			t.Fatalf("Validate(%q) is not deterministic:\n%s", command, diff)
		}
		if !r.Valid {
			if r.Err == nil || r.Error == "" || r.Error != r.Err.Message || r.Plan != nil || r.Args != nil {
				t.Fatalf("Validate(%q) refused with a malformed result %+v", command, r)
			}
			return
		}
		checkAccepted(t, command, opts, r)
		for i, a := range r.Plan.Args {
			if i > 0 && r.Plan.Args[i-1] == "-i" && !isLocalInput(a, opts, r) && !strings.ContainsAny(a, "=") {
				t.Fatalf("Validate(%q) accepted input %q that is neither staged, required nor downloaded", command, a)
			}
		}
		for _, name := range r.RequiredInputs {
			if _, staged := opts.Inputs[name]; staged || checkName(name, nameNumbered) != "" {
				t.Fatalf("Validate(%q) requires input %q", command, name)
			}
		}
	})
}

// isLocalInput reports whether an -i value of an accepted plan names a file in the work
// directory: staged, required, downloaded, or a numbered pattern over staged names.
func isLocalInput(a string, opts Options, r Result) bool {
	if _, ok := opts.Inputs[a]; ok {
		return true
	}
	if slices.Contains(r.RequiredInputs, a) {
		return checkName(a, nameNumbered) == ""
	}
	for _, d := range r.Plan.Downloads {
		if d.Name == a {
			return true
		}
	}
	return checkName(a, nameNumbered) == "" && isNumbered(a)
}
