package batchtest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/batch/batchtest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	batchtest.TestStore(t, batchtest.Features{}, func(*testing.T) batchtest.Stores { return batchtest.NewMemory(nil) })
}
