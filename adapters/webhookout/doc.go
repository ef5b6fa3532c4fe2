// Package webhookout delivers webhook events: a pool of workers claims due deliveries from the
// store, signs them and POSTs them through the SSRF-guarded client, and records each attempt.
package webhookout
