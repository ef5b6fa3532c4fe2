package sqlstore_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/destination/destinationtest"
)

func TestDestinationStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			destinationtest.TestStore(t, destinationtest.Features{}, func(t *testing.T) destination.Store { return b.open(t) })
		})
	}
}
