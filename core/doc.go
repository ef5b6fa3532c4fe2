// Package core is the pure domain of mediajobs: jobs and their lifecycle, job types, and the ports
// the adapters implement. It imports only the standard library (and validator) so it embeds anywhere.
package core
