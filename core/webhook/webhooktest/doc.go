// Package webhooktest holds the shared suite of the webhook.Store port (Exercise) and an
// in-memory Store that passes it, for tests of code that uses the port.
package webhooktest
