package webhooktest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/webhook/webhooktest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	webhooktest.TestStore(t, webhooktest.Features{}, func(*testing.T) webhook.Store { return webhooktest.NewMemory() })
}
