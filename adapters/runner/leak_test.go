package runner_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
)

// No test of this package leaves a goroutine behind; the caption tests' shared media server and
// its clients' connections are closed before the check.
// The test binary is also the warm sandboxes' launcher, as the worker's binary is.
func TestMain(m *testing.M) {
	if sandbox.RunLauncher() {
		return
	}
	code := m.Run()
	if shared.srv != nil {
		shared.client.CloseIdleConnections()
		shared.srv.Close()
		_ = os.RemoveAll(shared.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
