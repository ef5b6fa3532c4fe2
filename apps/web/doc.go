// Package web serves the browser side of mediajobs: for now the validator playground, a page that
// runs validator.wasm through a small WASI shim and validates a command as it is typed.
package web
