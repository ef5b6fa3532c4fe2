// Package client is a typed Go client of the mediajobs API: client.gen.go is generated from
// contracts/openapi.yaml by oapi-codegen (`make client`), and the rest are the helpers every
// caller would otherwise write: New (a client that sends the API key), Submit, Wait (polls a job
// until it ends, with backoff and Retry-After), Upload, Download and VerifyWebhook.
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o client.gen.go ../openapi.yaml
