// The client's pieces without a server: requests as operations describe them, error reading,
// and webhook verification against an independent HMAC.

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { Client, MediajobsError, verifyWebhook, WebhookVerificationError } from '../src/index.js';

// recorder is a fetch that records each request and answers with respond(request).
function recorder(respond) {
  const calls = [];
  const fetch = async (url, init) => {
    const req = { url: String(url), method: init.method, headers: Object.fromEntries(init.headers), body: init.body, duplex: init.duplex };
    calls.push(req);
    return respond(req);
  };
  return { calls, fetch };
}

const json = (status, body, headers = {}) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });

describe('requests', () => {
  test('path, query and header parameters, the key only where the operation takes one', async () => {
    const { calls, fetch } = recorder(() => json(200, { data: {} }));
    const c = new Client({ baseUrl: 'http://svc.test/', apiKey: 'mj_k', fetch });
    await c.getJob('job_a/b');
    await c.listJobs({ status: 'failed', limit: 5, cursor: undefined });
    await c.submitJob({ type: 'ffmpeg' }, { idempotencyKey: 'k1', headers: { 'X-Request-Id': 'r1' } });
    await c.validateFFmpeg({ command: 'ffmpeg' });
    assert.deepEqual(calls.map((r) => `${r.method} ${r.url}`), [
      'GET http://svc.test/jobs/job_a%2Fb',
      'GET http://svc.test/jobs?limit=5&status=failed',
      'POST http://svc.test/jobs',
      'POST http://svc.test/ffmpeg/validate',
    ]);
    assert.equal(calls[0].headers.authorization, 'Bearer mj_k');
    assert.equal(calls[2].headers['idempotency-key'], 'k1');
    assert.equal(calls[2].headers['x-request-id'], 'r1');
    assert.equal(calls[2].headers['content-type'], 'application/json');
    assert.equal(calls[2].body, '{"type":"ffmpeg"}');
    assert.equal(calls[3].headers.authorization, undefined, 'the key went to an operation that takes none');
  });

  test('a missing path parameter is refused before any request', async () => {
    const { calls, fetch } = recorder(() => json(200, {}));
    await assert.rejects(new Client({ baseUrl: 'http://svc.test', fetch }).getJob(''), TypeError);
    assert.equal(calls.length, 0);
  });

  test('files answer the Response, 204 answers nothing, streams go half-duplex', async () => {
    const { calls, fetch } = recorder((r) => (r.url.includes('/dl/') ? new Response('bytes') : r.method === 'DELETE' ? new Response(null, { status: 204 }) : json(201, { data: { id: 'ast_1' } })));
    const c = new Client({ baseUrl: 'http://svc.test', apiKey: 'mj_k', fetch });
    assert.equal(await (await c.downloadFile('job_1', { token: 't' })).text(), 'bytes');
    assert.equal(await c.deleteSession(), undefined);
    assert.deepEqual(await c.upload(new Blob(['x']).stream(), { name: 'a b.txt' }), { id: 'ast_1' });
    assert.equal(calls[2].url, 'http://svc.test/uploads?name=a+b.txt');
    assert.equal(calls[2].duplex, 'half');
    await assert.rejects(c.upload(new Uint8Array(1)), /needs a name/);
  });

  test('a refusal is a MediajobsError with its code, status, Retry-After and request ID', async () => {
    const { fetch } = recorder(() => json(429, { error: { code: 'RATE_LIMITED', message: 'slow down' } }, { 'Retry-After': '7', 'X-Request-Id': 'req_1' }));
    const err = await new Client({ baseUrl: 'http://svc.test', fetch }).getAccount().catch((e) => e);
    assert.ok(err instanceof MediajobsError);
    assert.deepEqual([err.code, err.status, err.retryAfter, err.requestId, err.apiMessage, err.retryable], ['RATE_LIMITED', 429, 7, 'req_1', 'slow down', true]);
    assert.equal(err.message, 'RATE_LIMITED: slow down');
  });

  test('an answer that is not the envelope keeps its status', async () => {
    const { fetch } = recorder(() => new Response('<html>bad gateway</html>', { status: 502 }));
    const err = await new Client({ baseUrl: 'http://svc.test', fetch }).getAccount().catch((e) => e);
    assert.deepEqual([err.code, err.status, err.retryable], ['INTERNAL_ERROR', 502, true]);
  });

  test('submit retries a retryable refusal with the same Idempotency-Key, and not a final one', async () => {
    let n = 0;
    const { calls, fetch } = recorder(() => (++n === 1
      ? json(503, { error: { code: 'SERVICE_UNAVAILABLE', message: 'later' } }, { 'Retry-After': '0' })
      : json(201, { data: { id: 'job_1', status: 'waiting' } })));
    const c = new Client({ baseUrl: 'http://svc.test', apiKey: 'mj_k', fetch });
    assert.deepEqual(await c.submit({ type: 'ffmpeg' }), { id: 'job_1', status: 'waiting' });
    assert.equal(calls.length, 2);
    assert.match(calls[0].headers['idempotency-key'], /^[0-9a-f-]{36}$/);
    assert.equal(calls[1].headers['idempotency-key'], calls[0].headers['idempotency-key']);

    const refused = recorder(() => json(400, { error: { code: 'VALIDATION_ERROR', message: 'no' } }));
    await assert.rejects(new Client({ baseUrl: 'http://svc.test', fetch: refused.fetch }).submit({}), MediajobsError);
    assert.equal(refused.calls.length, 1);
  });

  test('wait follows the job to its end and hears each change once', async () => {
    const states = [['waiting'], ['running', 0.1], ['running', 0.1], ['running', 0.6], ['complete']];
    let i = 0;
    const { calls, fetch } = recorder(() => {
      const [status, progress] = states[Math.min(i++, states.length - 1)];
      return json(200, { data: { id: 'job_1', type: 'ffmpeg', status, progress, createdAt: 1 } });
    });
    const heard = [];
    const job = await new Client({ baseUrl: 'http://svc.test', apiKey: 'k', fetch }).wait('job_1', { interval: 1, maxInterval: 2, onProgress: (j) => heard.push(`${j.status}${j.progress ?? ''}`) });
    assert.equal(job.status, 'complete');
    assert.deepEqual(heard, ['waiting', 'running0.1', 'running0.6', 'complete']);
    // Progress asked for every 2 ms is polled: no read is held.
    assert.deepEqual(new Set(calls.map((c) => c.url)), new Set(['http://svc.test/jobs/job_1?wait=0']));
  });

  test('with onProgress, each read is held for maxInterval in whole seconds', async () => {
    const { calls, fetch } = recorder(() => json(200, { data: { id: 'job_1', type: 'ffmpeg', status: 'complete', createdAt: 1 } }));
    await new Client({ baseUrl: 'http://svc.test', fetch }).wait('job_1', { onProgress: () => {} });
    await new Client({ baseUrl: 'http://svc.test', fetch }).wait('job_1', { onProgress: () => {}, maxInterval: 120_000 });
    assert.deepEqual(calls.map((c) => c.url), ['http://svc.test/jobs/job_1?wait=2', 'http://svc.test/jobs/job_1?wait=60']);
  });

  test('wait asks again at once when the server held its answer, and waits 20 s without onProgress', { timeout: 5000 }, async () => {
    const states = ['running', 'complete'];
    let i = 0;
    const { calls, fetch } = recorder(() => json(200, { data: { id: 'job_1', type: 'ffmpeg', status: states[i++], createdAt: 1 } }));
    const c = new Client({ baseUrl: 'http://svc.test', fetch });
    const realNow = Date.now;
    let clock = 0;
    Date.now = () => (clock += 20_000); // every read of the clock is the whole wait on
    try {
      const job = await c.wait('job_1', { interval: 60_000 }); // a sleep would outlast the test's timeout
      assert.equal(job.status, 'complete');
    } finally {
      Date.now = realNow;
    }
    assert.deepEqual(calls.map((c) => c.url), ['http://svc.test/jobs/job_1?wait=20', 'http://svc.test/jobs/job_1?wait=20']);
  });

  test('wait stops when its signal aborts', async () => {
    const { fetch } = recorder(() => json(200, { data: { id: 'job_1', status: 'waiting' } }));
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stop')), 20);
    await assert.rejects(new Client({ baseUrl: 'http://svc.test', fetch }).wait('job_1', { signal: ac.signal, interval: 5 }), /stop/);
  });
});

