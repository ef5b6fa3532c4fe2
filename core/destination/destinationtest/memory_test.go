package destinationtest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/destination/destinationtest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	destinationtest.TestStore(t, destinationtest.Features{}, func(*testing.T) destination.Store { return destinationtest.NewMemory() })
}
