// api.js: requests to /api/web, and the token form.
//
// A request answered 401 shows the token form (dialog#auth); once
// POST /api/web/auth has set the cookie the request is sent again. Every
// request with a body sends it as JSON with Content-Type
// application/json; the browser adds Origin.

import { $ } from './util.js';

/** ApiError is a failed request: its HTTP status and the error's code. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || 'HTTP ' + status);
    this.status = status;
    this.code = code || '';
  }
}

/** api sends a request and returns its JSON answer (null when empty). */
export async function api(method, path, body) {
  for (;;) {
    const opts = { method, credentials: 'same-origin', headers: {} };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (err) {
      throw new ApiError(0, 'network', 'cannot reach ccbridge: ' + err.message);
    }
    if (res.status === 401) {
      await askToken();
      continue;
    }
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!res.ok) throw new ApiError(res.status, data?.error?.code, data?.error?.message || text.trim());
    return data;
  }
}

// pending is the promise of the token form while it is shown, shared by
// every request that got 401 meanwhile.
let pending = null;

/** askToken shows the token form until the server takes a token. */
export function askToken() {
  pending ||= new Promise((resolve) => {
    const dialog = $('#auth');
    const input = $('#token');
    const submit = async () => {
      const res = await fetch('/api/web/auth', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token: input.value.trim() }),
      }).catch(() => null);
      if (res?.ok) {
        input.value = $('#auth-error').textContent = '';
        dialog.close();
        pending = null;
        resolve();
      } else {
        $('#auth-error').textContent = res ? `That token was refused (${res.status}).` : 'Cannot reach ccbridge.';
      }
    };
    $('#auth-submit').onclick = submit;
    input.onkeydown = (e) => e.key === 'Enter' && submit();
    dialog.oncancel = (e) => e.preventDefault(); // Escape does not skip it
    if (!dialog.open) dialog.showModal();
    input.focus();
  });
  return pending;
}
