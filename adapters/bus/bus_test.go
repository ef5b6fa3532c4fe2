package bus_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/adapters/bus"
	"github.com/mediajobs/mediajobs/adapters/bus/bustest"
)

func TestGoChannel(t *testing.T) {
	t.Parallel()
	bustest.TestBus(t, bustest.Features{}, func(t *testing.T) *bus.Bus {
		b := bus.NewGoChannel(nil)
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
