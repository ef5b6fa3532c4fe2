// Runs the gate under Node's own HTTP server, the adapter that Workers and Deno do not need:
//
//   node js/examples/edge-gate/server.js --origin http://127.0.0.1:8080 --listen 127.0.0.1:8787
//
// Under Deno: Deno.serve(createGate({ origin, validator })). Under Workers: worker.js.

import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { createValidator } from '../../validator/src/index.js';
import { createGate } from './gate.js';

// serve wraps a fetch handler in a node:http server.
export function serve(handler) {
  return createServer(async (req, res) => {
    try {
      const url = `http://${req.headers.host ?? 'localhost'}${req.url}`;
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const request = new Request(url, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]])),
        body: hasBody ? Readable.toWeb(req) : undefined,
        duplex: hasBody ? 'half' : undefined,
      });
      const response = await handler(request);
      const headers = {};
      response.headers.forEach((v, k) => {
        // fetch has decoded the body already.
        if (k !== 'content-encoding' && k !== 'content-length' && k !== 'transfer-encoding') headers[k] = v;
      });
      res.writeHead(response.status, headers);
      if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
      }
      res.end();
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'INTERNAL_ERROR', message: `gate: ${err.message}` } }));
    }
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { origin: { type: 'string' }, listen: { type: 'string', default: '127.0.0.1:8787' } } });
  if (!values.origin) {
    console.error('usage: server.js --origin http://127.0.0.1:8080 [--listen 127.0.0.1:8787]');
    process.exit(2);
  }
  const gate = createGate({ origin: values.origin, validator: await createValidator() });
  const [host, port] = values.listen.split(/:(?=\d+$)/);
  serve(gate).listen(Number(port), host, () => console.log(`edge gate on http://${values.listen} in front of ${values.origin}`));
}
