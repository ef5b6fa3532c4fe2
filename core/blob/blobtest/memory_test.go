package blobtest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/blob/blobtest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	blobtest.TestStore(t, blobtest.Features{}, func(*testing.T) blob.Store { return blobtest.NewMemory() })
}
