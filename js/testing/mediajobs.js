// Test helpers shared by the JavaScript packages' tests (never packed): the real mediajobs
// binary started on a loopback port, and the repository's paths.

import { spawn, execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

// binary is the mediajobs binary under test: MEDIAJOBS_BINARY, or `make build`'s bin/mediajobs.
export const binary = process.env.MEDIAJOBS_BINARY || join(repoRoot, 'bin', 'mediajobs');

// freePort asks the kernel for a free loopback port.
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// cleanEnv is this process's environment without the variables that would change the server
// under test (MEDIAJOBS_*, SSL_CERT_*), plus extra.
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('MEDIAJOBS_') && !k.startsWith('SSL_CERT_')) env[k] = v;
  }
  return { ...env, ...extra };
}

// startMediajobs runs `mediajobs dev` on a free loopback port with a fresh data directory,
// reads the development account's key it prints, and waits for /healthz. stop() ends it with
// SIGTERM (SIGKILL after 15 s) and removes the data directory; log() is what it wrote.
export async function startMediajobs({ env = {}, args = [] } = {}) {
  const data = await mkdtemp(join(tmpdir(), 'mediajobs-js-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const fullEnv = cleanEnv(env);
  const child = spawn(binary, ['dev', '--addr', `127.0.0.1:${port}`, '--data', data, ...args], {
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let exited = null;
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); }));
  child.on('error', (err) => { out += `\nspawn: ${err.message}\n`; });
  child.stdout.on('data', (b) => { out += b; });
  child.stderr.on('data', (b) => { out += b; });

  const server = {
    base,
    data,
    env: fullEnv,
    apiKey: '',
    log: () => out,
    async stop() {
      if (!exited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
        await exit;
        clearTimeout(timer);
      }
      await rm(data, { recursive: true, force: true });
    },
    // createAccount runs `mediajobs accounts create` against the running server's data.
    async createAccount(plan = 'free') {
      const { stdout } = await run(binary, ['accounts', 'create', '--data', data, '--plan', plan], { env: fullEnv });
      return JSON.parse(stdout);
    },
    // metric sums the samples of a Prometheus metric whose labels include every pair of labels.
    async metric(name, labels = {}) {
      const text = await (await fetch(`${base}/metrics`)).text();
      let sum = 0;
      for (const line of text.split('\n')) {
        if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
        if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
          sum += Number(line.slice(line.lastIndexOf(' ') + 1));
        }
      }
      return sum;
    },
  };

  const deadline = Date.now() + 60000;
  for (;;) {
    if (exited) throw new Error(`mediajobs dev exited (${JSON.stringify(exited)}) before it was ready:\n${out}`);
    const key = /API key\s+(mj_\S+)/.exec(out);
    if (key) {
      server.apiKey = key[1];
      try {
        const res = await fetch(`${base}/healthz`);
        await res.arrayBuffer();
        if (res.ok) return server;
      } catch {
        // not listening yet
      }
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`mediajobs dev not ready after 60 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
