// @mediajobs/validator: the FFmpeg command validator of POST /ffmpeg/validate as WebAssembly,
// for browsers, Node, Deno and Workers-style edge runtimes. It runs validator.wasm, the Go
// validator built for WASI (see validator/cmd/wasm for the module's ABI), through the small WASI
// shim beside this file, and answers exactly what the endpoint answers as its `data`, with no
// request to the server. The core path uses web APIs only (WebAssembly, TextEncoder, fetch,
// crypto.getRandomValues); a Node built-in is imported only to read a file: URL.
//
//   const v = await createValidator();              // the validator.wasm of this package
//   const r = await v.validate('ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4', { inputs });
//   // { valid: true, args: [...], inferredOutputFormat: 'mp4', requiredInputs?: [...] }
//   // or { valid: false, error: 'flag -filter_script is not allowed' }

import { WASI, WASIExit } from './wasi.js';

export { WASI, WASIExit };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// The module refuses requests over this size (MaxRequest in validator/cmd/wasm).
const MAX_REQUEST = 1 << 20;

/** The validator.wasm shipped in this package, next to src/. */
export const defaultModuleURL = new URL('../validator.wasm', import.meta.url);

// ValidatorError is a call the module refused or could not answer: a bug in the host or in the
// validator, never an invalid command (that is an answer with valid: false).
export class ValidatorError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ValidatorError';
  }
}

// compileValidator turns what a host has into a compiled module: a WebAssembly.Module (what
// Workers-style runtimes hand you for an imported .wasm), its bytes (ArrayBuffer or a view), a
// Response or a promise of one, or a URL (string or URL; http(s) is fetched, file: is read).
export async function compileValidator(source = defaultModuleURL) {
  source = await source;
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return WebAssembly.compile(source);
  if (typeof Response !== 'undefined' && source instanceof Response) return compileResponse(source);
  if (typeof source === 'string' || source instanceof URL) {
    let url;
    try {
      url = new URL(source, globalThis.location?.href);
    } catch {
      throw new TypeError(`validator.wasm: ${source} is not an absolute URL; pass a URL, the module's bytes or a WebAssembly.Module`);
    }
    if (url.protocol === 'file:') {
      // Node has no fetch of file: URLs. The specifier is a variable so that bundlers for
      // browsers and edges leave this branch, which they never take, alone.
      const fs = 'node:fs/promises';
      const { readFile } = await import(fs);
      return WebAssembly.compile(await readFile(url));
    }
    return compileResponse(await fetch(url));
  }
  throw new TypeError('validator.wasm: the source must be a URL, a Response, bytes or a WebAssembly.Module');
}

// randomSource fills bytes from the host's Web Crypto: the global one, or under Node 18 (where it
// is not global yet) node:crypto's, imported only there.
async function randomSource() {
  if (globalThis.crypto?.getRandomValues) return (bytes) => globalThis.crypto.getRandomValues(bytes);
  const spec = 'node:crypto';
  const { webcrypto } = await import(spec);
  return (bytes) => webcrypto.getRandomValues(bytes);
}

async function compileResponse(response) {
  if (!response.ok) {
    throw new ValidatorError(`validator.wasm: ${response.status} ${(await response.text()).trim()}`);
  }
  // compileStreaming compiles while downloading, but insists on the application/wasm type.
  if (typeof WebAssembly.compileStreaming === 'function' && response.headers.get('Content-Type') === 'application/wasm') {
    return WebAssembly.compileStreaming(response);
  }
  return WebAssembly.compile(await response.arrayBuffer());
}

// createValidator compiles source (see compileValidator; by default this package's
// validator.wasm) and starts one instance of it.
export async function createValidator(source, options = {}) {
  const random = options.random ?? await randomSource();
  const v = new Validator(await compileValidator(source), { ...options, random });
  await v.ready();
  return v;
}

// Validator owns one instance of the module and re-creates it after a trap, which leaves the Go
// runtime inside in an unknown state. An instance runs one call at a time, as JavaScript does.
export class Validator {
  // module is a compiled validator.wasm. onOutput(fd, line) hears what the module writes on
  // stdout (1) and stderr (2); by default stderr goes to console.warn. random(bytes) fills
  // bytes with randomness; by default crypto.getRandomValues.
  constructor(module, { onOutput, random } = {}) {
    if (!(module instanceof WebAssembly.Module)) {
      throw new TypeError('Validator takes a compiled WebAssembly.Module; use createValidator for a URL or bytes');
    }
    this.module = module;
    this.onOutput = onOutput ?? ((fd, line) => { if (fd === 2) console.warn('validator.wasm:', line); });
    this.random = random;
    this.exports = null;
    this.starting = null;
    this.stderr = [];
    this.view = null;
    this.buffer = 0;
    this.capacity = 0;
  }

