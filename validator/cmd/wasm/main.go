package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"unsafe"
)

// buffers keeps every buffer handed to the host reachable, so the collector neither frees nor
// reuses it while the host may still read or write it. Looking requests up here, rather than
// turning the host's integer into a pointer, also means a wrong pointer from the host is refused
// instead of read.
var buffers = map[uint32][]byte{}

// A validation allocates a few hundred bytes on a live heap of a few megabytes. The collector's
// own pacing is costly in WASM: with one thread and no preemption its mark workers rarely run,
// so a cycle stays open for thousands of validations, all of them paying write barriers and
// marking what they allocate. So the module collects by itself, between calls, each time
// gcEvery more bytes have been allocated: runtime.GC marks to the end at once, and the
// validations in between run with no cycle open (measured: about 12% more validations/s). The
// pacer stays, at four times the live heap, as the bound should a call allocate far more than
// usual (an instance is capped at 64 MiB by its host).
func init() { debug.SetGCPercent(400) }

// gcEvery is how many bytes the module allocates between the collections it runs, checked every
// gcCheckCalls calls (reading the counter costs about as much as a small validation).
const (
	gcEvery      = 4 << 20
	gcCheckCalls = 32
)

var (
	calls      uint32
	allocated  = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocsAtGC uint64
)

// afterCall runs a collection when gcEvery bytes have been allocated since the last one.
func afterCall() {
	if calls++; calls%gcCheckCalls != 0 {
		return
	}
	metrics.Read(allocated)
	if allocated[0].Value.Uint64()-allocsAtGC < gcEvery {
		return
	}
	runtime.GC()
	metrics.Read(allocated)
	allocsAtGC = allocated[0].Value.Uint64()
}

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
	afterCall()
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
	afterCall()
	return uint64(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(out)))))<<32 | uint64(len(out))
}

// keep registers buf and returns its address in linear memory. buf is never empty: an empty
// response cannot happen (it is a JSON object) and alloc rounds 0 up to 1.
func keep(buf []byte) uint32 {
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	buffers[ptr] = buf
	return ptr
}
