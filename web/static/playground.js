// The validator playground: runs validator.wasm through the @mediajobs/validator package (its
// files are kept in validator/, copied from js/validator/src) and validates the command on every
// keystroke. A validation takes microseconds, so there is no
// debounce and no round trip to the server.
//
// For tests and scripts the page exposes:
//   window.mediajobsReady               a Promise that resolves once the module is running
//   window.mediajobsValidate(request)   request: the JSON string {"command", "options", "inputs"};
//                                       returns the JSON string of the result, exactly the
//                                       `data` of POST /ffmpeg/validate.

import { createValidator } from './validator/index.js';

// The package's default module URL, ../validator.wasm from validator/index.js, is where the
// handler serves it.
const ready = createValidator();
window.mediajobsReady = ready.then(() => true);
window.mediajobsValidate = async (requestJSON) => {
  const { command, options, inputs } = JSON.parse(requestJSON);
  return (await ready).validateJSON(String(command ?? ''), { options, inputs });
};

const $ = (id) => document.getElementById(id);

function show(status, label) {
  $('status').className = `status ${status}`;
  $('status').textContent = label;
}

// latest numbers the renders so that a slow one (after a module restart) never overwrites the
// answer for what is typed now.
let latest = 0;

async function render(v) {
  const seq = ++latest;
  const command = $('command').value;
  const optionsText = $('options').value.trim();
  $('error').hidden = true;
  $('details').hidden = true;
  $('raw').textContent = '';
  if (command.trim() === '') {
    show('empty', 'type a command');
    return;
  }
  const request = { command };
  const inputsText = $('inputs').value.trim();
  if (inputsText !== '') {
    try {
      request.inputs = JSON.parse(inputsText);
    } catch (err) {
      show('failed', 'inputs are not JSON');
      $('error').textContent = err.message;
      $('error').hidden = false;
      return;
    }
  }
  if (optionsText !== '') {
    try {
      request.options = JSON.parse(optionsText);
    } catch (err) {
      show('failed', 'options are not JSON');
      $('error').textContent = err.message;
      $('error').hidden = false;
      return;
    }
  }
  let raw;
  try {
    raw = await v.validateJSON(request.command, { inputs: request.inputs, options: request.options });
  } catch (err) {
    if (seq !== latest) return;
    show('failed', 'validator failed');
    $('error').textContent = err.message;
    $('error').hidden = false;
    return;
  }
  if (seq !== latest) return;
  $('raw').textContent = raw;
  const result = JSON.parse(raw);
  if (!result.valid) {
    show('invalid', 'invalid');
    $('error').textContent = result.error;
    $('error').hidden = false;
    return;
  }
  show('valid', 'valid');
  $('format').textContent = result.inferredOutputFormat || '—';
  $('args').replaceChildren(...(result.args || []).map((arg) => {
    const li = document.createElement('li');
    li.textContent = arg;
    return li;
  }));
  const required = result.requiredInputs || [];
  $('required').replaceChildren(...required.map((name) => {
    const li = document.createElement('li');
    li.textContent = name;
    return li;
  }));
  $('required-label').hidden = required.length === 0;
  $('required-box').hidden = required.length === 0;
  $('details').hidden = false;
}

ready.then(
  (v) => {
    const update = () => render(v);
    $('command').addEventListener('input', update);
    $('options').addEventListener('input', update);
    $('inputs').addEventListener('input', update);
    update();
  },
  (err) => {
    show('failed', 'validator unavailable');
    $('error').textContent = err.message;
    $('error').hidden = false;
  },
);
