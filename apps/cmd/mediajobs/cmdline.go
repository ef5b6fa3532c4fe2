package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The service splits a command into words as a POSIX shell does (and refuses anything a shell
// would expand). mvdan.cc/sh's parser splits the same way and also says where each word lies in
// the text, which is what rewriting one `-i` argument in place needs; a hand-written splitter
// would duplicate the validator's and drift from it.

// word is one word of a command: its value after quote removal and its byte span in the text.
type word struct {
	value      string
	start, end int
	// literal is false for a word a shell would expand ($x, `x`, globs are left as text); such
	// a word is never taken for a local file.
	literal bool
}

// splitCommand splits a one-line command into words.
func splitCommand(command string) ([]word, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, err
	}
	if len(f.Stmts) != 1 {
		return nil, errors.New("not one command")
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(st.Redirs) > 0 || st.Negated || st.Background {
		return nil, errors.New("not a simple command")
	}
	words := make([]word, 0, len(call.Args))
	for _, w := range call.Args {
		wd := word{start: int(w.Pos().Offset()), end: int(w.End().Offset()), literal: isLiteral(w)}
		if wd.literal {
			v, err := expand.Literal(nil, w)
			if err != nil {
				return nil, err
			}
			wd.value = v
		} else {
			wd.value = command[wd.start:wd.end]
		}
		words = append(words, wd)
	}
	return words, nil
}

// isLiteral reports whether w is made only of plain text and quotes.
func isLiteral(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[") {
				return false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return false
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return false
			}
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// joinArgs makes one command line of separate arguments (`mediajobs run -- ffmpeg -i a b`),
// quoting each as a POSIX shell would need.
func joinArgs(args []string) (string, error) {
	quoted := make([]string, len(args))
	for i, a := range args {
		q, err := syntax.Quote(a, syntax.LangPOSIX)
		if err != nil {
			return "", fmt.Errorf("argument %q: %w", a, err)
		}
		quoted[i] = q
	}
	return strings.Join(quoted, " "), nil
}

// localInput is an `-i` argument of a command that names a file on this machine.
type localInput struct {
	path string // as written in the command
	name string // the staged name the job will know it by
}

// findLocalInputs returns the `-i` arguments of command that are files here (exists tells),
// each with a staged name that is not in taken, and the command with those arguments replaced
// by their staged names. A command it cannot split is returned unchanged: the service will say
// what is wrong with it.
func findLocalInputs(command string, taken map[string]bool, exists func(string) bool) (string, []localInput) {
	words, err := splitCommand(command)
	if err != nil {
		return command, nil
	}
	var found []localInput
	byPath := map[string]string{}
	type edit struct {
		start, end int
		name       string
	}
	var edits []edit
	for i := 1; i+1 < len(words); i++ {
		if words[i].value != "-i" {
			continue
		}
		w := words[i+1]
		i++
		if !w.literal || strings.Contains(w.value, "://") || taken[w.value] || !exists(w.value) {
			continue
		}
		name, seen := byPath[w.value]
		if !seen {
			name = stagedName(w.value, taken)
			taken[name] = true
			byPath[w.value] = name
			found = append(found, localInput{path: w.value, name: name})
		}
		if command[w.start:w.end] != name {
			edits = append(edits, edit{w.start, w.end, name})
		}
	}
	// Staged names are made of shell-safe bytes only, so they go in unquoted.
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		command = command[:e.start] + e.name + command[e.end:]
	}
	return command, found
}

// stagedName makes a name the service accepts for a staged input (letters, digits and ._+-, not
// starting with '.' or '-', no "..") from a local path, unique among taken.
func stagedName(path string, taken map[string]bool) string {
	base := filepath.Base(path)
	b := []byte(base)
	for i, c := range b {
		if !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '+') {
			b[i] = '_'
		}
	}
	name := strings.ReplaceAll(string(b), "..", "_")
	if name == "" || name[0] == '.' || name[0] == '-' {
		name = "input_" + name
	}
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	if !taken[name] {
		return name
	}
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for n := 2; ; n++ {
		if c := stem + "-" + strconv.Itoa(n) + ext; !taken[c] {
			return c
		}
	}
}
