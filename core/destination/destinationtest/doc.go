// Package destinationtest holds the shared suite of the destination.Store port; every adapter
// (SQLite, PostgreSQL) runs it:
//
//	destinationtest.TestStore(t, destinationtest.Features{}, func(t *testing.T) destination.Store { return open(t) })
//
// Each test is an exported function, so that -run selects one by the name a failure shows.
package destinationtest
