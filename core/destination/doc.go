// Package destination is the domain of delivery to an account's own S3-compatible bucket: the
// registered Destination with its secret sealed by the server's keys (Keyring), the path template
// a job's outputs are delivered under, the Delivery of a job with its state, and the Store port.
package destination
