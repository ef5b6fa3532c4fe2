package assettest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/asset/assettest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	assettest.TestStore(t, assettest.Features{}, func(*testing.T) asset.Store { return assettest.NewMemory() })
}
