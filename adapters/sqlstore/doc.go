// Package sqlstore keeps jobs, accounts, API keys and assets in SQLite (a file, the embedded
// default) or PostgreSQL (scale-out) through Bun: one Store implements the core's store ports.
package sqlstore
