package validator_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/validator/validatortest"
)

// TestRealWorld runs the commands people write (testdata/realworld.jsonl, each with the page
// it comes from) without inputs, where bare names come back as requiredInputs, and with those
// names staged, where none do.
func TestRealWorld(t *testing.T) {
	t.Parallel()
	cases, err := validatortest.RealWorld()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 150 {
		t.Errorf("%d real-world commands, want at least 150", len(cases))
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			t.Errorf("duplicate name %q", c.Name)
		}
		seen[c.Name] = true
		if !strings.HasPrefix(c.Source, "https://") {
			t.Errorf("%s: source %q is not a page", c.Name, c.Source)
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			r := validator.Validate(c.Command, validator.Options{})
			if !r.Valid {
				t.Fatalf("Validate(%q) without inputs refused: %s", c.Command, r.Error)
			}
			if diff := cmp.Diff(c.RequiredInputs, r.RequiredInputs); diff != "" {
				t.Fatalf("Validate(%q) requiredInputs (-want +got):\n%s", c.Command, diff)
			}
			staged := validatortest.Staged(c.Staged())
			r = validator.Validate(c.Command, staged)
			if !r.Valid || len(r.RequiredInputs) > 0 {
				t.Fatalf("Validate(%q) with %q staged: valid %v, error %q, requiredInputs %q", c.Command, c.Staged(), r.Valid, r.Error, r.RequiredInputs)
			}
			if e := r.MissingInputsError(); e != nil {
				t.Fatalf("a job staging everything is refused: %s", e.Message)
			}
		})
	}
}

// TestAttacks runs testdata/attacks.jsonl with and without inputs: each is refused by its layer.
func TestAttacks(t *testing.T) {
	t.Parallel()
	cases, err := validatortest.Attacks()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 100 {
		t.Errorf("%d attacks, want at least 100", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			for _, opts := range []validator.Options{{}, validatortest.Staged(c.Inputs)} {
				r := validator.Validate(c.Command, opts)
				if r.Valid {
					t.Fatalf("Validate(%q) with %d inputs accepted (requiredInputs %q)", c.Command, len(opts.Inputs), r.RequiredInputs)
				}
				if r.Err.Layer != c.Layer {
					t.Fatalf("Validate(%q) refused by %s (%s), want %s", c.Command, r.Err.Layer, r.Error, c.Layer)
				}
			}
		})
	}
}
