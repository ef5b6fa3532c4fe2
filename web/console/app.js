// The mediajobs console: a small single-page app over the public API of the same origin. Plain
// ES modules and the DOM, no framework and no build step. Pages are hash routes (#/jobs,
// #/jobs/<id>, #/new, #/webhooks, #/webhooks/<id>, #/keys, #/credits), so that no console path
// shadows an API path. Text from the API is always set as text, never parsed as HTML.

import { api, APIError, resume, setOnUnauthorized, signIn, signOut, upload } from '/console/api.js';
import { validator } from '/console/validate.js';

const $ = (sel, root = document) => root.querySelector(sel);
let session = null;

// h builds an element: h('a', {href: '#', onclick: fn}, 'text', child, ...).
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'for') el.htmlFor = v;
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

let uid = 0;
const id = (p) => `${p}-${++uid}`;

// field is a labelled control.
function field(label, control) {
  control.id ||= id('f');
  return h('div', {}, h('label', { for: control.id }, label), control);
}

function flash(msg, isError = false) {
  const f = $('#flash');
  f.className = isError ? 'error' : '';
  f.textContent = msg;
  clearTimeout(flash.t);
  if (msg) flash.t = setTimeout(() => { f.textContent = ''; }, isError ? 10000 : 4000);
}

// fail reports an error of an action; an ended session has already sent the user to sign in.
function fail(err) {
  if (err instanceof APIError && err.status === 401) return;
  flash(errorText(err), true);
}

const when = (ms) => (ms ? new Date(ms).toLocaleString() : '—');
function duration(ms) {
  if (ms === undefined || ms === null || ms < 0) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}
function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${(n / (1 << 30)).toFixed(2)} GiB`;
}
// notProbed fills the format cell of a media file that has no meta: ffprobe reads a few files
// of each job (MaxProbes), and says so rather than leaving a bare dash.
const notProbed = (f) => (['video', 'audio', 'image'].includes(f.type)
  ? h('span', { class: 'muted', title: 'ffprobe reads at most 8 files of a job, manifests first; the size is exact.' }, 'not probed')
  : '—');
const badge = (s) => h('span', { class: `status ${s}` }, s);
const terminal = (s) => s === 'complete' || s === 'failed' || s === 'cancelled';
const jobDuration = (j) => (j.startedAt && j.completedAt ? duration(j.completedAt - j.startedAt) : '—');

function table(headers, rows, caption) {
  return h('div', { class: 'table-wrap' }, h('table', {},
    caption ? h('caption', { class: 'muted' }, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((x) => (typeof x === 'string' ? h('th', { scope: 'col' }, x) : x)))),
    h('tbody', {}, rows)));
}

function secretBox(label, secret) {
  const out = h('output', { 'aria-label': label, 'data-secret': '' }, secret);
  const copy = h('button', { type: 'button', class: 'secondary', onclick: async () => {
    try {
      await navigator.clipboard.writeText(secret);
      copy.textContent = 'Copied';
    } catch {
      // Clipboard access can be refused; select the text so it can be copied by hand.
      getSelection().selectAllChildren(out);
      copy.textContent = 'Select and copy';
    }
  } }, 'Copy');
  return h('div', { class: 'secret', role: 'group', 'aria-label': label },
    h('strong', {}, `${label} (shown once):`), out, copy);
}

function errorText(err) {
  return err instanceof APIError ? `${err.code}: ${err.message}` : String(err?.message || err);
}

// Polling: each page render gets a generation; loops stop when it is no longer current.
let generation = 0;
function poller(gen, ms, fn) {
  let timer;
  const tick = async () => {
    if (gen !== generation) return;
    let next = ms;
    try {
      next = (await fn()) ?? ms;
    } catch (err) {
      // A rate limit slows the poll down rather than ending it.
      next = err instanceof APIError && err.status === 429 ? ms * 4 : ms * 2;
      if (!(err instanceof APIError && err.status === 401)) console.warn('poll:', errorText(err));
    }
    if (gen === generation && next > 0) timer = setTimeout(tick, next);
  };
  timer = setTimeout(tick, ms);
  return () => clearTimeout(timer);
}

// ---- sign-in ---------------------------------------------------------------------------------

function signInPage(main) {
  $('#nav').hidden = true;
  const key = h('input', { type: 'password', name: 'apiKey', autocomplete: 'off', required: true, spellcheck: 'false', size: 44 });
  const err = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { id: 'signin', onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    try {
      session = await signIn(key.value.trim());
      key.value = '';
      flash('');
      if (location.hash === '#/jobs') route(e);
      else location.hash = '#/jobs';
    } catch (e2) {
      err.textContent = errorText(e2);
      key.focus();
    }
  } },
  field('API key', key),
  h('p', { class: 'muted' }, 'The key is sent once to open a session; the browser keeps only an HttpOnly session cookie.'),
  h('button', { type: 'submit' }, 'Sign in'), err);
  main.replaceChildren(h('h1', {}, 'Sign in'), form);
  key.focus();
}

// ---- jobs --------------------------------------------------------------------------------------

const STATUSES = ['waiting', 'dispatched', 'running', 'complete', 'failed', 'cancelled'];
const TYPES = ['ffmpeg', 'caption.burn', 'extract.metadata', 'captions.animate'];
// A job's priority orders the waiting jobs of its class (docs/api.md, Priority and fair share);
// high needs the Pro plan, which the API says (403 PLAN_LIMIT) rather than the console.
const PRIORITIES = ['low', 'normal', 'high'];
const priorityOf = (j) => j.priority ?? 'normal';

// prioritySelect picks a job's priority, normal first chosen.
function prioritySelect(value = 'normal') {
  const s = h('select', { name: 'priority' }, PRIORITIES.map((p) => h('option', { value: p }, p)));
  s.value = value;
  return s;
}

// progressOf shows how far a running job has got: a bar and a percentage when the length of its
// output is known, else the media time it has written (processedMs).
function progressOf(j, label) {
  if (j.status !== 'running') return null;
  if (!(j.progress > 0) && typeof j.processedMs === 'number') {
    return [' ', h('span', { class: 'processed', 'aria-label': label }, `${duration(j.processedMs)} processed`)];
  }
  if (typeof j.progress !== 'number') return null;
  return [' ', h('progress', { max: 1, value: j.progress, 'aria-label': label }), ` ${Math.round(j.progress * 100)}%`];
}

// jobSummary tells one job of the list from another, as `mediajobs jobs list` does: its FFmpeg
// command without the leading "ffmpeg" (the cell's CSS shortens it), else its first output.
function jobSummary(j) {
  const c = typeof j.params?.command === 'string' ? j.params.command.trim().replace(/\s+/g, ' ').replace(/^ffmpeg /, '') : '';
  return c || j.output?.file?.path || j.output?.files?.[0]?.path || '—';
}

function jobRow(j) {
  const status = h('td', {}, badge(j.status));
  const p = progressOf(j, `progress of ${j.id}`);
  if (p) status.append(...p);
  return h('tr', { 'data-job': j.id, 'data-status': j.status },
    h('td', { class: 'mono id' }, h('a', { href: `#/jobs/${j.id}` }, j.id)),
    h('td', {}, j.type), status, h('td', { class: 'priority' }, priorityOf(j)),
    h('td', { class: 'mono summary', title: jobSummary(j) }, jobSummary(j)),
    h('td', { class: 'wide' }, when(j.createdAt)),
    h('td', {}, jobDuration(j)),
    h('td', {}, j.cost?.formatted ?? '—'));
}

