package webhookout_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test of this package leaves a goroutine behind: whatever a store, a deliverer or a server
// starts, its Close or its context's end stops.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
