// Package mcpserver is the MCP access point at /mcp: the spec's six tools and validate_command over the same use cases, API keys,
// rate limit and error codes as the REST API, served with the official Go SDK's streamable HTTP
// transport.
//
// The rate limit is spent per tools/call message, at the HTTP layer, before the SDK sees the
// POST: each one spends a request of the account's per-minute budget through the gate REST
// calls (one budget per account), and over it the POST is answered as REST answers, 429
// RATE_LIMITED with Retry-After, RateLimit-* headers and the error envelope, with no tool run.
// Protocol traffic (initialize, tools/list, notifications) spends nothing. A tool's own
// refusals stay tool results with isError.
package mcpserver
