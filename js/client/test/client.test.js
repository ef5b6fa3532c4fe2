// @mediajobs/client against the real mediajobs binary: a job submitted, followed to complete
// with its progress and its output downloaded; uploads of each kind of body; a webhook delivery
// verified, during a secret rotation too; and each error code the API answers a client with.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Client, ErrorCode, MediajobsError, operations, verifyWebhook, WebhookVerificationError } from '../src/index.js';
import { startMediajobs } from '../../testing/mediajobs.js';

const run = promisify(execFile);

const MAX_UPLOAD = 1 << 20;
const srt = '1\n00:00:00,000 --> 00:00:01,000\nHello\n';

// receiver is a local HTTPS server that queues the webhook deliveries it gets, raw.
async function startReceiver(dir) {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
  const queue = [];
  const waiting = [];
  const server = createServer({ key: await readFile(key), cert: await readFile(cert) }, async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const delivery = { headers: req.headers, body: Buffer.concat(chunks) };
    res.writeHead(204).end();
    if (waiting.length) waiting.shift()(delivery);
    else queue.push(delivery);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    certFile: cert,
    url: `https://127.0.0.1:${server.address().port}/hooks`,
    // next answers the next delivery whose X-Service-Event is event.
    async next(event, ms = 60000) {
      for (;;) {
        const d = queue.length ? queue.shift() : await Promise.race([
          new Promise((resolve) => waiting.push(resolve)),
          // unref: a timer left running would hold the test's process open after it ends.
          new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${event} delivery in ${ms} ms`)), ms).unref()),
        ]);
        if (d.headers['x-service-event'] === event) return d;
      }
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

// rejectsWith checks that p fails with a MediajobsError of code and status.
async function rejectsWith(p, code, status, match) {
  await assert.rejects(p, (err) => {
    assert.ok(err instanceof MediajobsError, `want a MediajobsError, got ${err}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.status, status, err.message);
    if (match) assert.match(err.apiMessage, match);
    assert.match(err.requestId ?? '', /\S/, 'no X-Request-Id');
    return true;
  });
}

describe('@mediajobs/client against mediajobs', () => {
  let dir;
  let receiver;
  let server;
  let c; // the development account's client: Pro
  let free; // a Free account with no credits

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mediajobs-client-'));
    receiver = await startReceiver(dir);
    // Free accounts start with no credits here, so that INSUFFICIENT_CREDITS can be reached.
    const pricing = JSON.parse(await readFile(new URL('../../../core/billing/pricing.json', import.meta.url), 'utf8'));
    pricing.plans.free.starterGrant = 0;
    await writeFile(join(dir, 'pricing.json'), JSON.stringify(pricing));
    server = await startMediajobs({
      args: ['--max-upload', String(MAX_UPLOAD)],
      env: {
        MEDIAJOBS_PRICING: join(dir, 'pricing.json'),
        // The receiver is on loopback, with its own certificate.
        MEDIAJOBS_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
        SSL_CERT_FILE: receiver.certFile,
      },
    });
    c = new Client({ baseUrl: server.base, apiKey: server.apiKey });
    free = new Client({ baseUrl: server.base, apiKey: (await server.createAccount('free')).apiKey });
  });

  after(async () => {
    await server?.stop();
    await receiver?.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('a job submitted, followed to complete with progress, and its output downloaded', async () => {
    // Paced at real time (-re): 2 s however fast the machine, so that the first poll, however
    // late a loaded machine schedules it, sees the job before its end.
    const created = await c.submit({
      type: 'ffmpeg',
      params: { command: 'ffmpeg -re -f lavfi -i testsrc=duration=2:size=320x240:rate=25 -c:v libx264 -preset ultrafast -pix_fmt yuv420p out.mp4' },
    });
    assert.match(created.id, /^job_/);
    assert.equal(created.status, 'waiting');
    const seen = [];
    const job = await c.wait(created.id, { interval: 100, maxInterval: 200, onProgress: (j) => seen.push([j.status, j.progress]) });
    assert.equal(job.status, 'complete', JSON.stringify(job.error));
    assert.deepEqual(seen.at(-1), ['complete', undefined]);
    assert.ok(seen.length >= 2, `onProgress heard only ${JSON.stringify(seen)}`);
    for (const [status, progress] of seen) {
      if (progress !== undefined) {
        assert.equal(status, 'running');
        assert.ok(progress >= 0 && progress <= 1, `progress ${progress}`);
      }
    }
    const progresses = seen.map(([, p]) => p).filter((p) => p !== undefined);
    assert.deepEqual(progresses, [...progresses].sort((a, b) => a - b), 'progress went backwards');
    assert.equal(job.cost.currency, 'credits');
    const [file] = job.output.files;
    assert.equal(file.path, 'out.mp4');
    assert.equal(file.type, 'video');
    const bytes = new Uint8Array(await (await c.download(file)).arrayBuffer());
    assert.equal(bytes.length, file.size);
    assert.equal(new TextDecoder().decode(bytes.subarray(4, 8)), 'ftyp');
  });

  test('a job FFmpeg refuses ends failed with RUNNER_ERROR and the tail of its stderr', async () => {
    // libx264 with yuv420p needs even dimensions: the validator accepts it, FFmpeg does not.
    const created = await c.submit({ type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1:size=33x33:rate=5 -c:v libx264 -pix_fmt yuv420p odd.mp4' } });
    const job = await c.wait(created.id, { interval: 100 });
    assert.equal(job.status, 'failed');
    assert.equal(job.error.code, ErrorCode.RUNNER_ERROR);
    assert.equal(job.error.retryable, false);
    assert.match(job.error.detail, /divisible by 2|height not divisible|width not divisible/);
    // A failed job can be retried as a new one.
    const { data: retried } = await c.retryJob(created.id);
    assert.equal(retried.retryOf, created.id);
    await c.wait(retried.id, { interval: 100 });
  });

  test('uploads of a Blob, bytes, a web stream and a Node stream are job inputs', async () => {
    const bodies = {
      'blob.srt': new Blob([srt]),
      'bytes.srt': new TextEncoder().encode(srt),
      'web.srt': new Blob([srt]).stream(),
      'node.srt': Readable.from([Buffer.from(srt.slice(0, 10)), Buffer.from(srt.slice(10))]),
    };
    for (const [name, body] of Object.entries(bodies)) {
      const up = await c.upload(body, { name });
      assert.equal(up.name, name);
      assert.equal(up.size, srt.length);
      assert.match(up.url, /\/assets\/ast_[^/]+\/content$/);
      const content = await c.getAssetContent(up.id);
      assert.equal(await content.text(), srt);
    }
    // A File brings its own name (File is global from Node 20; node:buffer has it in 18).
    const FileClass = globalThis.File ?? (await import('node:buffer')).File;
    const file = new FileClass([srt], 'named.srt');
    const up = await c.upload(file);
    assert.equal(up.name, 'named.srt');
    const created = await c.submit({ type: 'ffmpeg', inputs: { 'in.srt': up.url }, params: { command: 'ffmpeg -i in.srt out.vtt' } });
    const job = await c.wait(created.id, { interval: 100 });
    assert.equal(job.status, 'complete', JSON.stringify(job.error));
    assert.match(await (await c.download(job.output.file)).text(), /^WEBVTT/);
  });

  test('a submit repeated with its Idempotency-Key answers the first job', async () => {
    const job = { type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 one.png' } };
    const a = await c.submit(job, { idempotencyKey: 'js-client-once' });
    const b = await c.submit(job, { idempotencyKey: 'js-client-once' });
    assert.equal(b.id, a.id);
    await rejectsWith(c.submit({ ...job, params: { ...job.params, timeout: 30 } }, { idempotencyKey: 'js-client-once' }),
      ErrorCode.IDEMPOTENCY_KEY_REUSED, 409);
    await c.wait(a.id, { interval: 100 });
  });

  test('a webhook delivery verifies with the endpoint secret, and during a rotation with either', async () => {
    const { data: ep } = await c.createWebhookEndpoint({ name: 'js', url: receiver.url, subscribedEvents: ['job.completed'] });
    assert.match(ep.secret, /^whsec_/);
    const created = await c.submit({ type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 hook.png' } });
    const d = await receiver.next('job.completed');
    const event = await verifyWebhook(ep.secret, d.headers, d.body);
    assert.equal(event.event, 'job.completed');
    assert.equal(event.jobId, created.id);
    // The raw body as a string verifies too; anything else does not.
    await verifyWebhook(ep.secret, d.headers, d.body.toString('utf8'));
    const tampered = Buffer.from(d.body.toString('utf8').replace(created.id, 'job_other'));
    await assert.rejects(verifyWebhook(ep.secret, d.headers, tampered), (e) => e instanceof WebhookVerificationError && e.reason === 'signature-mismatch');
    await assert.rejects(verifyWebhook('whsec_wrong', d.headers, d.body), (e) => e.reason === 'signature-mismatch');
    await assert.rejects(verifyWebhook(ep.secret, d.headers, d.body, { now: Date.now() + 10 * 60 * 1000 }), (e) => e.reason === 'timestamp');
    await assert.rejects(verifyWebhook(ep.secret, { ...d.headers, 'x-service-signature': undefined }, d.body), (e) => e.reason === 'signature-missing');

    // Rotation: deliveries carry the new secret's signature and the old one's; a receiver that
    // still has only the old secret, or already only the new one, verifies them.
    const { data: rotated } = await c.rotateWebhookSecret(ep.id);
    assert.notEqual(rotated.secret, ep.secret);
    await c.testWebhookEndpoint(ep.id);
    const t = await receiver.next('webhook.test');
    assert.ok(t.headers['x-service-signature-previous'], 'no X-Service-Signature-Previous during the rotation');
    assert.equal((await verifyWebhook(ep.secret, t.headers, t.body)).endpointId, ep.id);
    assert.equal((await verifyWebhook(rotated.secret, t.headers, t.body)).endpointId, ep.id);
    assert.equal((await verifyWebhook([rotated.secret, ep.secret], t.headers, t.body)).endpointId, ep.id);
    await assert.rejects(verifyWebhook('whsec_neither', t.headers, t.body), WebhookVerificationError);
    await c.wait(created.id, { interval: 100 });
  });

  describe('each error code', () => {
    test('VALIDATION_ERROR names the refused flag', async () => {
      await rejectsWith(c.submit({ type: 'ffmpeg', params: { command: 'ffmpeg -filter_script f.txt -i https://example.com/a.mp4 out.mp4' } }),
        ErrorCode.VALIDATION_ERROR, 400, /-filter_script/);
    });
    test('UNAUTHORIZED without a valid key', async () => {
      await rejectsWith(new Client({ baseUrl: server.base, apiKey: 'mj_wrong' }).getAccount(), ErrorCode.UNAUTHORIZED, 401);
      await rejectsWith(new Client({ baseUrl: server.base }).listJobs(), ErrorCode.UNAUTHORIZED, 401);
    });
    test('NOT_FOUND for a job that is not there', async () => {
      await rejectsWith(c.getJob('job_doesnotexist'), ErrorCode.NOT_FOUND, 404);
    });
    test('CONFLICT for cancelling a finished job', async () => {
      const created = await c.submit({ type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 x.png' } });
      await c.wait(created.id, { interval: 100 });
      await rejectsWith(c.cancelJob(created.id), ErrorCode.CONFLICT, 409);
    });
    test('PLAN_LIMIT for a GPU job on the Free plan', async () => {
      await rejectsWith(free.submit({ type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1 -c:v h264_nvenc out.mp4' } }),
        ErrorCode.PLAN_LIMIT, 403);
    });
    test('INSUFFICIENT_CREDITS for a job the balance does not cover', async () => {
      await rejectsWith(free.submit({ type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1 out.mp4' } }),
        ErrorCode.INSUFFICIENT_CREDITS, 402);
    });
    test('PAYLOAD_TOO_LARGE for an upload over the cap', async () => {
      await rejectsWith(c.upload(new Uint8Array(MAX_UPLOAD + 1), { name: 'big.bin' }), ErrorCode.PAYLOAD_TOO_LARGE, 413);
    });
    test('FORBIDDEN for a download with a forged token', async () => {
      await rejectsWith(c.download(`${server.base}/dl/job_x?token=forged`), ErrorCode.FORBIDDEN, 403);
    });
    test('RATE_LIMITED with Retry-After once the minute is spent, and submit retries after it', async () => {
      const limited = new Client({ baseUrl: server.base, apiKey: (await server.createAccount('free')).apiKey });
      let refusal;
      for (let i = 0; i < 40 && !refusal; i++) {
        try {
          await limited.getAccount();
        } catch (err) {
          refusal = err;
        }
      }
      assert.ok(refusal, 'no refusal in 40 requests on the Free plan');
      assert.equal(refusal.code, ErrorCode.RATE_LIMITED);
      assert.equal(refusal.status, 429);
      assert.ok(refusal.retryAfter > 0 && refusal.retryAfter <= 60, `Retry-After ${refusal.retryAfter}`);
      assert.ok(refusal.retryable);
      // submit waits Retry-After (a request frees every 2 s on Free) and tries again, reaching
      // the next gate: this account has no credits.
      await rejectsWith(limited.submit({ type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1 out.mp4' } }, { retries: 3 }),
        ErrorCode.INSUFFICIENT_CREDITS, 402);
    });
  });

  test('every operation of the document is a method of the client', async () => {
    for (const id of Object.keys(operations)) {
      assert.equal(typeof Client.prototype[id], 'function', `no method ${id}`);
    }
    // A few generated methods as they are called: a query, a path, no body, no auth.
    const page = await c.listJobs({ status: 'complete', limit: 2 });
    assert.ok(page.data.length <= 2 && page.data.every((j) => j.status === 'complete'));
    assert.ok('nextCursor' in page.pagination);
    const { data: verdict } = await new Client({ baseUrl: server.base }).validateFFmpeg({ command: 'ffmpeg -i in.mp4 out.webm' });
    assert.deepEqual(verdict, { valid: true, args: ['-i', 'in.mp4', 'out.webm'], inferredOutputFormat: 'webm', requiredInputs: ['in.mp4'] });
    assert.equal((await c.healthz()).data.status, 'ok');
    const { data: key } = await c.createApiKey();
    assert.match(key.secret, /^mj_/);
    assert.notEqual((await c.revokeApiKey(key.id)).data.revokedAt, null);
  });
});
