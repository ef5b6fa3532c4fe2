package sqlstore_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/preset/presettest"
)

func TestPresetStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			presettest.TestStore(t, func(t *testing.T) preset.Store { return b.open(t) })
		})
	}
}
