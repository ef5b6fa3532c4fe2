// Validations per second under Node beside the native validator, on the same commands (the
// whole shared corpus: corpus.jsonl, and the real-world and attack corpora bare and staged),
// on this machine. Not a test: tests never assert on wall time.
//
//   node js/validator/bench/bench.js [seconds] [path/to/validator.wasm]

import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { createValidator } from '../src/index.js';
import { nativeAnswers, nativeRate } from '../../testing/native.js';

const seconds = Number(process.argv[2] ?? 5);
const source = process.argv[3] ? readFileSync(process.argv[3]) : undefined;
const cases = await nativeAnswers();
const v = await createValidator(source);

// One warming pass: the module's first calls grow its heap, and V8 tiers its code up.
for (const c of cases) v.validateJSONSync(c.command, { options: c.options });

function measure(run) {
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    for (const c of cases) run(c);
    n += cases.length;
  }
  return n / ((performance.now() - start) / 1000);
}

// The options of a case go as the request's JSON, as a browser page sends them; a bare
// command (no options) sends none.
const sync = measure((c) => v.validateJSONSync(c.command, Object.keys(c.options).length ? { options: c.options } : {}));
const native = await nativeRate(seconds);
const cpu = cpus()[0]?.model ?? 'unknown';
console.log(JSON.stringify({
  cpu,
  cores: cpus().length,
  commands: cases.length,
  nodeValidationsPerSecond: Math.round(sync),
  nativeValidationsPerSecond: Math.round(native),
  nativeOverNode: Number((native / sync).toFixed(2)),
}, null, 2));
