// An edge gate in front of a mediajobs service: a standard fetch handler (Request in, Response
// out, as Cloudflare Workers, Deno.serve and the Node adapter in server.js take it) that checks
// the FFmpeg command of every POST /jobs with @mediajobs/validator and forwards only the jobs the
// service would accept. A refused job never reaches the origin: the gate answers it itself, with
// the API's error shape and message ({ error: { code: "VALIDATION_ERROR", message } }, 400).
// Everything else (other job types, other routes) is passed through as it came.

// createGate returns the handler. origin is the service's address; validator a started
// @mediajobs/validator; assetUrlPrefix the service's "{base_url}/assets/" (default: origin's),
// under which uploaded assets are accepted as inputs; fetch the fetch that reaches the origin.
export function createGate({ origin, validator, assetUrlPrefix, fetch: fetchImpl = globalThis.fetch }) {
  if (!origin || !validator) throw new TypeError('createGate needs an origin and a validator');
  const base = new URL(origin);
  const assets = assetUrlPrefix ?? new URL('/assets/', base).href;

  const forward = (request, body) => {
    const target = new URL(request.url);
    target.protocol = base.protocol;
    target.host = base.host;
    const headers = new Headers(request.headers);
    headers.delete('host');
    const init = { method: request.method, headers, redirect: 'manual' };
    if (body !== undefined) init.body = body;
    else if (request.body) {
      init.body = request.body;
      init.duplex = 'half';
    }
    return fetchImpl(target, init);
  };

  return async function gate(request) {
    const url = new URL(request.url);
    if (request.method !== 'POST' || url.pathname !== '/jobs') return forward(request);
    const text = await request.text();
    let job;
    try {
      job = JSON.parse(text);
    } catch {
      return refuse('the request body is not JSON');
    }
    if (job === null || typeof job !== 'object' || job.type !== 'ffmpeg') return forward(request, text);
    const params = job.params;
    if (params === null || typeof params !== 'object') return refuse('params is required with params.command');
    // A chain of commands (params.steps) or a preset is checked whole by the origin: a step may
    // read what an earlier one writes, which one command's check cannot know.
    if (params.command === undefined && (params.steps !== undefined || params.preset !== undefined)) return forward(request, text);
    if (typeof params.command !== 'string' || params.command.trim() === '') {
      return refuse('params.command is required: an FFmpeg command starting with ffmpeg (or params.steps, a list of them)');
    }
    const options = { assetUrlPrefix: assets };
    if (typeof params.outputFormat === 'string') options.outputFormat = params.outputFormat;
    if (typeof params.compute === 'string') options.compute = params.compute;
    if (Number.isInteger(params.timeout)) options.timeout = params.timeout;
    const result = await validator.validate(params.command, { inputs: job.inputs ?? params.inputs ?? {}, options });
    if (!result.valid) return refuse(result.error);
    if (result.requiredInputs?.length) return refuse(missingInputs(result.requiredInputs));
    // Checks the gate does not make (the account, its plan and balance, the rest of params) are
    // the origin's.
    return forward(request, text);
  };
}

function refuse(message) {
  return Response.json({ error: { code: 'VALIDATION_ERROR', message } }, { status: 400 });
}

// missingInputs is the message POST /jobs gives a command that reads names its inputs do not
// provide (validator.Result.MissingInputsError).
export function missingInputs(names) {
  const quoted = names.map((n) => JSON.stringify(n) +
    (/%0?\d*d/.test(n.replaceAll('%%', '')) ? ' (an image sequence: stage its numbered frames, the first at -start_number)' : ''));
  const what = quoted.length === 1
    ? `input ${quoted[0]}, which inputs does not provide`
    : `inputs ${quoted.join(', ')}, which inputs do not provide`;
  return `the command reads ${what}: add each name to inputs (a URL or inline content)`;
}
