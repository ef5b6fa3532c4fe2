// Package validator checks a user-written FFmpeg command through eight security layers and, for an
// accepted command, plans how the runner executes it. It imports only the standard library so that
// it compiles to WASM (cmd/wasm) and runs natively, under wazero and in browsers alike.
package validator
