package sqlstore_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/webhook"
	"github.com/mediajobs/mediajobs/core/webhook/webhooktest"
)

func TestWebhookStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			webhooktest.TestStore(t, webhooktest.Features{}, func(t *testing.T) webhook.Store { return b.open(t) })
		})
	}
}
