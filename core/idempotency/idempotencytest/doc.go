// Package idempotencytest is the shared suite of idempotency.Store, run against every adapter,
// and the in-memory store of tests and embedded uses.
//
// A new adapter's test calls TestStore once, with the Features the adapter has and a Constructor
// that returns an empty store of its own on each call:
//
//	idempotencytest.TestStore(t, idempotencytest.Features{}, func(t *testing.T) idempotency.Store { return open(t) })
//
// Each test of the suite is an exported function too (TestConcurrentReserve, …), so a failure
// names the function to read, and -run selects it by that name.
package idempotencytest