  // ready starts the instance if it is not running; calls that arrive during a start share it.
  // It is asynchronous because browsers refuse to instantiate large modules synchronously on the
  // main thread.
  async ready() {
    if (this.exports) return;
    this.starting ??= this.start().finally(() => { this.starting = null; });
    await this.starting;
  }

  async start() {
    const wasi = new WASI({
      onOutput: (fd, line) => {
        if (fd === 2) this.stderr.push(line);
        this.onOutput(fd, line);
      },
      ...(this.random && { random: this.random }),
    });
    const instance = await WebAssembly.instantiate(this.module, wasi.imports(this.module));
    wasi.initialize(instance);
    this.exports = instance.exports;
    this.view = null;
    this.buffer = 0;
    this.capacity = 0;
  }

  // validate answers what POST /ffmpeg/validate answers as its data, as an object:
  // { valid: true, args, inferredOutputFormat, requiredInputs? } or { valid: false, error }.
  // inputs are a job's inputs as POST /jobs takes them (a URL string, { url } or { content } by
  // staged name); options are the rest of the job as the validator sees it (outputFormat,
  // compute, timeout, assetUrlPrefix, and inputs in the validator's own form).
  async validate(command, request = {}) {
    return JSON.parse(await this.validateJSON(command, request));
  }

  // validateJSON is validate's answer as the JSON text itself, byte for byte the endpoint's.
  async validateJSON(command, request = {}) {
    await this.ready();
    return this.validateJSONSync(command, request);
  }

  // validateSync is validate without the wait: for hot loops and keystrokes once ready() has
  // resolved. It throws if the instance is being re-created after a trap.
  validateSync(command, request = {}) {
    return JSON.parse(this.validateJSONSync(command, request));
  }

  validateJSONSync(command, { inputs, options } = {}) {
    if (typeof command !== 'string') throw new TypeError('command must be a string');
    if (!this.exports) throw new ValidatorError('validator.wasm is not running: await ready() first');
    this.stderr = [];
    try {
      return this.check(this.exports, command, inputs, options);
    } catch (err) {
      if (err instanceof WebAssembly.RuntimeError || err instanceof WASIExit) {
        this.exports = null;
        this.buffer = 0;
      }
      throw err;
    }
  }

  // check uses the module's fast path: the command is encoded straight into one request buffer
  // kept across calls, options and inputs follow as JSON only when there are any, and the
  // answer is read from the module's own reused buffer.
  check(ex, command, inputs, options) {
    let rest = EMPTY;
    if (inputs !== undefined || options !== undefined) {
      const r = {};
      if (options !== undefined) r.options = options;
      if (inputs !== undefined) r.inputs = inputs;
      rest = encoder.encode(JSON.stringify(r));
    }
    // UTF-8 takes at most three bytes per UTF-16 unit.
    const need = command.length * 3 + rest.length;
    if (need > MAX_REQUEST) {
      // A command this long cannot be valid, but it is the module's answer that says so: try
      // with the exact size before refusing.
      const exact = encoder.encode(command).length + rest.length;
      if (exact > MAX_REQUEST) throw new ValidatorError(`validator.wasm: a request of ${exact} bytes is over the ${MAX_REQUEST}-byte limit`);
    }
    if (!this.buffer || need > this.capacity) {
      if (this.buffer) ex.free(this.buffer);
      this.capacity = Math.min(Math.max(need, 4096), MAX_REQUEST);
      this.buffer = ex.alloc(this.capacity) >>> 0;
      if (this.buffer === 0) throw new ValidatorError(`validator.wasm refused a ${this.capacity}-byte buffer`);
    }
    const mem = this.memory(ex);
    const { read, written } = encoder.encodeInto(command, mem.subarray(this.buffer, this.buffer + this.capacity - rest.length));
    if (read !== command.length) throw new ValidatorError('validator.wasm: the command did not fit its buffer');
    if (rest.length) mem.set(rest, this.buffer + written);
    // check returns an i64, which JavaScript sees as a signed BigInt.
    const packed = BigInt.asUintN(64, ex.check(this.buffer, written, rest.length));
    if (packed === 0n) {
      throw new ValidatorError(`validator.wasm refused the request: ${this.stderr.join('\n') || 'no reason given'}`);
    }
    const ptr = Number(packed >> 32n);
    const len = Number(packed & 0xffffffffn);
    // decode copies; the module reuses its answer buffer on the next call. The call may have
    // grown the memory, which replaces its buffer.
    return decoder.decode(this.memory(ex).subarray(ptr, ptr + len));
  }

  // memory is a view of the module's memory, taken again only when growth replaced its buffer.
  memory(ex) {
    if (this.view?.buffer !== ex.memory.buffer) this.view = new Uint8Array(ex.memory.buffer);
    return this.view;
  }
}

const EMPTY = new Uint8Array(0);
