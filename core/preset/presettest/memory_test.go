package presettest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/preset"
	"github.com/mediajobs/mediajobs/core/preset/presettest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	presettest.TestStore(t, func(*testing.T) preset.Store { return presettest.NewMemory() })
}
