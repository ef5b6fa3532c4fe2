// The gate as a Cloudflare Workers module (wrangler bundles the validator's .wasm as a compiled
// WebAssembly.Module). Set ORIGIN to the service's address in the worker's vars.

import { createValidator } from '@mediajobs/validator';
import wasm from '@mediajobs/validator/validator.wasm';
import { createGate } from './gate.js';

// One validator per isolate, started on the first request.
let validator;

export default {
  async fetch(request, env) {
    validator ??= createValidator(wasm);
    return createGate({ origin: env.ORIGIN, validator: await validator })(request);
  },
};
