// Package idempotencytest is the shared suite of idempotency.Store, run against every adapter,
// and the in-memory store of tests and embedded uses.
package idempotencytest
