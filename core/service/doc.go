// Package service holds the application's use cases — submit, read, list, cancel and retry jobs,
// uploads, and the runner's side of a job's life — over the ports they use. It owns no I/O:
// REST, MCP and the runner agent are thin drivers of these methods.
package service
