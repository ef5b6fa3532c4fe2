// Command wasm builds the validator into validator.wasm, a WASI preview 1 reactor that runs the
// same code as the native validator under wazero (adapters/wasmvalidator) and in browsers
// (web/), so that all three answer every command alike.
//
// Build it with `make wasm`, which runs
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o cmd/wasm/validator.wasm ./cmd/wasm
//
// in the validator module.
//
// # ABI
//
// The module imports only wasi_snapshot_preview1 and exports its linear memory as "memory" and
// these functions. Pointers and lengths are byte offsets and counts in that memory.
//
//	_initialize()                        reactor start: runs the Go runtime and package init.
//	                                     Call it once, before anything else.
//	alloc(size u32) -> ptr u32           reserve size bytes (at least 1) and return their address;
//	                                     0 when size exceeds MaxRequest.
//	free(ptr u32)                        release a buffer returned by alloc or validate. Freeing
//	                                     an unknown pointer does nothing.
//	validate(ptr u32, len u32) -> u64    read the request from the first len bytes of the alloc
//	                                     buffer at ptr, validate, and return ptr<<32 | len of a
//	                                     new buffer holding the response. 0 means the call was
//	                                     refused (see below).
//	check(ptr u32, clen u32, rlen u32)   the fast path: the first clen bytes of the alloc buffer at
//	  -> u64                             ptr are the command itself (UTF-8, read in place, no JSON),
//	                                     the next rlen bytes the options: validator.AppendOptions'
//	                                     compact form (what wazero hosts send), the JSON object
//	                                     {"options", "inputs"} of a request (what the browser
//	                                     sends), or nothing (rlen 0, the bare command). It
//	                                     returns ptr<<32 | len of the response, or 0 as validate
//	                                     does. The response buffer belongs to the module and is
//	                                     reused: read it before the next call and do not free it.
//
// A call goes: p = alloc(n); write the n request bytes at p; r = validate(p, n); free(p); read
// uint32(r) bytes at r>>32; free(r>>32). With check, a host keeps one request buffer p for
// many calls: write the command (and options) at p; r = check(p, clen, rlen); read the answer.
//
// The request is the UTF-8 JSON object {"command": "ffmpeg ...", "options": {...}, "inputs": {...}},
// where options is validator.Options in its JSON form and inputs a job's inputs as POST /jobs
// takes them (added to options.inputs); both may be left out (the bare POST /ffmpeg/validate
// case). A malformed inputs map is answered {"valid": false, "error": "inputs...."}. The response is json.Marshal of validator.Result: byte for byte what the native
// validator gives, which is the `data` of POST /ffmpeg/validate.
//
// validate returns 0, and writes the reason on stderr (fd 2), when ptr is not a live alloc
// buffer, len exceeds it, the request is not that JSON object, or the validator panicked. These
// are host bugs or validator bugs, not invalid commands: an invalid command is a response with
// "valid": false. A panic is recovered so that the instance stays usable. Responses are
// validator.AppendValidateJSON, which is json.Marshal's bytes of the Result without reflection.
//
// Buffers are Go slices held in a table until freed. Go's garbage collector does not move
// objects, so an address stays valid while its buffer is in the table. The module is not
// reentrant: a host that validates concurrently uses one instance per goroutine.
package main