function jobsPage(main, gen) {
  const status = h('select', { name: 'status' }, h('option', { value: '' }, 'any'), STATUSES.map((s) => h('option', { value: s }, s)));
  const type = h('select', { name: 'type' }, h('option', { value: '' }, 'any'), TYPES.map((t) => h('option', { value: t }, t)));
  const body = h('tbody', {});
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Load more');
  const info = h('p', { class: 'muted', role: 'status' });
  let jobs = [];
  let cursor = null;

  const query = (c) => {
    const q = new URLSearchParams({ limit: '20' });
    if (status.value) q.set('status', status.value);
    if (type.value) q.set('type', type.value);
    if (c) q.set('cursor', c);
    return `/jobs?${q}`;
  };
  const draw = () => {
    body.replaceChildren(...jobs.map(jobRow));
    info.textContent = jobs.length ? '' : 'No jobs yet.';
    more.hidden = !cursor;
  };
  const load = async () => {
    const page = await api('GET', query());
    jobs = page.data;
    cursor = page.pagination.nextCursor;
    draw();
  };
  more.addEventListener('click', async () => {
    const page = await api('GET', query(cursor));
    jobs = jobs.concat(page.data.filter((j) => !jobs.some((k) => k.id === j.id)));
    cursor = page.pagination.nextCursor;
    draw();
  });
  for (const s of [status, type]) s.addEventListener('change', () => load().catch((e) => fail(e)));

  main.replaceChildren(h('h1', {}, 'Jobs'),
    h('div', { class: 'row' }, field('Status', status), field('Type', type),
      h('a', { class: 'button', href: '#/new' }, 'New job')),
    h('div', { class: 'table-wrap' }, h('table', { id: 'jobs' },
      h('thead', {}, h('tr', {}, ['ID', 'Type', 'Status', 'Priority', 'Command or output'].map((x) => h('th', { scope: 'col' }, x)),
        h('th', { scope: 'col', class: 'wide' }, 'Created'), h('th', { scope: 'col' }, 'Duration'), h('th', { scope: 'col' }, 'Cost'))),
      body)),
    info, more);
  load().catch((e) => fail(e));

  // Live updates: the first page is read again and merged in; faster while jobs run.
  poller(gen, 2000, async () => {
    const page = await api('GET', query());
    const ids = new Set(page.data.map((j) => j.id));
    const cutoff = page.data.length ? page.data[page.data.length - 1].createdAt : Infinity;
    // Pages loaded with "Load more" stay below the fresh first page.
    const older = page.pagination.nextCursor ? jobs.filter((j) => !ids.has(j.id) && j.createdAt <= cutoff) : [];
    jobs = page.data.concat(older);
    if (!older.length) cursor = page.pagination.nextCursor;
    draw();
    return jobs.some((j) => !terminal(j.status)) ? 1500 : 4000;
  });
}

// ---- one job -----------------------------------------------------------------------------------

function loadHls() {
  loadHls.p ??= new Promise((resolve, reject) => {
    const s = h('script', { src: '/console/lib/hls.light.min.js' });
    s.onload = () => resolve(window.Hls);
    s.onerror = () => reject(new Error('hls.js could not be loaded'));
    document.head.append(s);
  });
  return loadHls.p;
}

function hlsPlayer(file) {
  const v = h('video', { controls: true, preload: 'auto', muted: true, playsInline: true, 'aria-label': `stream ${file.path}`, 'data-hls': '' });
  // hls.js wherever Media Source Extensions exist (its playback is the same in every such
  // browser); the native player only where they do not, as on iPhone Safari.
  const mse = window.MediaSource || window.ManagedMediaSource;
  if (!mse && v.canPlayType('application/vnd.apple.mpegurl')) {
    v.src = file.url;
  } else {
    loadHls().then((Hls) => {
      if (!Hls.isSupported()) throw new Error('this browser cannot play HLS (no Media Source Extensions)');
      // No worker: the CSP keeps scripts to this origin's files.
      const hls = new Hls({ enableWorker: false });
      hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) flash(`stream: ${d.details}`, true); });
      hls.loadSource(file.url);
      hls.attachMedia(v);
      v.dataset.player = 'hls.js';
    }).catch((e) => fail(e));
  }
  return v;
}

function media(file) {
  const label = `${file.type} ${file.path}`;
  if (file.type === 'playlist' || file.path.endsWith('.m3u8')) return hlsPlayer(file);
  if (file.type === 'video') return h('video', { controls: true, preload: 'auto', src: file.url, 'aria-label': label });
  if (file.type === 'audio') return h('audio', { controls: true, preload: 'metadata', src: file.url, 'aria-label': label });
  if (file.type === 'image') return h('img', { src: file.url, alt: file.path, loading: 'lazy' });
  return null;
}

// flatten turns nested metadata into rows of dotted keys.
function flatten(v, prefix = '', out = []) {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) flatten(x, prefix ? `${prefix}.${k}` : k, out);
  } else if (Array.isArray(v) && v.some((x) => x && typeof x === 'object')) {
    v.forEach((x, i) => flatten(x, `${prefix}[${i}]`, out));
  } else {
    out.push([prefix, Array.isArray(v) ? v.join(', ') : String(v)]);
  }
  return out;
}

function outputs(job) {
  const o = job.output;
  if (!o) return [];
  const parts = [h('h2', {}, 'Output')];
  if (o.file) {
    const m = media(o.file);
    if (m) parts.push(h('div', { class: 'player' }, m));
  } else if (o.files.length) {
    const images = o.files.filter((f) => f.type === 'image');
    if (images.length) parts.push(h('div', { class: 'grid', role: 'list', 'aria-label': 'images' }, images.map((f) => h('figure', { role: 'listitem' }, media(f), h('figcaption', { class: 'mono' }, f.path)))));
    for (const f of o.files.filter((x) => x.type === 'audio' || x.type === 'video')) parts.push(h('div', {}, h('p', { class: 'mono' }, f.path), media(f)));
  }
  if (o.files.length) {
    parts.push(h('h2', {}, 'Files'), table(['File', 'Type', 'Size', 'Format', 'Size (px)', 'Duration'], o.files.map((f) => h('tr', {},
      h('td', {}, h('a', { href: f.url, download: f.path.split('/').pop() }, f.path)),
      h('td', {}, f.type), h('td', {}, bytes(f.size)), h('td', {}, f.meta?.format ?? notProbed(f)),
      h('td', {}, f.meta?.width ? `${f.meta.width}×${f.meta.height}` : '—'),
      h('td', {}, f.meta?.durationMs !== undefined ? duration(f.meta.durationMs) : '—')))),
    h('p', { class: 'muted' }, `Links are signed and expire ${when(o.expiresAt)}.`));
  }
  if (o.data) {
    parts.push(h('h2', {}, 'Metadata'), table(['Field', 'Value'], flatten(o.data).map(([k, v]) => h('tr', {}, h('td', { class: 'mono' }, k), h('td', {}, v)))));
  }
  return parts;
}

