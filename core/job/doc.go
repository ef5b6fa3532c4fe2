// Package job holds the Job, its six statuses and the spec's transition table, the Output with its
// four patterns and invariants, the error codes, and the Store port that every job store implements.
package job
