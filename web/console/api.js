// The public API of the same origin, with the session cookie. The CSRF token is kept in this
// module's memory only (never in storage): it is learnt from POST /session or GET /session and
// sent on every state-changing request.

let csrf = '';

export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// onUnauthorized is called when the session has ended, so the app can show the sign-in page.
export let onUnauthorized = () => {};
export function setOnUnauthorized(fn) { onUnauthorized = fn; }

export async function api(method, path, body, opts = {}) {
  const headers = { Accept: 'application/json' };
  let payload;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD' && csrf) headers['X-CSRF-Token'] = csrf;
  const res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin', cache: 'no-store' });
  if (res.status === 204) return null;
  let json = null;
  try {
    json = await res.json();
  } catch {
    // Not JSON: an error page from a proxy, say.
  }
  if (!res.ok) {
    const code = json?.error?.code || 'HTTP_' + res.status;
    const message = json?.error?.message || `${method} ${path}: ${res.status}`;
    if (res.status === 401 && !opts.quiet) onUnauthorized();
    throw new APIError(res.status, code, message);
  }
  return json;
}

export async function signIn(apiKey) {
  const { data } = await api('POST', '/session', { apiKey }, { quiet: true });
  csrf = data.csrfToken;
  return data;
}

export async function resume() {
  const { data } = await api('GET', '/session', undefined, { quiet: true });
  csrf = data.csrfToken;
  return data;
}

export async function signOut() {
  try {
    await api('DELETE', '/session', undefined, { quiet: true });
  } finally {
    csrf = '';
  }
}

// upload sends a file through POST /uploads with progress, which fetch cannot report.
export function upload(file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/uploads');
    xhr.setRequestHeader('X-CSRF-Token', csrf);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress?.(e.loaded / e.total); };
    xhr.onload = () => {
      if (xhr.status === 201 || xhr.status === 200) return resolve(xhr.response.data);
      const e = xhr.response?.error;
      reject(new APIError(xhr.status, e?.code || 'HTTP_' + xhr.status, e?.message || `upload failed: ${xhr.status}`));
    };
    xhr.onerror = () => reject(new APIError(0, 'NETWORK', 'upload failed: network error'));
    const form = new FormData();
    form.append('file', file, file.name);
    xhr.send(form);
  });
}
