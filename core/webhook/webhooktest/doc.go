// Package webhooktest holds the shared suite of the webhook.Store port and an in-memory Store
// that passes it, for tests of code that uses the port.
//
// A new adapter's test calls TestStore once, with the Features the adapter has and a Constructor
// that returns an empty store of its own on each call:
//
//	webhooktest.TestStore(t, webhooktest.Features{}, func(t *testing.T) webhook.Store { return open(t) })
//
// Each test of the suite is an exported function too (TestClaimDueWithLease, …), so a failure
// names the function to read, and -run selects it by that name.
package webhooktest
