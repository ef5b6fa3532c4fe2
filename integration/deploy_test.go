package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDeployFilesNameRealSettings keeps deploy/ true: every MEDIAJOBS_* variable that its
// systemd units, compose file and Dockerfile set (not the compose file's own ${...} parameters)
// is one that `serve` or `worker` reads (their
// --help names each flag's variable), and every subcommand they start exists.
func TestDeployFilesNameRealSettings(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	variable := regexp.MustCompile(`MEDIAJOBS_[A-Z_]+`)
	for _, cmd := range []string{"serve", "worker"} {
		out, _ := exec.Command(binary, cmd, "--help").CombinedOutput()
		if !strings.Contains(string(out), "MEDIAJOBS_") {
			t.Fatalf("mediajobs %s --help names no variable:\n%s", cmd, out)
		}
		for _, v := range variable.FindAllString(string(out), -1) {
			known[v] = true
		}
	}
	known["MEDIAJOBS_WORKER_TOKEN"] = true // read from the environment only, never a flag
	files, err := filepath.Glob(filepath.Join("..", "deploy", "*"))
	if err != nil {
		t.Fatal(err)
	}
	units, _ := filepath.Glob(filepath.Join("..", "deploy", "systemd", "*.service"))
	files = append(files, units...)
	checked := 0
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// ${MEDIAJOBS_...} in compose.yaml is a parameter of the compose file itself (a port,
		// a directory), substituted before any process sees it; its comments may name one.
		params := map[string]bool{}
		for _, m := range regexp.MustCompile(`\$\{(MEDIAJOBS_[A-Z_]+)`).FindAllStringSubmatch(string(b), -1) {
			params[m[1]] = true
		}
		settings := regexp.MustCompile(`\$\{[^}]*\}`).ReplaceAllString(string(b), "")
		for _, v := range variable.FindAllString(settings, -1) {
			checked++
			if !known[v] && !params[v] {
				t.Errorf("%s sets %s, which neither serve nor worker reads", f, v)
			}
		}
		for _, m := range regexp.MustCompile(`mediajobs (serve|worker|dev|accounts|migrate)\b`).FindAllStringSubmatch(string(b), -1) {
			if out, _ := exec.Command(binary, m[1], "--help").CombinedOutput(); strings.Contains(string(out), "unknown subcommand") {
				t.Errorf("%s starts `mediajobs %s`, which is no subcommand: %s", f, m[1], out)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d variables in deploy/; are the files there?", checked)
	}
}
