package validator

import (
	"encoding/json"
	"net/url"
	"os"
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
		// Every filter whose options take a file, allowed or not.
		"haldclut=/etc/passwd", "[0][1]haldclut=clut=first", "lut3d=file=/etc/passwd", "lut1d=file=../x.cube",
		"movie=/etc/passwd", "amovie='file\\:/x'", "subtitles=s.srt:fontsdir=/etc", "ass=s.srt:fontsdir=fonts",
		"drawtext=fontfile=/x.ttf:textfile=/etc/passwd", "drawtext=font.ttf:hi:../t.txt", "frei0r=distort0r:0.5",
		"ladspa=file=/tmp/x.so:p=amp", "lv2=p=http\\://x", "sendcmd=filename=/etc/passwd", "zmq=bind_address=tcp\\://0:1",
		"curves=psfile=/x.acv", "removelogo=/x.png", "cover_rect=cover=/x.png", "find_rect=object=../o.pgm",
		"vidstabtransform=input=/t.trf", "vidstabdetect=result=/tmp/t.trf", "psnr=stats_file=/tmp/p",
		"libvmaf=model=path=/x.json", "showcqt=fontfile=/x", "firequalizer=dumpfile=/x", "sofalizer=sofa=/x",
		"metadata=mode=print:file=/tmp/m", "signature=filename=/tmp/s", "scale=w=/etc/passwd", "color=c=/dev/zero",
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
			for i, o := range fopts {
				if strings.Contains(o.key, "/") {
					t.Fatalf("graph %q accepted with option key %q", graph, o.key)
				}
				// A positional value is the option it stands for, in declaration order.
				if o.key == "" && i < len(spec.positional) {
					o.key = spec.positional[i]
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
// fuzzChecker is reused by every run of FuzzValidate, as the WASM module reuses its Checker. Fuzz
// runs in one process are sequential.
var fuzzChecker Checker

func FuzzValidate(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.Command, "s.srt", c.Options.Compute)
	}
	for _, file := range []string{"testdata/realworld.jsonl", "testdata/attacks.jsonl"} {
		for _, command := range loadCommands(f, file) {
			f.Add(command, "in.mp4", "")
		}
	}
	f.Fuzz(func(t *testing.T, command, staged, compute string) {
		opts := Options{Compute: compute, AssetURLPrefix: "http://localhost:8080/assets/",
			Inputs: map[string]Input{staged: {Inline: true, ContentSize: 10}, "v.mp4": {URL: "https://h/v.mp4"}}}
		r := Validate(command, opts)
		again := Validate(command, opts)
		if diff := cmp.Diff(r, again); diff != "" {
			t.Fatalf("Validate(%q) is not deterministic:\n%s", command, diff)
		}
		want := r.AppendJSON(nil)
		if got := AppendValidateJSON(nil, command, opts); string(got) != string(want) {
			t.Fatalf("AppendValidateJSON(%q)\n got  %s\n want %s", command, got, want)
		}
		if got := fuzzChecker.AppendValidateJSON(nil, command, opts); string(got) != string(want) {
			t.Fatalf("Checker.AppendValidateJSON(%q)\n got  %s\n want %s", command, got, want)
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

// loadCommands reads the "command" of each line of a JSONL corpus.
func loadCommands(tb testing.TB, path string) []string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c struct{ Command string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		commands = append(commands, c.Command)
	}
	return commands
}

// FuzzSimpleURL holds parseSimpleURL to url.Parse: where it takes a URL, url.Parse accepts it
// with the same scheme and path, a host and no user.
func FuzzSimpleURL(f *testing.F) {
	for _, s := range []string{
		"https://cdn.example.com/a/b.mp4", "https://h:8443/x.m3u8?x=1#y", "https://h?a/b.mp4", "https://h#x/y.mp4",
		"http://localhost:8080/assets/abc/content", "HTTPS://h/a", "https://u@h/a", "https://[::1]/a", "https://h:/a",
		"https://h/a%20b.mp4", "https://h/a b", "https://h./a", "ftp://h/a?",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		scheme, path, ok := parseSimpleURL(raw)
		if !ok {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("parseSimpleURL(%q) took a URL url.Parse refuses: %v", raw, err)
		}
		if u.Scheme != scheme || u.Path != path || u.Host == "" || u.Hostname() == "" || u.User != nil {
			t.Fatalf("parseSimpleURL(%q) = %q, %q; url.Parse: scheme %q path %q host %q user %v",
				raw, scheme, path, u.Scheme, u.Path, u.Host, u.User)
		}
	})
}
