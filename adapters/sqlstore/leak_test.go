package sqlstore_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
)

// No test of this package leaves a goroutine behind: every store is closed, and the schema
// helper's own pool is closed before the check.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
