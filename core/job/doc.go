// Package job holds the Job, its six statuses and the transition table, the Output with its four
// patterns and invariants, the error of a failed job, and the Store and Outbox ports that every
// job store implements.
package job
