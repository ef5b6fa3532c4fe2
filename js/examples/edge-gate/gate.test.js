// The edge gate in front of the real binary, through Node's HTTP server: a refused command is
// answered by the gate with the API's own error and never reaches the origin (its request
// counter for POST /jobs does not move); a valid one comes back as the origin answered it.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createValidator } from '../../validator/src/index.js';
import { startMediajobs } from '../../testing/mediajobs.js';
import { createGate, missingInputs } from './gate.js';
import { serve } from './server.js';

describe('the edge gate', () => {
  let origin;
  let gate;
  let gateURL;
  let originCalls = 0;

  before(async () => {
    origin = await startMediajobs();
    // The gate's own fetch counts what reaches the origin, beside the origin's metrics.
    const counted = (url, init) => { originCalls++; return fetch(url, init); };
    const handler = createGate({ origin: origin.base, validator: await createValidator(), fetch: counted });
    gate = serve(handler);
    await new Promise((resolve) => gate.listen(0, '127.0.0.1', resolve));
    gateURL = `http://127.0.0.1:${gate.address().port}`;
  });
  after(async () => {
    await new Promise((resolve) => gate?.close(resolve));
    await origin?.stop();
  });

  const submits = () => origin.metric('mediajobs_http_requests_total', { method: 'POST', route: '/jobs' });
  const post = (base, body) => fetch(`${base}/jobs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${origin.apiKey}`, 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

  const refused = {
    'a disallowed flag': { type: 'ffmpeg', params: { command: 'ffmpeg -filter_script f.txt -i https://example.com/a.mp4 out.mp4' } },
    'a path outside the work directory': { type: 'ffmpeg', params: { command: 'ffmpeg -i /etc/passwd out.mp4' } },
    'a blocked filter': { type: 'ffmpeg', params: { command: 'ffmpeg -i https://example.com/a.mp4 -vf movie=/etc/x out.mp4' } },
    'a GPU encoder on compute cpu': { type: 'ffmpeg', params: { command: 'ffmpeg -i https://example.com/a.mp4 -c:v h264_nvenc out.mp4', compute: 'cpu' } },
    'an input the job does not give': { type: 'ffmpeg', params: { command: 'ffmpeg -i in.mp4 -vf subtitles=s.srt out.mp4' }, inputs: { 's.srt': { content: '1' } } },
    'an image sequence the job does not give': { type: 'ffmpeg', params: { command: 'ffmpeg -framerate 10 -i img%03d.png out.mp4' } },
    'no command': { type: 'ffmpeg', params: { command: ' ' } },
  };
  for (const [name, body] of Object.entries(refused)) {
    test(`refused at the gate: ${name}`, async () => {
      const before = await submits();
      const callsBefore = originCalls;
      const res = await post(gateURL, body);
      const answer = await res.json();
      assert.equal(res.status, 400);
      assert.equal(answer.error.code, 'VALIDATION_ERROR');
      assert.equal(originCalls, callsBefore, 'the gate called the origin');
      assert.equal(await submits(), before, "the origin's POST /jobs counter moved");
      // The gate's message is the one the origin gives the same request.
      const direct = await post(origin.base, body);
      assert.equal(direct.status, 400);
      assert.deepEqual(answer, await direct.json());
    });
  }

  test('a chain of steps goes to the origin, which checks it whole', async () => {
    const before = await submits();
    const res = await post(gateURL, { type: 'ffmpeg', params: { steps: [
      'ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 a.png',
      'ffmpeg -i a.png -vf scale=16:16 b.png'] } });
    assert.equal(res.status, 201);
    assert.equal(await submits(), before + 1);
  });

  test('a body that is not JSON is refused at the gate', async () => {
    const before = await submits();
    const res = await post(gateURL, '{"type": "ffmpeg",');
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.code, 'VALIDATION_ERROR');
    assert.equal(await submits(), before);
  });

  test('a valid job is forwarded and comes back as the origin answered', async () => {
    const before = await submits();
    const res = await post(gateURL, { type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 gate.png' } });
    assert.equal(res.status, 201);
    assert.match(res.headers.get('Location') ?? '', /^\/jobs\/job_/);
    assert.match(res.headers.get('X-Request-Id') ?? '', /\S/);
    const { data } = await res.json();
    assert.match(data.id, /^job_/);
    assert.equal(data.status, 'waiting');
    assert.equal(await submits(), before + 1);
    // Other routes pass through: the job, read through the gate.
    const job = await fetch(`${gateURL}/jobs/${data.id}`, { headers: { Authorization: `Bearer ${origin.apiKey}` } });
    assert.equal(job.status, 200);
    assert.equal((await job.json()).data.id, data.id);
  });

  test("the origin's own refusals come back as it answered them", async () => {
    const res = await fetch(`${gateURL}/jobs`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'ffmpeg', params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1 out.mp4' } }) });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, 'UNAUTHORIZED');
    assert.match(res.headers.get('WWW-Authenticate') ?? '', /^Bearer/);
  });

  test('the missing-inputs message names image sequences as the API does', () => {
    assert.equal(missingInputs(['a.mp4']), 'the command reads input "a.mp4", which inputs does not provide: add each name to inputs (a URL or inline content)');
    assert.match(missingInputs(['a.mp4', 'f%04d.png']), /inputs "a.mp4", "f%04d.png" \(an image sequence: .*\), which inputs do not provide/);
  });
});
