// Package runner is the runner agent: it claims jobs of its compute class, runs each through
// the executor of its type in a fresh work directory, and reports back. It owns no database.
package runner
