package validator

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkAccepted asserts what every accepted command guarantees, whatever produced it: the JSON
// shape of the answer, and that no name outside the work directory survives in the plan.
func checkAccepted(t *testing.T, command string, opts Options, r Result) {
	t.Helper()
	if r.Err != nil || r.Error != "" || r.Plan == nil {
		t.Fatalf("accepted %q with error %v and plan %v", command, r.Err, r.Plan)
	}
	if r.InferredOutputFormat == "" {
		t.Fatalf("accepted %q without an inferred output format", command)
	}
	var data map[string]any
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	if _, ok := data["error"]; ok {
		t.Fatalf("accepted %q but JSON has error: %s", command, b)
	}
	p := r.Plan
	if len(p.Outputs) == 0 && (p.Pattern != PatternData || !p.Analysis) {
		t.Fatalf("accepted %q without outputs, pattern %q and analysis %v", command, p.Pattern, p.Analysis)
	}
	if p.Pattern == PatternData && len(p.Outputs) > 0 {
		t.Fatalf("accepted %q with pattern data and outputs %q", command, p.Outputs)
	}
	for _, o := range p.Outputs {
		if why := checkName(o, nameNumbered); why != "" {
			t.Fatalf("accepted %q with output %q that %s", command, o, why)
		}
	}
	for _, f := range p.SideFiles {
		if why := checkName(f, nameTemplate); why != "" {
			t.Fatalf("accepted %q with side file %q that %s", command, f, why)
		}
	}
	for _, d := range p.Downloads {
		if why := checkName(d.Name, namePlain); why != "" {
			t.Fatalf("accepted %q with download name %q that %s", command, d.Name, why)
		}
		if !strings.HasPrefix(strings.ToLower(d.URL), "https://") && (opts.AssetURLPrefix == "" || !strings.HasPrefix(d.URL, opts.AssetURLPrefix)) {
			t.Fatalf("accepted %q with download URL %q", command, d.URL)
		}
	}
	if len(p.Args) != len(r.Args) {
		t.Fatalf("accepted %q with plan args %q for args %q", command, p.Args, r.Args)
	}
	for i, a := range p.Args {
		if i > 0 && p.Args[i-1] == "-i" && strings.Contains(a, "://") {
			t.Fatalf("accepted %q but input %q was not replaced by a local name", command, a)
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if name := strings.TrimPrefix(a, "-"); name[0] == '/' {
				t.Fatalf("accepted %q with file-valued flag %q", command, a)
			}
		}
	}
	if p.Compute != "cpu" && p.Compute != "gpu" {
		t.Fatalf("accepted %q with compute %q", command, p.Compute)
	}
	switch p.Pattern {
	case PatternSingle, PatternStream, PatternSet, PatternData:
	default:
		t.Fatalf("accepted %q with pattern %q", command, p.Pattern)
	}
}
