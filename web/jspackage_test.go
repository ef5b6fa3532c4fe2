package web_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediajobs/mediajobs/web"
)

// TestValidatorPackageCopy checks that the playground and the console load validator.wasm with
// the @mediajobs/validator package itself: static/validator holds a copy of the package's
// files (go:embed cannot reach js/ from this module), and a copy that differs from its source
// in js/validator/src fails here. `go generate ./web` (at the repository root) copies them again.
func TestValidatorPackageCopy(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "js", "validator", "src")
	entries, err := os.ReadDir("static/validator")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(web.ValidatorPackageFiles) {
		t.Errorf("static/validator holds %d files, want the package's %d: %v", len(entries), len(web.ValidatorPackageFiles), web.ValidatorPackageFiles)
	}
	for _, name := range web.ValidatorPackageFiles {
		want, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatalf("the package's %s: %v", name, err)
		}
		got, err := os.ReadFile(filepath.Join("static", "validator", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("static/validator/%s differs from js/validator/src/%s: run `go generate ./web` at the repository root", name, name)
		}
	}
}
