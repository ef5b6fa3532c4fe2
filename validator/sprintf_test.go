package validator

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSprintf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format string
		args   []any
	}{
		{"plain", nil},
		{"flag %s is not allowed", []any{"-x"}},
		{"input %q is not allowed: it %s", []any{"a\"b\x00é\xff", "is empty"}},
		{"%d of %d%%", []any{3, -4}},
		{"quoting \"$%c\"", []any{byte('\'')}},
		{"%c", []any{byte(0xe9)}},
		{"%v and %x", []any{"a", 10}},
		{"%5s", []any{"a"}},
		{"%s", nil},
		{"%s", []any{"a", "b"}},
		{"%d", []any{"a"}},
		{"%q", []any{'x'}},
		{"%c %d", []any{'é', byte(7)}},
		{"100%", nil},
		{"%q and %q", []any{"in_1.mp4 ~!", "tab\there"}},
		{"%q%q", []any{"", "\x7f\\"}},
	}
	for _, tt := range tests {
		if got, want := sprintf(tt.format, tt.args...), fmt.Sprintf(tt.format, tt.args...); got != want {
			t.Errorf("sprintf(%q, %v) = %q, want %q", tt.format, tt.args, got, want)
		}
	}
}

// FuzzSprintf: for string, int and byte arguments, sprintf is fmt.Sprintf.
func FuzzSprintf(f *testing.F) {
	f.Add("input %q is %s (%d, %c) %%", "a\"b", 3, byte('x'))
	f.Fuzz(func(t *testing.T, format, s string, n int, c byte) {
		if got, want := sprintf(format, s, n, c), fmt.Sprintf(format, s, n, c); got != want {
			t.Fatalf("sprintf(%q) = %q, want %q", format, got, want)
		}
	})
}

// TestSprintfArgTypes holds every call of sprintf, and of the message helpers that pass their
// arguments on to it, to the argument types sprintf takes (string, int, byte, rune): any other
// would print as "?", the price of its arguments not escaping. The check is on the source, so it covers the
// messages no test triggers.
func TestSprintfArgTypes(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("validator", fset, files, info); err != nil {
		t.Fatal(err)
	}
	allowed := func(tp types.Type) bool {
		b, ok := types.Default(tp).(*types.Basic)
		return ok && (b.Kind() == types.String || b.Kind() == types.Int || b.Kind() == types.Byte || b.Kind() == types.Rune)
	}
	calls := 0
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok {
				return true
			}
			fn, ok := info.Uses[id].(*types.Func)
			if !ok || fn.Pkg() == nil || fn.Pkg().Name() != "validator" {
				return true
			}
			sig := fn.Type().(*types.Signature)
			params := sig.Params()
			if !sig.Variadic() || params.Len() < 2 || params.At(params.Len()-2).Name() != "format" {
				return true
			}
			if call.Ellipsis.IsValid() {
				return true // a helper forwarding its own arguments, checked at its callers
			}
			calls++
			for _, arg := range call.Args[params.Len()-1:] {
				if tp := info.Types[arg].Type; !allowed(tp) {
					t.Errorf("%s: %s passes %s to sprintf, which takes string, int, byte and rune arguments only",
						fset.Position(arg.Pos()), id.Name, tp)
				}
			}
			return true
		})
	}
	if calls < 50 {
		t.Errorf("found %d calls of sprintf and its helpers; the check is not looking where it should", calls)
	}
}

// An argument of a type sprintf does not take prints as "?", in fmt's words for the verb.
func TestSprintfOtherTypes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		format string
		args   []any
		want   string
	}{
		{"%d", []any{int64(3)}, "%!d(string=?)"},
		{"%s and %d", []any{"x", 1.5}, "x and %!d(string=?)"},
		{"%s", []any{true}, "?"},
	} {
		if got := sprintf(tt.format, tt.args...); got != tt.want {
			t.Errorf("sprintf(%q, %v) = %q, want %q", tt.format, tt.args, got, tt.want)
		}
	}
}

// newError builds the Error sprintf's message would, whether the message fits in its box or not.
func TestNewError(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"-x", strings.Repeat("é\x00", errorText)} {
		got := newError(layerFlags, "-f", value, "flag %s value %q is %d bytes%c", "-f", value, len(value), byte('!'))
		want := &Error{Layer: layerFlags, Flag: "-f", Value: value, Message: fmt.Sprintf("flag %s value %q is %d bytes%c", "-f", Shortened(value), len(value), byte('!'))}
		if *got != *want {
			t.Errorf("newError = %+v, want %+v", got, want)
		}
	}
}

// A refusal quotes at most MaxQuoted bytes of a value, cut between characters.
func TestQuotedValuesAreShortened(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 1000) // 2 bytes a character: MaxQuoted falls inside one when odd
	got := Shortened(long)
	if !strings.HasSuffix(got, "…") || len(got) > MaxQuoted+len("…") || !utf8.ValidString(got) {
		t.Errorf("Shortened: %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-4:])
	}
	if s := strings.Repeat("a", MaxQuoted); Shortened(s) != s {
		t.Error("a value of MaxQuoted bytes was shortened")
	}
	e := CheckConcatList("list.txt", []byte(strings.Repeat("x", 64<<10)+" y\n"), func(string) bool { return true })
	if e == nil || len(e.Message) > 400 {
		t.Errorf("a 64 KiB directive: %d bytes of message", len(e.Message))
	}
}
