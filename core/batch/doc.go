// Package batch holds the Batch (jobs submitted together and counted as they finish) and the
// Store port that keeps batches with their jobs.
package batch
