package accounttest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/account/accounttest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	accounttest.TestStore(t, accounttest.Features{}, func(*testing.T) account.Store { return accounttest.NewMemory() })
}