function jobPage(main, gen, jobID) {
  let last = null;
  const head = h('div', {});
  const rest = h('div', {});
  // A waiting job's priority can change. The select stays one element, outside what the poll
  // draws again, so that it keeps its focus and an open list while the page refreshes.
  const priority = prioritySelect();
  const reprioritise = h('div', { id: 'job-reprioritise', class: 'row', hidden: true }, field('Change priority', priority));
  priority.addEventListener('change', async () => {
    priority.disabled = true;
    try {
      await api('POST', `/jobs/${jobID}/priority`, { priority: priority.value });
      flash(`Priority set to ${priority.value}.`);
    } catch (e) {
      fail(e);
    }
    priority.disabled = false;
    // Whatever the answer, the page shows the job's priority as the API has it.
    await refresh(true).catch((e) => fail(e));
  });
  main.replaceChildren(h('h1', {}, 'Job ', h('span', { class: 'mono' }, jobID)), head, reprioritise, rest);

  const act = async (path) => {
    try {
      const res = await api('POST', path);
      if (res?.data?.id && res.data.id !== jobID) {
        location.hash = `#/jobs/${res.data.id}`;
        return;
      }
      await refresh(true);
    } catch (e) {
      fail(e);
    }
  };

  // How a job that asked to be split ran: in parts, whole (and why), or not decided yet.
  const splitOf = (sp) => sp.parts > 0 ? `${sp.parts} parts, encoded at once`
    : sp.reason ? `whole: ${sp.reason}` : 'decided when the job starts';

  const drawHead = (j) => {
    const actions = h('div', { class: 'actions' });
    if (!terminal(j.status)) actions.append(h('button', { type: 'button', class: 'danger', onclick: () => act(`/jobs/${j.id}/cancel`) }, 'Cancel job'));
    if (j.status === 'failed' || j.status === 'cancelled') actions.append(h('button', { type: 'button', onclick: () => act(`/jobs/${j.id}/retry`) }, 'Retry'));
    head.replaceChildren(
      h('p', { id: 'job-status', role: 'status', 'data-status': j.status }, badge(j.status),
        progressOf(j, 'progress')),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Type'), h('dd', {}, j.type),
        h('dt', {}, 'Priority'), h('dd', { id: 'job-priority' }, priorityOf(j)),
        h('dt', {}, 'Created'), h('dd', {}, when(j.createdAt)),
        h('dt', {}, 'Started'), h('dd', {}, when(j.startedAt)),
        h('dt', {}, 'Finished'), h('dd', {}, when(j.completedAt)),
        h('dt', {}, 'Run time'), h('dd', {}, jobDuration(j)),
        h('dt', {}, 'Cost'), h('dd', { id: 'job-cost' }, j.cost?.formatted ?? '—'),
        j.retryOf ? [h('dt', {}, 'Retry of'), h('dd', {}, h('a', { href: `#/jobs/${j.retryOf}` }, j.retryOf))] : null,
        j.batchId ? [h('dt', {}, 'Batch'), h('dd', { class: 'mono' }, j.batchId)] : null,
        j.split ? [h('dt', {}, 'Split'), h('dd', { id: 'job-split' }, splitOf(j.split))] : null),
      actions);
  };

  const drawRest = (j) => {
    const parts = [];
    if (j.error) {
      parts.push(h('h2', {}, 'Error'), h('p', { class: 'error', id: 'job-error' }, `${j.error.code}: ${j.error.message}`));
      if (j.error.detail) parts.push(h('h3', {}, 'stderr (last lines)'), h('pre', { id: 'stderr', tabindex: '0', 'aria-label': 'stderr tail' }, j.error.detail));
    }
    parts.push(...outputs(j));
    parts.push(h('h2', {}, 'Request'));
    if (j.params?.command) parts.push(h('pre', { 'aria-label': 'command' }, j.params.command));
    const inputs = Object.entries(j.inputs || {});
    if (inputs.length) {
      parts.push(table(['Input', 'Source'], inputs.map(([k, v]) => h('tr', {}, h('td', { class: 'mono' }, k),
        h('td', { class: 'mono' }, typeof v === 'string' ? v : v?.url ?? (v?.content !== undefined ? `inline text, ${v.content.length} characters` : JSON.stringify(v)))))));
    }
    parts.push(h('details', {}, h('summary', {}, 'Params as JSON'), h('pre', {}, JSON.stringify(j.params ?? {}, null, 2))));
    rest.replaceChildren(...parts);
  };

  const refresh = async (force) => {
    const { data: j } = await api('GET', `/jobs/${jobID}`);
    drawHead(j);
    reprioritise.hidden = j.status !== 'waiting';
    if (document.activeElement !== priority || force) priority.value = priorityOf(j);
    // The rest (players above all) is drawn again only when the status changes.
    if (force || !last || last.status !== j.status) drawRest(j);
    last = j;
    return terminal(j.status) ? 0 : 1000;
  };
  refresh(true).then((next) => {
    if (next) poller(gen, next, () => refresh(false));
  }, (e) => {
    main.replaceChildren(h('h1', {}, 'Job'), h('p', { class: 'error' }, errorText(e)));
  });
}

// ---- queue -------------------------------------------------------------------------------------

// queuePage is GET /queue: the account's waiting jobs in the order they are claimed, cpu first,
// each with its place among every account's waiting jobs of its class (others' never shown).
function queuePage(main, gen) {
  const body = h('tbody', {});
  const info = h('p', { class: 'muted', role: 'status' });
  const draw = (entries) => {
    body.replaceChildren(...entries.map((e) => h('tr', { 'data-job': e.job.id, 'data-position': String(e.position) },
      h('td', {}, String(e.position)), h('td', {}, e.class),
      h('td', { class: 'mono id' }, h('a', { href: `#/jobs/${e.job.id}` }, e.job.id)),
      h('td', { class: 'priority' }, priorityOf(e.job)),
      h('td', { class: 'mono summary', title: jobSummary(e.job) }, jobSummary(e.job)),
      h('td', { class: 'wide' }, when(e.job.createdAt)))));
    info.textContent = entries.length ? '' : 'No job of yours is waiting.';
  };
  const load = async () => draw((await api('GET', '/queue?limit=100')).data);
  main.replaceChildren(h('h1', {}, 'Queue'),
    h('p', { class: 'muted' }, 'Your waiting jobs in the order workers take them. Position 1 goes next; it counts every account\'s waiting jobs of the class, high priority first, then the accounts taking turns.'),
    h('div', { class: 'table-wrap' }, h('table', { id: 'queue' },
      h('thead', {}, h('tr', {}, ['Position', 'Class', 'Job', 'Priority', 'Command or output'].map((x) => h('th', { scope: 'col' }, x)),
        h('th', { scope: 'col', class: 'wide' }, 'Created'))),
      body)),
    info);
  load().catch((e) => fail(e));
  poller(gen, 2000, load);
}