describe('verifyWebhook', () => {
  const secret = 'whsec_test';
  const body = '{"event":"job.completed","jobId":"job_1"}';
  const now = 1_700_000_000_000;
  const ts = String(now / 1000);
  const sign = (s, t = ts, b = body) => 'sha256=' + createHmac('sha256', s).update(`${t}.${b}`).digest('hex');

  test('a delivery signed with the secret verifies, from a Headers or a plain object', async () => {
    const h = { 'X-Service-Signature': sign(secret), 'X-Service-Timestamp': ts };
    assert.deepEqual(await verifyWebhook(secret, h, body, { now }), JSON.parse(body));
    assert.equal((await verifyWebhook(secret, new Headers(h), new TextEncoder().encode(body), { now })).jobId, 'job_1');
  });
  test('either signature of a rotation, with either secret', async () => {
    const h = { 'x-service-signature': sign('whsec_new'), 'x-service-signature-previous': sign('whsec_old'), 'x-service-timestamp': ts };
    for (const s of ['whsec_new', 'whsec_old', ['whsec_x', 'whsec_old']]) {
      assert.equal((await verifyWebhook(s, h, body, { now })).jobId, 'job_1');
    }
    await assert.rejects(verifyWebhook('whsec_x', h, body, { now }), (e) => e.reason === 'signature-mismatch');
  });
  const bad = {
    'another body': [{ 'x-service-signature': sign(secret), 'x-service-timestamp': ts }, body.replace('job_1', 'job_2'), 'signature-mismatch'],
    'another timestamp': [{ 'x-service-signature': sign(secret), 'x-service-timestamp': String(Number(ts) + 1) }, body, 'signature-mismatch'],
    'no sha256= prefix': [{ 'x-service-signature': sign(secret).slice(7), 'x-service-timestamp': ts }, body, 'signature-mismatch'],
    'a short signature': [{ 'x-service-signature': sign(secret).slice(0, 40), 'x-service-timestamp': ts }, body, 'signature-mismatch'],
    'no signature': [{ 'x-service-timestamp': ts }, body, 'signature-missing'],
    'no timestamp': [{ 'x-service-signature': sign(secret) }, body, 'timestamp'],
    'a timestamp 6 minutes old': [{ 'x-service-signature': sign(secret, String(Number(ts) - 360)), 'x-service-timestamp': String(Number(ts) - 360) }, body, 'timestamp'],
    'a timestamp 6 minutes ahead': [{ 'x-service-signature': sign(secret, String(Number(ts) + 360)), 'x-service-timestamp': String(Number(ts) + 360) }, body, 'timestamp'],
  };
  for (const [name, [h, b, reason]] of Object.entries(bad)) {
    test(`refused: ${name}`, async () => {
      await assert.rejects(verifyWebhook(secret, h, b, { now }), (e) => e instanceof WebhookVerificationError && e.reason === reason);
    });
  }
  test('the tolerance is the caller\'s', async () => {
    const old = String(Number(ts) - 3600);
    const h = { 'x-service-signature': sign(secret, old), 'x-service-timestamp': old };
    assert.equal((await verifyWebhook(secret, h, body, { now, tolerance: Infinity })).jobId, 'job_1');
    await assert.rejects(verifyWebhook('', h, body), TypeError);
  });
});
