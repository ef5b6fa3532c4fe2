// A WASI preview 1 shim with just what a Go wasip1 reactor such as validator.wasm needs: no
// arguments, no environment, no files and no preopened directories; stdout and stderr go to
// onOutput (the console by default); clocks and randomness come from the host's web APIs
// (performance, Date, crypto.getRandomValues), which browsers, Node, Deno and Workers-style
// edge runtimes all have. Every other call answers ENOSYS rather than failing the
// instantiation, so a new import in a future Go release degrades to an error code the Go runtime
// already handles. No Node built-in is used.

const ERRNO_SUCCESS = 0;
const ERRNO_BADF = 8;
const ERRNO_INVAL = 28;
const ERRNO_NOSYS = 52;
const ERRNO_SPIPE = 70;

const CLOCK_REALTIME = 0;
const CLOCK_MONOTONIC = 1;
const FILETYPE_CHARACTER_DEVICE = 2;
const EVENTTYPE_CLOCK = 0;
const SUBCLOCKFLAG_ABSTIME = 1;
const STDIN = 0, STDOUT = 1, STDERR = 2;

// proc_exit unwinds the module's stack with this; the module is unusable afterwards.
export class WASIExit extends Error {
  constructor(code) {
    super(`wasm module exited with status ${code}`);
    this.code = code;
  }
}

export class WASI {
  // onOutput(fd, line) receives each line written to stdout (1) or stderr (2). random fills a
  // Uint8Array with random bytes: crypto.getRandomValues where the host has it.
  constructor({
    onOutput = (fd, line) => (fd === STDERR ? console.warn : console.log)(line),
    random = (bytes) => globalThis.crypto.getRandomValues(bytes),
  } = {}) {
    this.onOutput = onOutput;
    this.random = random;
    this.memory = null;
    // skew is how far the monotonic clock runs ahead of real time: the sum of the sleeps.
    this.skew = 0n;
    this.pending = { [STDOUT]: '', [STDERR]: '' };
    // One decoder per stream, in streaming mode, so a character split across writes survives.
    this.decoders = { [STDOUT]: new TextDecoder(), [STDERR]: new TextDecoder() };
  }