// ---- new job -----------------------------------------------------------------------------------

// dropZone takes files by drag and drop or by a labelled file input (for the keyboard).
function dropZone(label, multiple, onFiles) {
  const input = h('input', { type: 'file', multiple, id: id('file') });
  input.addEventListener('change', () => { onFiles([...input.files]); input.value = ''; });
  const zone = h('div', { class: 'drop' }, h('p', {}, `Drop ${multiple ? 'files' : 'a file'} here, or `), h('label', { for: input.id, class: 'inline' }, label), input);
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    onFiles([...e.dataTransfer.files]);
  });
  return zone;
}

function newJobPage(main) {
  const kind = h('select', { name: 'type' }, h('option', { value: 'ffmpeg' }, 'FFmpeg command'), h('option', { value: 'preset' }, 'FFmpeg preset'),
    h('option', { value: 'caption.burn' }, 'Burn captions (caption.burn)'));
  const holder = h('div', {});
  const forms = { ffmpeg: ffmpegForm, preset: presetForm, 'caption.burn': captionForm };
  const show = () => holder.replaceChildren(forms[kind.value]());
  kind.addEventListener('change', show);
  main.replaceChildren(h('h1', {}, 'New job'), field('Job type', kind), holder);
  show();
}

// assetPrefix is the "{base_url}/assets/" of uploaded files, learnt from an upload's URL.
let assetPrefix = '';
function noteAsset(url) {
  const i = url.indexOf('/assets/');
  if (i >= 0) assetPrefix = url.slice(0, i + '/assets/'.length);
}

async function uploadAll(files, status, onDone) {
  for (const file of files) {
    const line = h('li', {}, `${file.name}: uploading… `, h('progress', { max: 1, value: 0, 'aria-label': `upload of ${file.name}` }));
    status.append(line);
    try {
      const a = await upload(file, (p) => { line.querySelector('progress').value = p; });
      noteAsset(a.url);
      line.textContent = `${a.name}: uploaded (${bytes(a.size)})`;
      onDone(a);
    } catch (e) {
      line.textContent = `${file.name}: ${errorText(e)}`;
      line.className = 'error';
    }
  }
}

