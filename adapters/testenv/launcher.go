package testenv

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BuildLauncher builds the native launcher of warm sandboxes (adapters/sandbox/native/launcher.c)
// at path with scripts/launcher.sh, as make build does, for tests that run it or a binary
// beside it. It needs gcc and libc6-dev, which scripts/deps.sh installs.
func BuildLauncher(path string) error {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return fmt.Errorf("testenv: no source path to find scripts/launcher.sh from")
	}
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "launcher.sh")
	if out, err := exec.Command("bash", script, path).CombinedOutput(); err != nil {
		return fmt.Errorf("testenv: %s %s: %v\n%s", script, path, err, out)
	}
	return nil
}
