// validator.wasm in the browser, shared by the playground (/playground/) and the console
// (/console/): see validator/cmd/wasm for the module's ABI. Validator.validate takes the JSON
// string {"command", "options", "inputs"} and returns the JSON string of the result, exactly
// the `data` of POST /ffmpeg/validate, through the module's fast path (one request buffer kept
// across calls, the answer read from the module's reused buffer).

import { WASI, WASIExit } from './wasi.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Validator owns one module instance and re-creates it after a trap, which leaves the Go
// runtime inside in an unknown state.
export class Validator {
  constructor(module) {
    this.module = module;
    this.instance = null;
    this.starting = null;
    this.stderr = [];
    this.buffer = 0;
    this.capacity = 0;
  }

  // start is asynchronous because browsers refuse to instantiate large modules synchronously
  // on the main thread.
  async start() {
    const wasi = new WASI({
      onOutput: (fd, line) => {
        if (fd === 2) this.stderr.push(line);
        console.warn('validator.wasm:', line);
      },
    });
    const instance = await WebAssembly.instantiate(this.module, wasi.imports(this.module));
    wasi.initialize(instance);
    this.instance = instance;
    this.buffer = 0;
  }

  async validate(requestJSON) {
    if (!this.instance) {
      // Calls that arrive during a restart share it rather than each starting an instance.
      this.starting ??= this.start().finally(() => { this.starting = null; });
      await this.starting;
    }
    this.stderr = [];
    try {
      return this.check(this.instance.exports, JSON.parse(requestJSON));
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError || err instanceof WASIExit) {
        this.instance = null;
        this.buffer = 0;
      }
      throw err;
    }
  }

  // check uses the module's fast path: the command is encoded straight into one request buffer
  // kept across calls, options and inputs follow as JSON only when there are any, and the
  // answer is read from the module's own reused buffer.
  check(ex, request) {
    const command = String(request.command ?? '');
    const restObject = {};
    if (request.options !== undefined) restObject.options = request.options;
    if (request.inputs !== undefined) restObject.inputs = request.inputs;
    const rest = Object.keys(restObject).length ? encoder.encode(JSON.stringify(restObject)) : new Uint8Array(0);
    // UTF-8 takes at most three bytes per UTF-16 unit.
    const need = command.length * 3 + rest.length;
    if (!this.buffer || need > this.capacity) {
      if (this.buffer) ex.free(this.buffer);
      this.capacity = Math.max(need, 4096);
      this.buffer = ex.alloc(this.capacity) >>> 0;
      if (this.buffer === 0) throw new Error(`request of ${need} bytes refused as too large`);
    }
    const { written } = encoder.encodeInto(command, new Uint8Array(ex.memory.buffer, this.buffer, this.capacity));
    new Uint8Array(ex.memory.buffer, this.buffer + written, rest.length).set(rest);
    // check returns an i64, which JavaScript sees as a signed BigInt.
    const packed = BigInt.asUintN(64, ex.check(this.buffer, written, rest.length));
    if (packed === 0n) {
      throw new Error(`validator.wasm refused the request: ${this.stderr.join('\n') || 'no reason given'}`);
    }
    const rptr = Number(packed >> 32n);
    const rlen = Number(packed & 0xffffffffn);
    // decode copies; the module reuses its answer buffer on the next call.
    return decoder.decode(new Uint8Array(ex.memory.buffer, rptr, rlen));
  }
}

// loadValidator fetches and compiles the module at url and starts one instance of it.
export async function loadValidator(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`validator.wasm: ${response.status} ${(await response.text()).trim()}`);
  // compileStreaming compiles while downloading, but insists on the application/wasm type.
  const module = response.headers.get('Content-Type') === 'application/wasm'
    ? await WebAssembly.compileStreaming(response)
    : await WebAssembly.compile(await response.arrayBuffer());
  const v = new Validator(module);
  await v.start();
  return v;
}