function ffmpegForm() {
  const inputs = new Map(); // name -> {url} | {content}
  const command = h('textarea', { name: 'command', rows: 3, spellcheck: 'false', placeholder: 'ffmpeg -i in.mp4 -vf scale=640:-2 out.mp4', 'aria-describedby': 'check' });
  const check = h('p', { id: 'check', 'aria-live': 'polite', 'data-state': 'empty' }, 'Type a command.');
  // The names the command reads that the inputs do not provide yet, each with ways to add it.
  const required = h('div', { id: 'required-inputs', hidden: true });
  let requiredKey = '';
  const preview = h('pre', { id: 'command-preview', hidden: true, 'aria-label': 'where the error is' });
  const submit = h('button', { type: 'submit', disabled: true }, 'Submit job');
  const priority = prioritySelect();
  const list = h('tbody', {});
  const uploads = h('ul', { class: 'muted', 'aria-live': 'polite' });
  const form = h('form', { id: 'new-ffmpeg' });
  let valid = false;
  let seq = 0;

  const drawInputs = () => {
    list.replaceChildren(...[...inputs].map(([name, v]) => h('tr', {},
      h('td', { class: 'mono' }, name),
      h('td', { class: 'mono' }, v.url ?? `inline text, ${v.content.length} characters`),
      h('td', {}, h('button', { type: 'button', class: 'link', onclick: () => { inputs.delete(name); drawInputs(); recheck(); } }, `Remove ${name}`)))));
  };
  const addInput = (name, v) => {
    inputs.set(name, v);
    drawInputs();
    recheck();
  };

  // drawRequired lists the names still to provide (the validator's requiredInputs), each with
  // an upload, a URL and inline text; it is drawn again only when the names change, so that
  // what is typed in it survives the checks of the command.
  const drawRequired = (names) => {
    const key = names.join('\n');
    if (key === requiredKey) return;
    requiredKey = key;
    required.hidden = !names.length;
    required.replaceChildren(...(names.length ? [
      h('p', {}, names.length === 1 ? 'Provide this input before submitting:' : 'Provide these inputs before submitting:'),
      h('ul', {}, names.map(requiredItem))] : []));
  };
  const requiredItem = (name) => {
    const sequence = /%0?\d*d/.test(name);
    const status = h('ul', { class: 'muted', 'aria-live': 'polite' });
    const file = h('input', { type: 'file', multiple: sequence, id: id('file'), 'aria-label': `Upload ${name}` });
    file.addEventListener('change', () => {
      const files = [...file.files];
      file.value = '';
      // A frame of an image sequence is staged under its own name; any other file under the
      // name the command reads.
      uploadAll(files, status, (a) => addInput(sequence ? a.name : name, { url: a.url }));
    });
    const url = h('input', { type: 'url', placeholder: 'https://…', size: 30, 'aria-label': `URL of ${name}` });
    const text = h('textarea', { rows: 3, 'aria-label': `Text of ${name}` });
    const textBox = h('div', { hidden: true }, text, h('button', { type: 'button', class: 'secondary', onclick: () => addInput(name, { content: text.value }) }, `Add ${name} as inline text`));
    return h('li', { 'data-required': name },
      h('strong', { class: 'mono' }, name),
      sequence ? h('span', { class: 'muted' }, ' (an image sequence: upload its numbered frames, named as the pattern says)') : null,
      h('div', { class: 'row' },
        h('label', { class: 'inline', for: file.id }, sequence ? 'Upload frames' : 'Upload a file'), file),
      sequence ? null : h('div', { class: 'row' }, url, h('button', { type: 'button', class: 'secondary', onclick: () => {
        if (!url.value.trim()) return flash(`Give the URL of ${name}.`, true);
        addInput(name, { url: url.value.trim() });
      } }, `Add ${name} by URL`),
      h('button', { type: 'button', class: 'link', 'aria-expanded': 'false', onclick: (e) => {
        textBox.hidden = !textBox.hidden;
        e.target.setAttribute('aria-expanded', String(!textBox.hidden));
        if (!textBox.hidden) text.focus();
      } }, 'or type it as text')),
      textBox, status);
  };

  // mark shows the offending flag (or input name) in the command.
  const mark = (err) => {
    const m = /flag (-[A-Za-z0-9_:.+-]+)/.exec(err) || /input "([^"]+)"/.exec(err);
    const what = m && m[1];
    const at = what ? command.value.indexOf(what) : -1;
    if (at < 0) {
      preview.hidden = true;
      return;
    }
    preview.replaceChildren(command.value.slice(0, at), h('mark', {}, what), command.value.slice(at + what.length));
    preview.hidden = false;
  };

  const recheck = async () => {
    const n = ++seq;
    const cmd = command.value;
    if (!cmd.trim()) {
      valid = false;
      check.dataset.state = 'empty';
      check.className = '';
      check.textContent = 'Type a command.';
      preview.hidden = true;
      drawRequired([]);
      submit.disabled = true;
      return;
    }
    const opts = { inputs: {} };
    for (const [name, v] of inputs) opts.inputs[name] = v.url ? { url: v.url } : { inline: true, contentSize: new TextEncoder().encode(v.content).length };
    if (assetPrefix) opts.assetUrlPrefix = assetPrefix;
    let r;
    try {
      r = await (await validator()).validate({ command: cmd, options: opts });
    } catch (e) {
      if (n !== seq) return;
      // Without the module the server still checks on submit.
      check.dataset.state = 'unavailable';
      check.className = 'muted';
      check.textContent = `In-browser check unavailable (${errorText(e)}); the server checks on submit.`;
      valid = true;
      submit.disabled = false;
      drawRequired([]);
      return;
    }
    if (n !== seq) return;
    // A valid command that reads names no input provides is not ready: the API refuses the job.
    const missing = r.valid ? r.requiredInputs || [] : [];
    valid = r.valid && !missing.length;
    check.dataset.state = !r.valid ? 'invalid' : missing.length ? 'missing-inputs' : 'valid';
    check.className = valid ? 'ok' : r.valid ? 'warn' : 'error';
    if (!r.valid) check.textContent = `✗ ${r.error}`;
    else if (missing.length) check.textContent = `The command is valid but reads ${missing.length === 1 ? 'an input' : 'inputs'} not provided yet: ${missing.join(', ')}.`;
    else check.textContent = `✓ Valid. Output format: ${r.inferredOutputFormat || 'inferred at run time'}.`;
    command.setAttribute('aria-invalid', String(!r.valid));
    if (r.valid) preview.hidden = true;
    else mark(r.error);
    drawRequired(missing);
    submit.disabled = !valid;
  };
  command.addEventListener('input', recheck);
  // Mark when the validator is loaded, so that a test can tell its own requests from ours.
  validator().then(() => { form.dataset.validator = 'ready'; }, () => { form.dataset.validator = 'unavailable'; });

  const urlName = h('input', { name: 'urlName', placeholder: 'in.mp4', size: 16 });
  const urlValue = h('input', { name: 'url', type: 'url', placeholder: 'https://…', size: 36 });
  const textName = h('input', { name: 'textName', placeholder: 'subs.srt', size: 16 });
  const textValue = h('textarea', { name: 'text', rows: 3 });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!valid) return;
    submit.disabled = true;
    const body = { type: 'ffmpeg', priority: priority.value, params: { command: command.value } };
    if (inputs.size) body.inputs = Object.fromEntries([...inputs].map(([k, v]) => [k, v.url ? v.url : { content: v.content }]));
    try {
      const { data } = await api('POST', '/jobs', body);
      location.hash = `#/jobs/${data.id}`;
    } catch (err) {
      check.className = 'error';
      check.textContent = `✗ ${errorText(err)}`;
      submit.disabled = false;
    }
  });

  form.append(
    field('FFmpeg command', command), check, preview, required,
    h('fieldset', {}, h('legend', {}, 'Inputs'),
      h('p', { class: 'muted' }, 'Each input is staged under its name; refer to it by name in the command.'),
      table(['Name', 'Source', ''], [], null), 
      dropZone('choose files to upload', true, (files) => uploadAll(files, uploads, (a) => addInput(a.name, { url: a.url }))),
      uploads,
      h('div', { class: 'row' }, field('Input name', urlName), field('Input URL', urlValue),
        h('button', { type: 'button', class: 'secondary', onclick: () => {
          if (!urlName.value || !urlValue.value) return flash('An input by URL needs a name and a URL.', true);
          addInput(urlName.value.trim(), { url: urlValue.value.trim() });
          urlName.value = urlValue.value = '';
        } }, 'Add URL input')),
      h('div', {}, field('Inline text name', textName), field('Inline text', textValue),
        h('button', { type: 'button', class: 'secondary', onclick: () => {
          if (!textName.value) return flash('Inline text needs a name.', true);
          addInput(textName.value.trim(), { content: textValue.value });
          textName.value = textValue.value = '';
        } }, 'Add inline text'))),
    field('Priority', priority), h('div', { class: 'actions' }, submit));
  form.querySelector('tbody').replaceWith(list);
  return form;
}

function captionForm() {
  let source = null;
  let subtitles = null;
  const srcURL = h('input', { type: 'url', name: 'sourceUrl', placeholder: 'https://… (or upload below)', size: 40 });
  const srcStatus = h('ul', { class: 'muted', 'aria-live': 'polite' });
  const subStatus = h('ul', { class: 'muted', 'aria-live': 'polite' });
  const num = (name, min, max, value, step = 1) => h('input', { type: 'number', name, min, max, value, step });
  const fontSize = num('fontSize', 8, 400, 48);
  const outlineWidth = num('outlineWidth', 0, 20, 2, 0.5);
  const marginV = num('marginV', 0, 2000, 60);
  const fontColor = h('input', { type: 'color', name: 'fontColor', value: '#ffffff' });
  const position = h('select', { name: 'position' }, ['bottom', 'center', 'top'].map((p) => h('option', { value: p }, p)));
  const alignment = h('select', { name: 'alignment' }, ['center', 'left', 'right'].map((p) => h('option', { value: p }, p)));
  const priority = prioritySelect();
  const box = h('input', { type: 'checkbox', name: 'boxEnabled', id: id('box') });
  const err = h('p', { class: 'error', role: 'alert' });
  const submit = h('button', { type: 'submit' }, 'Burn captions');
  const form = h('form', { id: 'new-caption', onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    const src = source ?? srcURL.value.trim();
    if (!src) {
      err.textContent = 'inputs.source: upload a video or give its URL';
      return;
    }
    const body = { type: 'caption.burn', priority: priority.value, inputs: { source: src }, params: {
      fontSize: Number(fontSize.value), outlineWidth: Number(outlineWidth.value), marginV: Number(marginV.value),
      fontColor: fontColor.value.toUpperCase(), position: position.value, alignment: alignment.value, boxEnabled: box.checked } };
    if (subtitles) body.inputs.subtitles = subtitles;
    submit.disabled = true;
    try {
      const { data } = await api('POST', '/jobs', body);
      location.hash = `#/jobs/${data.id}`;
    } catch (e2) {
      err.textContent = errorText(e2);
      submit.disabled = false;
    }
  } },
  h('fieldset', {}, h('legend', {}, 'Video'), field('Video URL', srcURL),
    dropZone('choose a video to upload', false, (files) => uploadAll(files.slice(0, 1), srcStatus, (a) => { source = a.url; srcURL.value = a.url; })), srcStatus),
  h('fieldset', {}, h('legend', {}, 'Subtitles (SRT, VTT or ASS; without them the audio is transcribed)'),
    dropZone('choose a subtitle file to upload', false, (files) => uploadAll(files.slice(0, 1), subStatus, (a) => { subtitles = a.url; })), subStatus),
  h('fieldset', {}, h('legend', {}, 'Style'),
    h('div', { class: 'row' }, field('Font size (px, 8–400)', fontSize), field('Font colour', fontColor),
      field('Outline width (0–20)', outlineWidth), field('Vertical margin (px)', marginV),
      field('Position', position), field('Alignment', alignment)),
    h('label', { class: 'inline', for: box.id }, box, 'Box behind the text')),
  field('Priority', priority), err, h('div', { class: 'actions' }, submit));
  srcURL.addEventListener('input', () => { source = null; });
  return form;
}

