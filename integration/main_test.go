package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mediajobs/mediajobs/contracts"
)

// binary is the mediajobs binary built once for the whole package; contract validates every
// response of the API the tests receive.
var (
	binary   string
	contract *contracts.ResponseValidator
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mediajobs-it-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "mediajobs")
	// MEDIAJOBS_BINARY tests a binary built elsewhere (a release build, or on a machine with
	// no Go toolchain, such as a GPU host the tests are copied to).
	if prebuilt := os.Getenv("MEDIAJOBS_BINARY"); prebuilt != "" {
		binary = prebuilt
	} else {
		build := exec.Command("go", "build", "-o", binary, "./cmd/mediajobs")
		build.Dir = filepath.Join("..", "apps")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: building mediajobs:", err)
			return 1
		}
	}
	contract, err = contracts.NewResponseValidator(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	return m.Run()
}
