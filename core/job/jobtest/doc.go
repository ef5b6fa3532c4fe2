// Package jobtest holds the shared test suite every job.Store adapter must pass, and an in-memory
// Store for tests of the code above the port. Neither belongs in a production path.
package jobtest
