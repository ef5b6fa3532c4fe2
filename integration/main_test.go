package integration

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/contracts"
)

// binary is the mediajobs binary built once for the whole package; contract validates every
// response of the API the tests receive.
var (
	binary   string
	contract *contracts.ResponseValidator
)

// flagGiven reports whether the command line set the flag.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The tests here spend most of their time waiting on processes of their own (a server, FFmpeg
	// in its sandbox, a webhook receiver, a rate-limit window), not on this process's CPU: unless
	// -parallel is given, run twice as many at once as there are CPUs, so that a test that waits
	// a minute on a window does not keep a CPU idle for it.
	flag.Parse()
	if !flagGiven("test.parallel") {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
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
		build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/mediajobs")
		build.Dir = filepath.Join("..", "apps")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: building mediajobs:", err)
			return 1
		}
		// The warm sandboxes' launcher lies beside the binary, as make build puts it.
		if err := testenv.BuildLauncher(filepath.Join(dir, "mediajobs-launcher")); err != nil {
			fmt.Fprintln(os.Stderr, "integration:", err)
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
