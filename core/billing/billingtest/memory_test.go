package billingtest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/billing/billingtest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	billingtest.TestLedger(t, billingtest.Features{}, func(*testing.T) billing.Ledger { return billingtest.NewMemory() })
}
