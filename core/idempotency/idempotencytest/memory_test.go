package idempotencytest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/idempotency/idempotencytest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	idempotencytest.TestStore(t, idempotencytest.Features{}, func(*testing.T) idempotency.Store { return idempotencytest.NewMemory() })
}
