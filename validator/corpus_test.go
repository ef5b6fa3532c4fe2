package validator

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// corpusCase is one line of testdata/corpus.jsonl, the corpus shared with the WASM build.
type corpusCase struct {
	Name    string  `json:"name"`
	Command string  `json:"command"`
	Options Options `json:"options"`
	Valid   bool    `json:"valid"`
	Layer   string  `json:"layer"`
	// RequiredInputs are the names a valid command reads that its options do not stage.
	RequiredInputs []string `json:"requiredInputs"`
}

func loadCorpus(tb testing.TB) []corpusCase {
	tb.Helper()
	f, err := os.Open("testdata/corpus.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var cases []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var c corpusCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tb.Fatalf("corpus line %d: %v", line, err)
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return cases
}

func TestCorpus(t *testing.T) {
	t.Parallel()
	cases := loadCorpus(t)
	var valid, invalid int
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Errorf("duplicate corpus name %q", c.Name)
		}
		seen[c.Name] = true
		if c.Valid {
			valid++
		} else {
			invalid++
		}
	}
	if valid < 170 || invalid < 170 {
		t.Errorf("corpus has %d valid and %d invalid commands, want at least 170 of each", valid, invalid)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			r := Validate(c.Command, c.Options)
			if r.Valid != c.Valid {
				t.Fatalf("Validate(%q) valid = %v (error %q), want %v", c.Command, r.Valid, r.Error, c.Valid)
			}
			if c.Valid {
				checkAccepted(t, c.Command, c.Options, r)
				if diff := cmp.Diff(c.RequiredInputs, r.RequiredInputs); diff != "" {
					t.Fatalf("Validate(%q) requiredInputs (-want +got):\n%s", c.Command, diff)
				}
				return
			}
			if r.Err == nil || r.Err.Layer != c.Layer {
				t.Fatalf("Validate(%q) rejected by layer %q (%q), want layer %q", c.Command, r.Err.Layer, r.Error, c.Layer)
			}
		})
	}
}
