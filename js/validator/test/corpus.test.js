// The package's answers equal the native validator's, command for command, over the whole
// shared corpus: corpus.jsonl, and the real-world and attack corpora bare and staged.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createValidator } from '../src/index.js';
import { nativeAnswers } from '../../testing/native.js';

describe('the corpus under Node', () => {
  let v;
  let cases;
  before(async () => {
    [v, cases] = await Promise.all([createValidator(), nativeAnswers()]);
  });

  test('every answer is the native one, byte for byte', async () => {
    assert.ok(cases.length > 1000, `only ${cases.length} commands in the corpus`);
    const wrong = [];
    for (const c of cases) {
      const got = await v.validateJSON(c.command, { options: c.options });
      if (got !== c.answer) wrong.push(`${c.name}: ${c.command}\n  node   ${got}\n  native ${c.answer}`);
    }
    assert.deepEqual(wrong, [], `${wrong.length} of ${cases.length} answers differ`);
  });

  // A job's inputs ({ content } or { url } by name) must answer as the validator options they
  // stand for: every case whose options are inputs only is run again with them in a job's shape.
  test('job-shaped inputs answer as the validator options they stand for', async () => {
    // (An input with neither url nor content, or of a negative size, has no job form.)
    const withInputs = cases.filter((c) => c.options.inputs && Object.keys(c.options).length === 1 &&
      Object.values(c.options.inputs).every((i) => (i.inline && !(i.contentSize < 0)) || (!i.inline && i.url)));
    assert.ok(withInputs.length > 400, `only ${withInputs.length} runs with inputs`);
    const wrong = [];
    for (const c of withInputs) {
      const inputs = {};
      for (const [name, input] of Object.entries(c.options.inputs)) {
        inputs[name] = input.inline ? { content: 'x'.repeat(input.contentSize ?? 0) } : { url: input.url };
      }
      const got = await v.validateJSON(c.command, { inputs });
      if (got !== c.answer) wrong.push(`${c.name}\n  node   ${got}\n  native ${c.answer}`);
    }
    assert.deepEqual(wrong, []);
  });

  test('validate and validateSync parse the same answer', async () => {
    for (const c of cases.slice(0, 50)) {
      const want = JSON.parse(c.answer);
      assert.deepEqual(await v.validate(c.command, { options: c.options }), want);
      assert.deepEqual(v.validateSync(c.command, { options: c.options }), want);
    }
  });
});
