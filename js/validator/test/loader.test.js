// createValidator takes the module however a host has it, and the package keeps to web APIs.

import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { compileValidator, createValidator, defaultModuleURL, Validator, ValidatorError } from '../src/index.js';

const command = 'ffmpeg -i https://example.com/in.mp4 -vf scale=640:-2 out.webm';
const want = '{"valid":true,"args":["-i","https://example.com/in.mp4","-vf","scale=640:-2","out.webm"],"inferredOutputFormat":"webm"}';

describe('module sources', () => {
  let bytes;
  let server;
  let base;
  before(async () => {
    bytes = await readFile(defaultModuleURL);
    // Serves the module with and without its type (compileStreaming wants application/wasm).
    server = createServer((req, res) => {
      if (req.url === '/typed.wasm') res.writeHead(200, { 'Content-Type': 'application/wasm' }).end(bytes);
      else if (req.url === '/untyped.wasm') res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(bytes);
      else res.writeHead(404).end('no such module');
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  const sources = {
    'the default (this package)': () => undefined,
    'a file: URL': () => defaultModuleURL,
    'a file: URL string': () => defaultModuleURL.href,
    'bytes': () => bytes,
    'an ArrayBuffer': () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    'a WebAssembly.Module': () => new WebAssembly.Module(bytes),
    'a promise of a Response': () => fetch(`${base}/typed.wasm`),
    'an http URL served as application/wasm': () => `${base}/typed.wasm`,
    'an http URL served as another type': () => new URL(`${base}/untyped.wasm`),
  };
  for (const [name, source] of Object.entries(sources)) {
    test(name, async () => {
      const v = await createValidator(source());
      assert.equal(await v.validateJSON(command), want);
    });
  }

  test('a missing module is an error naming the status', async () => {
    await assert.rejects(createValidator(`${base}/nothing.wasm`), (err) => err instanceof ValidatorError && /404 no such module/.test(err.message));
  });
  test('a relative URL outside a page is refused', async () => {
    await assert.rejects(createValidator('validator.wasm'), /not an absolute URL/);
  });
  test('something else is refused', async () => {
    await assert.rejects(compileValidator(42), TypeError);
    assert.throws(() => new Validator(bytes), TypeError);
  });
});

describe('calls', () => {
  let v;
  before(async () => { v = await createValidator(); });

  test('validateSync before the instance runs is refused', () => {
    const cold = new Validator(v.module);
    assert.throws(() => cold.validateSync(command), ValidatorError);
  });
  test('the module draws its randomness from the host, or from the random given', async () => {
    let drawn = 0;
    const seeded = await createValidator(undefined, { random: (bytes) => { drawn += bytes.length; bytes.fill(7); } });
    assert.ok(drawn > 0, 'the Go runtime asked for no random bytes');
    assert.equal(await seeded.validateJSON(command), want);
  });
  test('a command must be a string', async () => {
    await assert.rejects(v.validate(undefined), TypeError);
  });
  test('inputs in a job shape are checked, and required inputs named', async () => {
    assert.deepEqual(await v.validate('ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4', { inputs: { 's.srt': { content: '1' } } }), {
      valid: true,
      args: ['-i', 'in.mp4', '-vf', 'subtitles=s.srt', 'out.mp4'],
      inferredOutputFormat: 'mp4',
      requiredInputs: ['in.mp4'],
    });
    assert.deepEqual(await v.validate('ffmpeg -i a.mp4 b.mp4', { inputs: { 'a.mp4': 5 } }), {
      valid: false,
      error: 'inputs.a.mp4 must be a URL string, {url} or {content}',
    });
  });
  test('a refused command is an answer, not an error', async () => {
    assert.deepEqual(await v.validate('ffmpeg -i /etc/passwd out.mp4'), JSON.parse(await v.validateJSON('ffmpeg -i /etc/passwd out.mp4')));
    assert.equal((await v.validate('ffmpeg -filter_script f -i a.mp4 b.mp4')).valid, false);
  });
  test('a request over the module\'s 1 MiB limit is an error, and the instance goes on', async () => {
    await assert.rejects(v.validate('ffmpeg ' + 'x'.repeat(1 << 20)), ValidatorError);
    assert.equal(await v.validateJSON(command), want);
  });
  test('a long command under the limit is answered', async () => {
    const long = `ffmpeg -i https://example.com/in.mp4 -metadata title=${'é'.repeat(200000)} out.mp4`;
    const r = await v.validate(long);
    assert.equal(typeof r.valid, 'boolean');
    assert.equal(await v.validateJSON(command), want);
  });
  test('non-ASCII commands round-trip', async () => {
    const r = await v.validate('ffmpeg -i https://example.com/in.mp4 -metadata title=日本語 out.mp4');
    assert.ok(r.valid);
    assert.ok(r.args.includes('title=日本語'));
  });
});

// The core path must run where there is no Node: browsers, Deno, Workers-style edges.
test('the package imports no Node built-in statically', async () => {
  const dir = new URL('../src/', import.meta.url);
  for (const name of await readdir(dir)) {
    if (!name.endsWith('.js')) continue;
    const text = await readFile(new URL(name, dir), 'utf8');
    assert.doesNotMatch(text, /^\s*import\s[^;]*from\s+['"](node:|fs|path|crypto|url)/m, `${name} imports a Node module`);
    assert.doesNotMatch(text, /\brequire\(/, `${name} uses require`);
    assert.doesNotMatch(text, /\bprocess\./, `${name} uses process`);
    assert.doesNotMatch(text, /\bBuffer\b/, `${name} uses Buffer`);
  }
});
