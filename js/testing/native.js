// The native validator's answers for the shared corpora, from the Go program
// validator/validatortest/cmd/nativeanswers: MEDIAJOBS_NATIVE_ANSWERS names a file of its
// output (scripts/jstest.sh writes one), or the program is run here.

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './mediajobs.js';

const run = promisify(execFile);

// nativeAnswers returns [{ name, command, options, answer }], answer being the JSON text.
export async function nativeAnswers() {
  let text;
  if (process.env.MEDIAJOBS_NATIVE_ANSWERS) {
    text = await readFile(process.env.MEDIAJOBS_NATIVE_ANSWERS, 'utf8');
  } else {
    ({ stdout: text } = await run('go', ['run', './validatortest/cmd/nativeanswers'], {
      cwd: join(repoRoot, 'validator'),
      maxBuffer: 64 << 20,
    }));
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
  if (lines.length === 0) throw new Error('nativeanswers printed nothing');
  return lines;
}

// nativeRate runs the Go program's -bench for seconds and returns validations per second.
export async function nativeRate(seconds) {
  const { stdout } = await run('go', ['run', './validatortest/cmd/nativeanswers', '-bench', `${seconds}s`], {
    cwd: join(repoRoot, 'validator'),
  });
  return JSON.parse(stdout).perSecond;
}
