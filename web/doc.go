// Package web serves the browser side of mediajobs: the web console at / (Console), plain ES
// modules over the public API; the validator playground, a page that runs validator.wasm
// through a small WASI shim and validates a command as it is typed (Handler); and the API
// reference, the OpenAPI document rendered by a vendored Redoc (Docs).
package web
