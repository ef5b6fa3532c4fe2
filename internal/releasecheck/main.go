// Command releasecheck proves that a program outside this repository can depend on its modules
// as released, with no replace line and no workspace: it builds a module proxy on disk from the
// checkout (each module zipped with golang.org/x/mod/zip under one test version, its go.mod
// requiring its siblings at that version, as a release tags them), then, with GOWORK=off and
// GOPROXY=file://…, creates a new module that requires github.com/mediajobs/mediajobs at that
// version, builds the embedding example (apps/examples/embed) against it and runs its test,
// which completes one job through the sandboxed runner.
//
//	go run ./internal/releasecheck            # from the repository's root; `make release-check`
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// version is the test version every module is published under.
const version = "v0.0.1-releasecheck"

// modules are the released modules: their directory and path. apps (the binary) and
// integration (the tests) are not libraries.
var modules = []struct{ dir, path string }{
	{".", "github.com/mediajobs/mediajobs"},
	{"core", "github.com/mediajobs/mediajobs/core"},
	{"validator", "github.com/mediajobs/mediajobs/validator"},
	{"adapters", "github.com/mediajobs/mediajobs/adapters"},
	{"contracts", "github.com/mediajobs/mediajobs/contracts"},
}

func main() {
	keep := flag.Bool("keep", false, "keep the proxy and the consumer module, and print where")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("release-check: ")
	if err := run(*keep); err != nil {
		log.Fatal(err)
	}
}

func run(keep bool) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		return errors.New("run from the repository's root")
	}
	tmp, err := os.MkdirTemp("", "mediajobs-release-check-")
	if err != nil {
		return err
	}
	if keep {
		log.Printf("kept in %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	proxy := filepath.Join(tmp, "proxy")
	for _, m := range modules {
		if err := publish(filepath.Join(root, m.dir), m.path, proxy, filepath.Join(tmp, "staging")); err != nil {
			return fmt.Errorf("%s: %w", m.path, err)
		}
	}
	log.Printf("proxy of %d modules at %s under %s", len(modules), proxy, version)
	return consume(root, filepath.Join(tmp, "consumer"), proxy)
}

// publish writes module path, from dir, into the file proxy at proxy: its go.mod (siblings
// required at version, no replace), its zip and its info.
func publish(dir, path, proxy, staging string) error {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Replace {
		if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
			return err
		}
	}
	for _, r := range f.Require {
		if isOurs(r.Mod.Path) {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return err
			}
		}
	}
	f.Cleanup()
	released, err := f.Format()
	if err != nil {
		return err
	}
	// The module's files as a release holds them: the checkout's, with the released go.mod.
	src := filepath.Join(staging, filepath.Base(path))
	if err := copyModule(dir, src); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), released, 0o644); err != nil {
		return err
	}
	esc, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	at := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	var z bytes.Buffer
	if err := zip.CreateFromDir(&z, module.Version{Path: path, Version: version}, src); err != nil {
		return err
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, version, time.Now().UTC().Format(time.RFC3339))
	for name, b := range map[string][]byte{version + ".zip": z.Bytes(), version + ".mod": released,
		version + ".info": []byte(info), "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func isOurs(path string) bool {
	return path == "github.com/mediajobs/mediajobs" || strings.HasPrefix(path, "github.com/mediajobs/mediajobs/")
}

// copyModule copies the files of the module at dir to dst, leaving out nested modules, the
// VCS directory and build outputs.
func copyModule(dir, dst string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own
				}
				switch d.Name() {
				case ".git", "node_modules", "var", "bin", "testdata-local":
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// consume makes a module of its own at dir that requires the root module at version from the
// proxy alone (GOWORK=off, no replace), builds the embedding example in it and runs its test.
func consume(root, dir, proxy string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"main.go", "main_test.go"} {
		b, err := os.ReadFile(filepath.Join(root, "apps", "examples", "embed", name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	gomod := "module example.com/cards\n\ngo 1.26\n\nrequire github.com/mediajobs/mediajobs " + version + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	upstream := "https://proxy.golang.org"
	if p := os.Getenv("GOPROXY"); p != "" && p != "off" {
		upstream = p
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+upstream,
		"GONOSUMDB=github.com/mediajobs/mediajobs", "GONOSUMCHECK=1", "GOPRIVATE=")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"mod", "tidy"},
		{"build", "-o", filepath.Join(dir, "cards"), "."},
		{"test", "-count=1", "-v", "-run", "TestCards", "."},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		log.Printf("go %s", strings.Join(args, " "))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go %s in the outside module: %w", strings.Join(args, " "), err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if bytes.Contains(b, []byte("replace")) {
		return errors.New("the outside module needed a replace line")
	}
	log.Printf("an outside module built the embedding example against %s and completed a job", version)
	return nil
}
