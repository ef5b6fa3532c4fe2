// An example program that uses the package's declarations as an application would; `tsc -p
// js/client` type-checks it against them (scripts/jstest.sh runs it), so a declaration that does
// not describe the client fails there.

import { Client, ErrorCode, MediajobsError, verifyWebhook, type Job, type JobRequest } from '../src/index.js';

async function main(): Promise<void> {
  const c = new Client({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'mj_example' });

  const up = await c.upload(new Blob(['1\n00:00:00,000 --> 00:00:01,000\nHi\n']), { name: 'subs.srt' });
  const req: JobRequest = {
    type: 'ffmpeg',
    inputs: { 'subs.srt': up.url },
    params: { command: 'ffmpeg -f lavfi -i testsrc=duration=1 -vf subtitles=subs.srt out.mp4' },
  };
  const created = await c.submit(req, { idempotencyKey: 'order-42' });
  const job: Job = await c.wait(created.id, {
    onProgress: (j) => console.log(j.status, j.progress ?? 0),
  });
  if (job.status === 'complete' && job.output) {
    for (const f of job.output.files) {
      const res = await c.download(f);
      const bytes: ArrayBuffer = await res.arrayBuffer();
      console.log(f.path, f.type, bytes.byteLength, f.meta?.durationMs);
    }
  } else if (job.error) {
    const code: string = job.error.code;
    console.log(code, job.error.message, job.error.detail ?? '');
  }

  // Generated methods: every operation of the document.
  const page = await c.listJobs({ status: 'failed', limit: 10 });
  const next: string | null = page.pagination.nextCursor;
  const ids: string[] = page.data.map((j) => j.id);
  const account = await c.getAccount();
  const plan: 'free' | 'pro' = account.data.plan;
  const verdict = await c.validateFFmpeg({ command: 'ffmpeg -i in.mp4 out.webm', inputs: { 'in.mp4': 'https://example.com/a.mp4' } });
  if (verdict.data.valid) console.log(verdict.data.args, verdict.data.requiredInputs);
  else console.log(verdict.data.error);
  const ep = await c.createWebhookEndpoint({ name: 'hooks', url: 'https://example.com/hooks', subscribedEvents: ['job.completed'] });
  const secret: string | undefined = ep.data.secret;
  const file: Response = await c.downloadFile('job_1', { token: 't' });
  await c.deleteSession();
  console.log(next, ids, plan, secret, file.status);

  try {
    await c.getJob('job_missing');
  } catch (err) {
    if (err instanceof MediajobsError && err.code === ErrorCode.NOT_FOUND) console.log(err.status, err.retryAfter);
  }

  const event = await verifyWebhook<{ event: string; jobId: string }>([secret ?? '', 'whsec_old'], new Headers(), '{}');
  console.log(event.jobId);
}

void main;
