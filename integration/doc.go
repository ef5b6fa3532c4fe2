// Package integration holds the end-to-end tests and load figures of mediajobs: the real binary,
// real HTTP over loopback, real FFmpeg in the real sandbox, on SQLite and on PostgreSQL.
package integration