// presetForm runs a preset (GET /presets: the built-ins, then the account's): each variable a
// field of its type (a number within its range, an enum's choices, a string), each input the
// preset reads uploaded or given by URL under its name. The server checks the values at submit
// and names a refused one (params.variables.<name>): that field is marked.
function presetForm() {
  const pick = h('select', { name: 'preset' });
  const about = h('p', { class: 'muted', id: 'preset-about' });
  const vars = h('fieldset', {}, h('legend', {}, 'Variables'));
  const ins = h('fieldset', {}, h('legend', {}, 'Inputs'));
  const err = h('p', { class: 'error', role: 'alert', id: 'preset-error' });
  const submit = h('button', { type: 'submit', disabled: true }, 'Submit job');
  const priority = prioritySelect();
  let presets = [];
  let controls = new Map(); // variable name -> {control, v}
  let inputs = new Map(); // input name -> URL
  const current = () => presets.find((p) => p.name === pick.value);
  const ready = () => { submit.disabled = !current() || current().inputs.some((n) => !inputs.has(n)); };

  const variableField = (name, v) => {
    const attrs = { name: `var-${name}`, 'data-variable': name, required: v.default === undefined };
    let control;
    if (v.type === 'enum') control = h('select', attrs, v.values.map((x) => h('option', { value: x }, x)));
    else if (v.type === 'integer' || v.type === 'number') control = h('input', { ...attrs, type: 'number', min: String(v.min), max: String(v.max), step: v.type === 'integer' ? '1' : 'any' });
    else control = h('input', { ...attrs, type: 'text', maxlength: String(v.maxLength || 256), spellcheck: 'false' });
    if (v.default !== undefined) control.value = String(v.default);
    controls.set(name, { control, v });
    const range = v.type === 'integer' || v.type === 'number' ? `, ${v.min} to ${v.max}` : '';
    const hint = [v.description, v.default === undefined ? 'required' : null].filter(Boolean).join('; ');
    return h('div', {}, field(`${name} (${v.type}${range})`, control), hint ? h('p', { class: 'muted' }, hint) : null);
  };
  const inputItem = (name) => {
    const status = h('ul', { class: 'muted', 'aria-live': 'polite' });
    const url = h('input', { type: 'url', placeholder: 'https://…', size: 36, 'aria-label': `URL of ${name}`, 'data-input': name });
    url.addEventListener('input', () => {
      if (url.value.trim()) inputs.set(name, url.value.trim());
      else inputs.delete(name);
      ready();
    });
    return h('div', { 'data-preset-input': name }, h('strong', { class: 'mono' }, name),
      dropZone(`choose the file for ${name}`, false, (files) => uploadAll(files.slice(0, 1), status, (a) => {
        inputs.set(name, a.url);
        url.value = a.url;
        ready();
      })), field(`URL of ${name}`, url), status);
  };
  const draw = () => {
    const p = current();
    controls = new Map();
    inputs = new Map();
    err.textContent = '';
    about.textContent = p ? `${p.description || ''} Version ${p.version}${p.builtin ? ', built in' : ''}.` : '';
    vars.replaceChildren(h('legend', {}, 'Variables'), ...(p ? Object.keys(p.variables).sort().map((n) => variableField(n, p.variables[n])) : []));
    ins.replaceChildren(h('legend', {}, 'Inputs'), h('p', { class: 'muted' }, 'The preset reads these inputs by name: a file is staged under that name, whatever its own.'),
      ...(p ? p.inputs.map(inputItem) : []));
    ready();
  };
  pick.addEventListener('change', draw);

  const form = h('form', { id: 'new-preset', onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    const p = current();
    const variables = {};
    for (const [name, { control, v }] of controls) {
      control.removeAttribute('aria-invalid');
      const raw = control.value.trim();
      if (raw === '') continue; // absent: the preset's default, or the server names it as required
      variables[name] = v.type === 'integer' || v.type === 'number' ? Number(raw) : control.value;
    }
    submit.disabled = true;
    try {
      const { data } = await api('POST', '/jobs', { type: 'ffmpeg', priority: priority.value, inputs: Object.fromEntries(inputs), params: { preset: p.name, variables } });
      location.hash = `#/jobs/${data.id}`;
    } catch (e2) {
      err.textContent = errorText(e2);
      const m = /params\.variables\.([A-Za-z0-9_]+)/.exec(e2.message || '');
      const bad = m && controls.get(m[1]);
      if (bad) {
        bad.control.setAttribute('aria-invalid', 'true');
        bad.control.focus();
      }
      submit.disabled = false;
    }
  } }, field('Preset', pick), about, vars, ins, field('Priority', priority), err, h('div', { class: 'actions' }, submit));

  api('GET', '/presets').then(({ data }) => {
    presets = data;
    pick.replaceChildren(...data.map((p) => h('option', { value: p.name }, p.builtin ? `${p.name} (built in)` : p.name)));
    draw();
    form.dataset.presets = 'ready';
  }, (e) => { err.textContent = errorText(e); });
  return form;
}

// ---- webhooks ----------------------------------------------------------------------------------

const EVENTS = ['job.completed', 'job.failed', 'job.running', 'job.cancelled', 'batch.completed'];

function eventBoxes(selected) {
  return h('fieldset', {}, h('legend', {}, 'Events'), EVENTS.map((ev) => {
    const box = h('input', { type: 'checkbox', name: 'events', value: ev, checked: selected.includes(ev), id: id('ev') });
    return h('label', { class: 'inline', for: box.id }, box, ev);
  }));
}
const checkedEvents = (root) => [...root.querySelectorAll('input[name=events]:checked')].map((b) => b.value);