  // imports returns the import object for module: the calls below, and an ENOSYS stub for any
  // other wasi_snapshot_preview1 import the module declares.
  imports(module) {
    const impl = this.calls();
    const ns = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.module !== 'wasi_snapshot_preview1' || imp.kind !== 'function') continue;
      ns[imp.name] = impl[imp.name] || (() => ERRNO_NOSYS);
    }
    return { wasi_snapshot_preview1: ns };
  }

  // initialize runs the reactor's _initialize: the Go runtime and package init.
  initialize(instance) {
    this.memory = instance.exports.memory;
    instance.exports._initialize();
  }

  monotonic() {
    return BigInt(Math.round(performance.now() * 1e6)) + this.skew;
  }

  // The memory's buffer is replaced when it grows, so views are taken afresh on every call.
  view() { return new DataView(this.memory.buffer); }
  bytes(ptr, len) { return new Uint8Array(this.memory.buffer, ptr, len); }

  calls() {
    const zeroCounts = (countPtr, sizePtr) => {
      const v = this.view();
      v.setUint32(countPtr, 0, true);
      v.setUint32(sizePtr, 0, true);
      return ERRNO_SUCCESS;
    };
    const isStdio = (fd) => fd === STDIN || fd === STDOUT || fd === STDERR;
    return {
      args_sizes_get: zeroCounts,
      args_get: () => ERRNO_SUCCESS,
      environ_sizes_get: zeroCounts,
      environ_get: () => ERRNO_SUCCESS,

      clock_time_get: (id, _precision, timePtr) => {
        let ns;
        if (id === CLOCK_REALTIME) {
          ns = BigInt(Date.now()) * 1000000n;
        } else if (id === CLOCK_MONOTONIC) {
          ns = this.monotonic();
        } else {
          return ERRNO_INVAL;
        }
        this.view().setBigUint64(timePtr, ns, true);
        return ERRNO_SUCCESS;
      },

      random_get: (ptr, len) => {
        // getRandomValues fills at most 64 KiB per call.
        for (let off = 0; off < len; off += 65536) {
          this.random(this.bytes(ptr + off, Math.min(65536, len - off)));
        }
        return ERRNO_SUCCESS;
      },

      fd_write: (fd, iovs, iovsLen, nwrittenPtr) => {
        if (fd !== STDOUT && fd !== STDERR) return ERRNO_BADF;
        const v = this.view();
        let n = 0;
        for (let i = 0; i < iovsLen; i++) {
          const ptr = v.getUint32(iovs + i * 8, true);
          const len = v.getUint32(iovs + i * 8 + 4, true);
          this.output(fd, this.bytes(ptr, len));
          n += len;
        }
        v.setUint32(nwrittenPtr, n, true);
        return ERRNO_SUCCESS;
      },

      fd_read: (fd, _iovs, _iovsLen, nreadPtr) => {
        if (fd !== STDIN) return ERRNO_BADF;
        this.view().setUint32(nreadPtr, 0, true); // stdin is empty: end of file.
        return ERRNO_SUCCESS;
      },

      fd_fdstat_get: (fd, statPtr) => {
        if (!isStdio(fd)) return ERRNO_BADF;
        const v = this.view();
        v.setUint8(statPtr, FILETYPE_CHARACTER_DEVICE);
        v.setUint16(statPtr + 2, 0, true); // fs_flags
        v.setBigUint64(statPtr + 8, 0xffffffffffffffffn, true); // rights_base
        v.setBigUint64(statPtr + 16, 0xffffffffffffffffn, true); // rights_inheriting
        return ERRNO_SUCCESS;
      },
      fd_fdstat_set_flags: (fd) => (isStdio(fd) ? ERRNO_SUCCESS : ERRNO_BADF),
      fd_close: (fd) => (isStdio(fd) ? ERRNO_SUCCESS : ERRNO_BADF),
      fd_seek: (fd) => (isStdio(fd) ? ERRNO_SPIPE : ERRNO_BADF),
      // No preopened directories: EBADF on fd 3 is how the Go runtime learns there are none.
      fd_prestat_get: () => ERRNO_BADF,
      fd_prestat_dir_name: () => ERRNO_BADF,

      // A page (or an edge isolate) cannot block, so every subscription is reported as due at once, and a sleep on
      // the monotonic clock moves that clock forward by its length. The Go runtime sleeps while
      // it waits on its own timers (GC, scavenger); answering at once with the clock unmoved
      // would make it spin until the real deadline, stalling the page for up to a second.
      poll_oneoff: (inPtr, outPtr, nsubs, neventsPtr) => {
        const v = this.view();
        for (let i = 0; i < nsubs; i++) {
          const sub = inPtr + i * 48;
          const ev = outPtr + i * 32;
          if (v.getUint8(sub + 8) === EVENTTYPE_CLOCK && v.getUint32(sub + 16, true) === CLOCK_MONOTONIC) {
            const timeout = v.getBigUint64(sub + 24, true);
            const absolute = (v.getUint16(sub + 40, true) & SUBCLOCKFLAG_ABSTIME) !== 0;
            const now = this.monotonic();
            const wait = absolute ? timeout - now : timeout;
            if (wait > 0n) this.skew += wait;
          }
          v.setBigUint64(ev, v.getBigUint64(sub, true), true); // userdata
          v.setUint16(ev + 8, ERRNO_SUCCESS, true); // error
          v.setUint8(ev + 10, v.getUint8(sub + 8)); // type = the subscription's tag
          v.setBigUint64(ev + 16, 0n, true); // fd_readwrite.nbytes
          v.setUint16(ev + 24, 0, true); // fd_readwrite.flags
        }
        v.setUint32(neventsPtr, nsubs, true);
        return ERRNO_SUCCESS;
      },
      sched_yield: () => ERRNO_SUCCESS,

      proc_exit: (code) => {
        throw new WASIExit(code);
      },
    };
  }

  // output buffers a stream until a newline, so each console entry is a whole line.
  output(fd, chunk) {
    const text = this.pending[fd] + this.decoders[fd].decode(chunk, { stream: true });
    const lines = text.split('\n');
    this.pending[fd] = lines.pop();
    for (const line of lines) this.onOutput(fd, line);
  }
}
