// Package mcpserver is the MCP access point at /mcp: the spec's six tools and validate_command over the same use cases, API keys,
// rate limit and error codes as the REST API, served with the official Go SDK's streamable HTTP
// transport.
package mcpserver
