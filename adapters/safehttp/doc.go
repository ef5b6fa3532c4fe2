// Package safehttp provides an HTTP client that refuses private, loopback and reserved addresses
// at dial time (SSRF guard), for downloading job inputs and delivering webhooks.
package safehttp
