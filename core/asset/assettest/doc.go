// Package assettest holds the shared test suite every asset.Store adapter must pass, and an
// in-memory Store for tests of the code above the port. Neither belongs in a production path.
package assettest
