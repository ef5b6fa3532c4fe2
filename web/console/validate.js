// validator.wasm in the browser through the @mediajobs/validator package, the same module and
// the same loader the playground runs (js/validator/src, kept in static/validator and served
// here under /console/validator/): a command is checked as it is typed, with no request to the
// server.

import { createValidator } from '/console/validator/index.js';

let loading = null;

// validator loads the module once, on first use (the package's default URL,
// /console/validator.wasm); validate takes the request { command, options, inputs } and returns
// the answer as an object.
export function validator() {
  loading ??= createValidator().then((v) => ({
    validate: (request) => v.validate(String(request.command ?? ''), { options: request.options, inputs: request.inputs }),
  }));
  loading.catch(() => { loading = null; });
  return loading;
}
