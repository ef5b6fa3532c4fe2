package sqlstore

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
)

// TestUnreachable: the errors of a database that went away are ErrUnreachable's (503), a
// client's or the store's own are not. A pooled statement on a connection PostgreSQL closed as
// it stopped reads io.EOF; CI once saw that answered 500.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{fmt.Errorf("sqlstore: key: %w", io.EOF), true},
		{io.ErrUnexpectedEOF, true},
		{syscall.ECONNREFUSED, true},
		{syscall.ECONNRESET, true},
		{errors.New("constraint failed"), false},
		{errNoRow, false},
	} {
		if got := unreachable(tt.err); got != tt.want {
			t.Errorf("unreachable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