function webhooksPage(main) {
  const body = h('tbody', {});
  const secret = h('div', {});
  const name = h('input', { name: 'name', maxlength: 50, required: true });
  const url = h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://…', size: 40 });
  const events = eventBoxes(['job.completed', 'job.failed']);
  const err = h('p', { class: 'error', role: 'alert' });
  const load = async () => {
    const { data } = await api('GET', '/webhook-endpoints');
    body.replaceChildren(...data.map((e) => h('tr', { 'data-endpoint': e.id },
      h('td', {}, h('a', { href: `#/webhooks/${e.id}` }, e.name)), h('td', { class: 'mono wide' }, e.url),
      h('td', {}, e.subscribedEvents.join(', ')), h('td', {}, e.enabled ? 'enabled' : 'disabled'))));
    if (!data.length) body.append(h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No endpoints yet.')));
  };
  const form = h('form', { id: 'new-endpoint', onsubmit: async (e) => {
    e.preventDefault();
    err.textContent = '';
    try {
      const { data } = await api('POST', '/webhook-endpoints', { name: name.value, url: url.value, subscribedEvents: checkedEvents(form) });
      secret.replaceChildren(secretBox(`Signing secret of ${data.name}`, data.secret), h('p', {}, h('a', { href: `#/webhooks/${data.id}` }, `Open ${data.name}`)));
      name.value = url.value = '';
      await load();
    } catch (e2) {
      err.textContent = errorText(e2);
    }
  } }, h('div', { class: 'row' }, field('Name', name), field('URL', url)), events, err, h('button', { type: 'submit' }, 'Create endpoint'));
  main.replaceChildren(h('h1', {}, 'Webhooks'),
    h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col', class: 'wide' }, 'URL'), h('th', { scope: 'col' }, 'Events'), h('th', { scope: 'col' }, 'State'))), body)),
    secret, h('h2', {}, 'New endpoint'), form);
  load().catch((e) => fail(e));
}

function endpointPage(main, gen, epID) {
  const info = h('div', {});
  const secret = h('div', {});
  const deliveries = h('tbody', {});
  const open = new Set();
  let confirmDelete = false;

  const drawDeliveries = (list) => {
    deliveries.replaceChildren(...list.flatMap((d) => {
      const lastAttempt = d.history[d.history.length - 1];
      const details = h('details', { open: open.has(d.id) },
        h('summary', {}, 'Request and attempts'),
        h('h3', {}, 'Headers'),
        table(['Header', 'Value'], Object.entries(d.request.headers).map(([k, v]) => h('tr', {}, h('td', { class: 'mono' }, k), h('td', { class: 'mono' }, v)))),
        h('p', { class: 'muted' }, 'X-Service-Signature, X-Service-Timestamp and X-Service-Attempt are computed per attempt.'),
        h('h3', {}, 'Body'), h('pre', { class: 'delivery-body' }, prettyJSON(d.request.body)),
        h('h3', {}, 'Attempts'),
        table(['#', 'At', 'Status', 'Latency', 'Error'], d.history.map((a) => h('tr', {}, h('td', {}, a.attempt), h('td', {}, when(a.at)),
          h('td', {}, a.statusCode ?? '—'), h('td', {}, duration(a.durationMs)), h('td', {}, a.error ?? '')))));
      details.addEventListener('toggle', () => (details.open ? open.add(d.id) : open.delete(d.id)));
      return [
        h('tr', { 'data-delivery': d.id, 'data-state': d.state },
          h('td', {}, d.event, d.jobId ? [' ', h('a', { href: `#/jobs/${d.jobId}`, class: 'mono' }, d.jobId)] : null),
          h('td', {}, badge(d.state)), h('td', { class: 'delivery-status' }, d.lastStatusCode ?? '—'),
          h('td', {}, d.attempts), h('td', {}, lastAttempt ? duration(lastAttempt.durationMs) : '—'),
          h('td', { class: 'wide' }, when(d.createdAt)),
          h('td', {}, h('button', { type: 'button', class: 'secondary', 'aria-label': `Redeliver ${d.id}`, onclick: async () => {
            try {
              await api('POST', `/deliveries/${d.id}/redeliver`);
              flash('Redelivery queued.');
              await loadDeliveries();
            } catch (e) {
              fail(e);
            }
          } }, 'Redeliver'))),
        h('tr', {}, h('td', { colspan: 7 }, details)),
      ];
    }));
    if (!list.length) deliveries.append(h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No deliveries yet.')));
  };
  const loadDeliveries = async () => {
    const page = await api('GET', `/webhook-endpoints/${epID}/deliveries?limit=50`);
    drawDeliveries(page.data);
    return page.data.some((d) => d.state === 'pending') ? 1500 : 3000;
  };

  const drawInfo = (e) => {
    const name = h('input', { name: 'name', value: e.name, maxlength: 50 });
    const url = h('input', { name: 'url', type: 'url', value: e.url, size: 40 });
    const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: e.enabled, id: id('en') });
    const events = eventBoxes(e.subscribedEvents);
    const form = h('form', { id: 'edit-endpoint', onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const { data } = await api('PATCH', `/webhook-endpoints/${epID}`, { name: name.value, url: url.value, subscribedEvents: checkedEvents(form), enabled: enabled.checked });
        flash('Saved.');
        drawInfo(data);
      } catch (err) {
        fail(err);
      }
    } }, h('div', { class: 'row' }, field('Name', name), field('URL', url)), events,
    h('label', { class: 'inline', for: enabled.id }, enabled, 'Enabled'), h('div', {}, h('button', { type: 'submit' }, 'Save')));
    const del = h('button', { type: 'button', class: 'danger', onclick: async () => {
      if (!confirmDelete) {
        confirmDelete = true;
        del.textContent = 'Confirm delete';
        return;
      }
      try {
        await api('DELETE', `/webhook-endpoints/${epID}`);
        flash(`Deleted ${e.name}.`);
        location.hash = '#/webhooks';
      } catch (err) {
        fail(err);
      }
    } }, 'Delete endpoint');
    info.replaceChildren(
      h('dl', { class: 'facts' }, h('dt', {}, 'ID'), h('dd', { class: 'mono' }, e.id), h('dt', {}, 'Created'), h('dd', {}, when(e.createdAt)),
        h('dt', {}, 'Previous secret valid until'), h('dd', {}, when(e.previousSecretExpiresAt))),
      form,
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'secondary', onclick: async () => {
          try {
            await api('POST', `/webhook-endpoints/${epID}/test`);
            flash('Test event queued.');
            await loadDeliveries();
          } catch (err) {
            fail(err);
          }
        } }, 'Send test event'),
        h('button', { type: 'button', class: 'secondary', onclick: async () => {
          try {
            const { data } = await api('POST', `/webhook-endpoints/${epID}/rotate-secret`);
            secret.replaceChildren(secretBox('New signing secret', data.secret),
              h('p', { class: 'muted' }, `The previous secret also signs until ${when(data.previousSecretExpiresAt)}.`));
          } catch (err) {
            fail(err);
          }
        } }, 'Rotate secret'),
        del));
    $('h1', main).textContent = `Webhook endpoint ${e.name}`;
  };

  main.replaceChildren(h('h1', {}, 'Webhook endpoint'), info, secret, h('h2', {}, 'Deliveries'),
    h('div', { class: 'table-wrap' }, h('table', { id: 'deliveries' }, h('thead', {}, h('tr', {},
      ['Event', 'State', 'Status', 'Attempts', 'Latency'].map((x) => h('th', { scope: 'col' }, x)),
      h('th', { scope: 'col', class: 'wide' }, 'Created'), h('th', { scope: 'col' }, 'Action'))), deliveries)));
  api('GET', `/webhook-endpoints/${epID}`).then(({ data }) => drawInfo(data), (e) => fail(e));
  loadDeliveries().catch((e) => fail(e));
  poller(gen, 2000, loadDeliveries);
}

