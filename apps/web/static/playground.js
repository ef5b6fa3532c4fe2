// The validator playground: runs validator.wasm (see validator/cmd/wasm for its ABI) and
// validates the command on every keystroke. A validation takes microseconds, so there is no
// debounce and no round trip to the server.
//
// For tests and scripts the page exposes:
//   window.mediajobsReady               a Promise that resolves once the module is running
//   window.mediajobsValidate(request)   request: the JSON string {"command", "options", "inputs"};
//                                       returns the JSON string of the result, exactly the
//                                       `data` of POST /ffmpeg/validate.

import { WASI, WASIExit } from './wasi.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Validator owns one module instance and re-creates it after a trap, which leaves the Go
// runtime inside in an unknown state.
class Validator {
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

async function load() {
  const response = await fetch('validator.wasm');
  if (!response.ok) throw new Error(`validator.wasm: ${response.status} ${(await response.text()).trim()}`);
  // compileStreaming compiles while downloading, but insists on the application/wasm type.
  const module = response.headers.get('Content-Type') === 'application/wasm'
    ? await WebAssembly.compileStreaming(response)
    : await WebAssembly.compile(await response.arrayBuffer());
  const v = new Validator(module);
  await v.start();
  return v;
}

const ready = load();
window.mediajobsReady = ready.then(() => true);
window.mediajobsValidate = async (requestJSON) => (await ready).validate(requestJSON);

const $ = (id) => document.getElementById(id);

function show(status, label) {
  $('status').className = `status ${status}`;
  $('status').textContent = label;
}

// latest numbers the renders so that a slow one (after a module restart) never overwrites the
// answer for what is typed now.
let latest = 0;

async function render(v) {
  const seq = ++latest;
  const command = $('command').value;
  const optionsText = $('options').value.trim();
  $('error').hidden = true;
  $('details').hidden = true;
  $('raw').textContent = '';
  if (command.trim() === '') {
    show('empty', 'type a command');
    return;
  }
  const request = { command };
  const inputsText = $('inputs').value.trim();
  if (inputsText !== '') {
    try {
      request.inputs = JSON.parse(inputsText);
    } catch (err) {
      show('failed', 'inputs are not JSON');
      $('error').textContent = err.message;
      $('error').hidden = false;
      return;
    }
  }
  if (optionsText !== '') {
    try {
      request.options = JSON.parse(optionsText);
    } catch (err) {
      show('failed', 'options are not JSON');
      $('error').textContent = err.message;
      $('error').hidden = false;
      return;
    }
  }
  let raw;
  try {
    raw = await v.validate(JSON.stringify(request));
  } catch (err) {
    if (seq !== latest) return;
    show('failed', 'validator failed');
    $('error').textContent = err.message;
    $('error').hidden = false;
    return;
  }
  if (seq !== latest) return;
  $('raw').textContent = raw;
  const result = JSON.parse(raw);
  if (!result.valid) {
    show('invalid', 'invalid');
    $('error').textContent = result.error;
    $('error').hidden = false;
    return;
  }
  show('valid', 'valid');
  $('format').textContent = result.inferredOutputFormat || '—';
  $('args').replaceChildren(...(result.args || []).map((arg) => {
    const li = document.createElement('li');
    li.textContent = arg;
    return li;
  }));
  const required = result.requiredInputs || [];
  $('required').replaceChildren(...required.map((name) => {
    const li = document.createElement('li');
    li.textContent = name;
    return li;
  }));
  $('required-label').hidden = required.length === 0;
  $('required-box').hidden = required.length === 0;
  $('details').hidden = false;
}

ready.then(
  (v) => {
    const update = () => render(v);
    $('command').addEventListener('input', update);
    $('options').addEventListener('input', update);
    $('inputs').addEventListener('input', update);
    update();
  },
  (err) => {
    show('failed', 'validator unavailable');
    $('error').textContent = err.message;
    $('error').hidden = false;
  },
);
