package batchtest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/batch/batchtest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	batchtest.Exercise(t, func(*testing.T) batchtest.Stores { return batchtest.NewMemory(nil) })
}
