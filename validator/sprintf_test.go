package validator

import (
	"fmt"
	"testing"
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
		{"%q", []any{int64(3)}},
		{"100%", nil},
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
