package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"unsafe"
)

// buffers keeps every buffer handed to the host reachable, so the collector neither frees nor
// reuses it while the host may still read or write it. Looking requests up here, rather than
// turning the host's integer into a pointer, also means a wrong pointer from the host is refused
// instead of read.
var buffers = map[uint32][]byte{}

// A validation allocates a few kilobytes on a live heap of a few megabytes; collecting at four
// times the live heap rather than twice halves the collections, which in WASM cost more than the
// memory (an instance is capped at 64 MiB by its host). Measured: about 15% more validations/s.
func init() { debug.SetGCPercent(400) }

// main never runs: a c-shared wasip1 build is a reactor whose entry point is _initialize.
// The linker still wants a main.main.
func main() {}

//go:wasmexport alloc
func alloc(size uint32) uint32 {
	if size > MaxRequest {
		return 0
	}
	return keep(make([]byte, max(size, 1)))
}

//go:wasmexport free
func free(ptr uint32) {
	delete(buffers, ptr)
}

//go:wasmexport validate
func validate(ptr, length uint32) uint64 {
	buf, ok := buffers[ptr]
	if !ok {
		fmt.Fprintf(os.Stderr, "validator.wasm: validate: %#x is not an alloc buffer\n", ptr)
		return 0
	}
	if int(length) > len(buf) {
		fmt.Fprintf(os.Stderr, "validator.wasm: validate: length %d exceeds the %d-byte buffer at %#x\n", length, len(buf), ptr)
		return 0
	}
	out, err := respond(buf[:length])
	if err != nil {
		fmt.Fprintf(os.Stderr, "validator.wasm: validate: %v\n", err)
		return 0
	}
	return uint64(keep(out))<<32 | uint64(len(out))
}

// out holds the answer of the last check; it is reused, so an answer is valid until the next
// call.
var out []byte

//go:wasmexport check
func check(ptr, commandLen, restLen uint32) uint64 {
	buf, ok := buffers[ptr]
	if !ok {
		fmt.Fprintf(os.Stderr, "validator.wasm: check: %#x is not an alloc buffer\n", ptr)
		return 0
	}
	if uint64(commandLen)+uint64(restLen) > uint64(len(buf)) {
		fmt.Fprintf(os.Stderr, "validator.wasm: check: %d+%d bytes exceed the %d-byte buffer at %#x\n", commandLen, restLen, len(buf), ptr)
		return 0
	}
	var err error
	out, err = checkRequest(out[:0], buf[:commandLen], buf[commandLen:commandLen+restLen])
	if err != nil {
		fmt.Fprintf(os.Stderr, "validator.wasm: check: %v\n", err)
		return 0
	}
	return uint64(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(out)))))<<32 | uint64(len(out))
}

// keep registers buf and returns its address in linear memory. buf is never empty: an empty
// response cannot happen (it is a JSON object) and alloc rounds 0 up to 1.
func keep(buf []byte) uint32 {
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	buffers[ptr] = buf
	return ptr
}