function prettyJSON(s) {
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch {
    return s;
  }
}

// ---- keys --------------------------------------------------------------------------------------

function keysPage(main) {
  const body = h('tbody', {});
  const secret = h('div', {});
  const load = async () => {
    const { data } = await api('GET', '/api-keys');
    body.replaceChildren(...data.map((k) => h('tr', { 'data-key': k.id, 'data-prefix': k.prefix },
      h('td', { class: 'mono' }, `${k.prefix}…`, k.id === session?.keyId ? h('span', { class: 'muted' }, ' (this session)') : null),
      h('td', {}, when(k.createdAt)), h('td', {}, k.lastUsedAt ? when(k.lastUsedAt) : 'never'),
      h('td', {}, k.revokedAt ? `revoked ${when(k.revokedAt)}` : 'live'),
      h('td', {}, k.revokedAt ? null : h('button', { type: 'button', class: 'danger', 'aria-label': `Revoke ${k.prefix}`, onclick: async () => {
        try {
          await api('DELETE', `/api-keys/${k.id}`);
          flash(`Revoked ${k.prefix}….`);
          await load();
        } catch (e) {
          fail(e);
        }
      } }, 'Revoke')))));
  };
  main.replaceChildren(h('h1', {}, 'API keys'),
    h('p', { class: 'muted' }, 'Last use is recorded to within a minute. Revoking a key also ends the sessions opened with it.'),
    h('div', { class: 'actions' }, h('button', { type: 'button', id: 'create-key', onclick: async () => {
      try {
        const { data } = await api('POST', '/api-keys');
        secret.replaceChildren(secretBox('New API key', data.secret));
        await load();
      } catch (e) {
        fail(e);
      }
    } }, 'Create key')),
    secret,
    table(['Key', 'Created', 'Last used', 'State', 'Action'], [], null));
  main.querySelector('tbody').replaceWith(body);
  body.id = 'keys';
  load().catch((e) => fail(e));
}

// ---- credits -----------------------------------------------------------------------------------

function creditsPage(main) {
  const summary = h('div', {});
  const body = h('tbody', { id: 'ledger' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Load more');
  let cursor = null;
  const rows = (entries) => entries.map((e) => h('tr', { 'data-kind': e.kind },
    h('td', {}, when(e.createdAt)), h('td', {}, e.kind), h('td', { class: e.amount.amount < 0 ? 'error' : 'ok' }, e.amount.formatted),
    h('td', {}, e.jobId ? h('a', { href: `#/jobs/${e.jobId}`, class: 'mono' }, e.jobId) : '—'), h('td', {}, e.note ?? '')));
  const page = async (c) => {
    const q = new URLSearchParams({ limit: '20' });
    if (c) q.set('cursor', c);
    const p = await api('GET', `/account/ledger?${q}`);
    if (!c) body.replaceChildren();
    body.append(...rows(p.data));
    cursor = p.pagination.nextCursor;
    more.hidden = !cursor;
  };
  more.addEventListener('click', () => page(cursor).catch((e) => fail(e)));
  main.replaceChildren(h('h1', {}, 'Credits'), summary, h('h2', {}, 'Ledger'),
    table(['When', 'Kind', 'Amount', 'Job', 'Note'], [], null), more);
  main.querySelector('tbody').replaceWith(body);
  api('GET', '/account').then(({ data: a }) => {
    const l = a.limits;
    summary.replaceChildren(h('dl', { class: 'facts' },
      h('dt', {}, 'Balance'), h('dd', { id: 'balance' }, h('strong', {}, a.balance.formatted)),
      h('dt', {}, 'Plan'), h('dd', {}, a.plan),
      h('dt', {}, 'Spent this month'), h('dd', {}, a.usage.spent.formatted),
      h('dt', {}, 'Requests per minute'), h('dd', {}, l.requestsPerMinute),
      h('dt', {}, 'Execution cap'), h('dd', {}, duration(l.executionCapSeconds * 1000)),
      h('dt', {}, 'GPU'), h('dd', {}, l.gpu ? 'yes' : 'no'),
      h('dt', {}, 'Concurrent jobs'), h('dd', {}, l.concurrency),
      h('dt', {}, 'Per job'), h('dd', {}, `${bytes(l.jobBytes)}, ${l.jobFiles} files`),
      h('dt', {}, 'Stopped when stalled'), h('dd', {}, `after ${duration(l.stallSeconds * 1000)} without progress`),
      h('dt', {}, 'Workers online'), h('dd', {}, `cpu: ${a.workers.cpu ? 'yes' : 'no'}, gpu: ${a.workers.gpu ? 'yes' : 'no'}`)));
  }, (e) => fail(e));
  page(null).catch((e) => fail(e));
}

// ---- routing -----------------------------------------------------------------------------------

const routes = [
  [/^#\/jobs\/(job_[A-Za-z0-9]+)$/, jobPage],
  [/^#\/jobs$/, jobsPage],
  [/^#\/new$/, newJobPage],
  [/^#\/queue$/, queuePage],
  [/^#\/webhooks\/(we_[A-Za-z0-9]+)$/, endpointPage],
  [/^#\/webhooks$/, webhooksPage],
  [/^#\/keys$/, keysPage],
  [/^#\/credits$/, creditsPage],
];

function route(e) {
  const gen = ++generation;
  const main = $('#main');
  if (!session) {
    signInPage(main);
    return;
  }
  $('#nav').hidden = false;
  let hash = location.hash || '#/jobs';
  if (!routes.some(([re]) => re.test(hash))) hash = '#/jobs';
  for (const a of document.querySelectorAll('#nav a')) {
    const on = hash.startsWith(a.getAttribute('href'));
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const [re, page] of routes) {
    const m = re.exec(hash);
    if (m) {
      page(main, gen, ...m.slice(1));
      break;
    }
  }
  // After a move within the app, the page's content takes the focus, as a page load would
  // put it at the top; on the first load the focus stays at the start of the document.
  if (e) {
    main.focus({ preventScroll: true });
    // A notice belongs to the page it was shown on; an error stays until it times out.
    if ($('#flash').className !== 'error') flash('');
  }
}

setOnUnauthorized(() => {
  if (!session) return;
  session = null;
  flash('Your session has ended; sign in again.', true);
  route();
});

$('#signout').addEventListener('click', async () => {
  try {
    await signOut();
  } catch {
    // Signed out either way: the cookie is cleared or was already dead.
  }
  session = null;
  location.hash = '';
  route();
});

window.addEventListener('hashchange', route);
resume().then((s) => { session = s; }, () => { session = null; }).finally(route);
