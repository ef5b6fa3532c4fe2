// validator.wasm in the browser, the same module and the same code the playground runs
// (static/validator.js, served here as /console/validator.js): a command is checked as it is
// typed, with no request to the server.

import { loadValidator } from '/console/validator.js';

let loading = null;

// validator loads the module once, on first use; validate takes and returns objects.
export function validator() {
  loading ??= loadValidator('/console/validator.wasm').then((v) => ({
    validate: async (request) => JSON.parse(await v.validate(JSON.stringify(request))),
  }));
  loading.catch(() => { loading = null; });
  return loading;
}
