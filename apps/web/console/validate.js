// validator.wasm in the browser, the same module the playground runs (see validator/cmd/wasm
// for its ABI): a command is checked as it is typed, with no request to the server.

import { WASI, WASIExit } from '/console/wasi.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

class Validator {
  constructor(module) {
    this.module = module;
    this.instance = null;
    this.stderr = [];
  }

  async start() {
    const wasi = new WASI({ onOutput: (fd, line) => { if (fd === 2) this.stderr.push(line); } });
    const instance = await WebAssembly.instantiate(this.module, wasi.imports(this.module));
    wasi.initialize(instance);
    this.instance = instance;
  }

  async validate(request) {
    if (!this.instance) await this.start();
    this.stderr = [];
    const bytes = encoder.encode(JSON.stringify(request));
    const ex = this.instance.exports;
    try {
      const ptr = ex.alloc(bytes.length) >>> 0;
      if (ptr === 0) throw new Error(`request of ${bytes.length} bytes refused as too large`);
      new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
      const packed = BigInt.asUintN(64, ex.validate(ptr, bytes.length));
      ex.free(ptr);
      if (packed === 0n) throw new Error(`validator.wasm refused the request: ${this.stderr.join('\n') || 'no reason given'}`);
      const rptr = Number(packed >> 32n);
      const rlen = Number(packed & 0xffffffffn);
      const out = decoder.decode(new Uint8Array(ex.memory.buffer, rptr, rlen));
      ex.free(rptr);
      return JSON.parse(out);
    } catch (err) {
      // A trap leaves the Go runtime inside in an unknown state: start afresh next time.
      if (err instanceof WebAssembly.RuntimeError || err instanceof WASIExit) this.instance = null;
      throw err;
    }
  }
}

let loading = null;

// validator loads the module once, on first use.
export function validator() {
  loading ??= (async () => {
    const res = await fetch('/console/validator.wasm');
    if (!res.ok) throw new Error(`validator.wasm: ${res.status} ${(await res.text()).trim()}`);
    const module = res.headers.get('Content-Type') === 'application/wasm'
      ? await WebAssembly.compileStreaming(res)
      : await WebAssembly.compile(await res.arrayBuffer());
    const v = new Validator(module);
    await v.start();
    return v;
  })();
  loading.catch(() => { loading = null; });
  return loading;
}
