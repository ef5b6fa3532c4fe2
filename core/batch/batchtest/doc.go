// Package batchtest holds the shared test suite every batch.Store adapter must pass, and an
// in-memory Store for tests of the code above the port. Neither belongs in a production path.
package batchtest
