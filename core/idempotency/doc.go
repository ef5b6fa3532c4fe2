// Package idempotency makes a request safe to repeat: a client names it with an
// Idempotency-Key, and a repeat with the same key and the same body within a day answers the
// first response instead of doing the work again. Store is the port that keeps the keys; Guard
// holds the rules (scope per account, one owner at a time, body fingerprints, expiry).
package idempotency
