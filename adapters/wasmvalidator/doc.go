// Package wasmvalidator runs validator.wasm (validator/cmd/wasm) under wazero, behind the same
// Validator interface as the native validator, for `mediajobs validate --engine wasm` and for
// hosts that load the validator as a module rather than linking it.
package wasmvalidator
