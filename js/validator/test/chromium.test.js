// A sample of the corpus validated in a Chromium page through the package, answer for answer
// the native validator's. Skipped where Debian's chromium is not installed (scripts/deps.sh
// installs it).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nativeAnswers } from '../../testing/native.js';

const chromium = process.env.CHROMIUM || '/usr/bin/chromium';

// The page imports the package as a site would, from /src/index.js, so that its default module
// URL (../validator.wasm) is served beside it, validates the sample and posts its answers back.
const page = `<!doctype html><meta charset="utf-8"><title>validator sample</title>
<script type="module">
import { createValidator } from '/src/index.js';
const post = (body) => fetch('/results', { method: 'POST', body: JSON.stringify(body) });
try {
  const sample = await (await fetch('/sample.json')).json();
  const v = await createValidator();
  const answers = [];
  for (const c of sample) answers.push(await v.validateJSON(c.command, { options: c.options }));
  await post({ userAgent: navigator.userAgent, answers });
} catch (err) {
  await post({ error: String(err && err.stack || err) });
}
</script>`;

test('a sample of the corpus in Chromium equals the native answers', { skip: !existsSync(chromium) && `${chromium} is not installed`, timeout: 180000 }, async () => {
  const cases = await nativeAnswers();
  // Every 4th command, so that each part of the corpus (corpus.jsonl, real-world, attacks,
  // bare and staged) is in the sample.
  const sample = cases.filter((_, i) => i % 4 === 0);
  const files = {
    '/page.html': ['text/html', page],
    '/src/index.js': ['text/javascript', await readFile(new URL('../src/index.js', import.meta.url))],
    '/src/wasi.js': ['text/javascript', await readFile(new URL('../src/wasi.js', import.meta.url))],
    '/validator.wasm': ['application/wasm', await readFile(new URL('../validator.wasm', import.meta.url))],
    '/sample.json': ['application/json', JSON.stringify(sample.map(({ command, options }) => ({ command, options })))],
  };
  let done;
  const results = new Promise((resolve) => { done = resolve; });
  const server = createServer(async (req, res) => {
    if (req.method === 'POST' && req.url === '/results') {
      let body = '';
      for await (const chunk of req) body += chunk;
      res.writeHead(204).end();
      done(JSON.parse(body));
      return;
    }
    const f = files[req.url];
    if (!f) return res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': f[0] }).end(f[1]);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const profile = await mkdtemp(join(tmpdir(), 'validator-chromium-'));
  const browser = spawn(chromium, [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
    '--no-default-browser-check', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--disable-quic', `--user-data-dir=${profile}`,
    `http://127.0.0.1:${server.address().port}/page.html`,
  ], { stdio: ['ignore', 'ignore', 'pipe'], detached: true }); // its own process group: killed whole
  let stderr = '';
  browser.stderr.on('data', (b) => { stderr += b; });
  const exited = new Promise((resolve) => browser.on('exit', resolve));
  try {
    const got = await Promise.race([
      results,
      exited.then((code) => { throw new Error(`chromium exited (${code}) before the page answered:\n${stderr.slice(-4000)}`); }),
      // unref: a timer left running would hold the test's process open after it ends.
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer from the page in 150 s:\n${stderr.slice(-4000)}`)), 150000).unref()),
    ]);
    assert.equal(got.error, undefined, `the page failed: ${got.error}`);
    assert.match(got.userAgent, /Chrome\//);
    assert.equal(got.answers.length, sample.length);
    const wrong = [];
    sample.forEach((c, i) => {
      if (got.answers[i] !== c.answer) wrong.push(`${c.name}: ${c.command}\n  chromium ${got.answers[i]}\n  native   ${c.answer}`);
    });
    assert.deepEqual(wrong, [], `${wrong.length} of ${sample.length} answers differ`);
  } finally {
    // The browser's helpers (renderer, crashpad) write into the profile too: kill the group,
    // and let rm retry while the last of them lets go of it (ENOTEMPTY).
    try { process.kill(-browser.pid, 'SIGKILL'); } catch { browser.kill('SIGKILL'); }
    await exited;
    server.close();
    await rm(profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  }
});
