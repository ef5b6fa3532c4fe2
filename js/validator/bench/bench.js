// Validations per second under Node beside the native validator, on the same commands (the
// whole shared corpus: corpus.jsonl, and the real-world and attack corpora bare and staged),
// on this machine. Not a test: tests never assert on wall time.
//
//   node js/validator/bench/bench.js [rounds] [seconds] [path/to/validator.wasm]
//
// The two are measured in alternating rounds of the given seconds each, and the median of the
// rounds' ratios is reported, so that a machine whose load changes (other work beside it)
// weighs on both alike.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createValidator } from '../src/index.js';
import { repoRoot } from '../../testing/mediajobs.js';
import { nativeAnswers } from '../../testing/native.js';

const run = promisify(execFile);
const rounds = Number(process.argv[2] ?? 7);
const seconds = Number(process.argv[3] ?? 2);
const source = process.argv[4] ? readFileSync(process.argv[4]) : undefined;

const cases = await nativeAnswers();
const v = await createValidator(source);
// The native program is built once, so that a round measures it, not the Go toolchain.
const dir = await mkdtemp(join(tmpdir(), 'validator-bench-'));
const native = join(dir, 'nativeanswers');
await run('go', ['build', '-o', native, './validatortest/cmd/nativeanswers'], { cwd: join(repoRoot, 'validator') });

// The options of a case go as the request's JSON, as a browser page sends them; a bare
// command sends none.
const requests = cases.map((c) => [c.command, Object.keys(c.options).length ? { options: c.options } : {}]);
// One warming pass: the module's first calls grow its heap, and V8 tiers its code up.
for (const [command, r] of requests) v.validateJSONSync(command, r);

function nodeRate() {
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    for (const [command, r] of requests) v.validateJSONSync(command, r);
    n += requests.length;
  }
  return n / ((performance.now() - start) / 1000);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = [];
try {
  for (let i = 0; i < rounds; i++) {
    const node = nodeRate();
    const { stdout } = await run(native, ['-bench', `${seconds}s`]);
    const nat = JSON.parse(stdout).perSecond;
    results.push({ node, native: nat, ratio: nat / node });
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
console.log(JSON.stringify({
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  node: process.version,
  commands: cases.length,
  rounds: results.map((r) => `${Math.round(r.node)}/${Math.round(r.native)} = ${r.ratio.toFixed(2)}x`),
  nodeValidationsPerSecond: Math.round(median(results.map((r) => r.node))),
  nativeValidationsPerSecond: Math.round(median(results.map((r) => r.native))),
  medianNativeOverNode: Number(median(results.map((r) => r.ratio)).toFixed(2)),
}, null, 2));
