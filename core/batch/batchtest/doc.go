// Package batchtest holds the shared test suite every batch.Store adapter must pass, and an
// in-memory Store for tests of the code above the port. Neither belongs in a production path.
//
// A new adapter's test calls TestStore once, with the Features the adapter has and a Constructor
// that returns an empty store of its own on each call, one that also holds jobs and their outbox
// (Stores):
//
//	batchtest.TestStore(t, batchtest.Features{}, func(t *testing.T) batchtest.Stores { return open(t) })
//
// Each test of the suite is an exported function too (TestCountJobOncePerJob, …), so a failure
// names the function to read, and -run selects it by that name.
package batchtest
