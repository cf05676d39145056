// API access for the tool panels: fetch with the session cookie + readable errors.
//
// The browser signs in once (access.js: POST /api/session); the HttpOnly cookie it
// gets goes with every request and the WebSocket. Every non-2xx answer becomes an ApiError carrying the server's JSON "error" and
// "detail", which describeError() turns into one sentence for the page.
//
// The pure helpers (sanitizeTemplateName, imageContentType, describeError,
// ApiError.fromResponseBody) are unit-tested under Node in Tests/web/api.test.mjs;
// nothing here touches the DOM at import time.

export const TOKEN_STORAGE_KEY = 'sightline.token';
export const REQUEST_TIMEOUT_MS = 15000;
/** Template names the server accepts: letters, digits, space, - _ . ; at most this long. */
export const MAX_TEMPLATE_NAME_LENGTH = 64;
export const FALLBACK_TEMPLATE_NAME = 'template';
const DISALLOWED_NAME_CHARS = /[^A-Za-z0-9 _.-]+/g;
const HAS_DISALLOWED_NAME_CHAR = /[^A-Za-z0-9 _.-]/;
const IMAGE_TYPES_BY_EXTENSION = Object.freeze({ jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png' });

/** HTTP statuses with their own advice in describeError(). */
export const Status = Object.freeze({ UNAUTHORIZED: 401, TOO_MANY: 429 });

/** A refused or failed request: `status` 0 means the server was not reached at all. */
export class ApiError extends Error {
  constructor({ status = 0, error = '', detail = '', retryAfter = null, action = '' } = {}) {
    super(error || (status ? `HTTP ${status}` : 'network error'));
    this.name = 'ApiError';
    this.status = status;
    this.error = error;
    this.detail = detail;
    this.retryAfter = retryAfter;
    this.action = action;
  }

  /** From a non-2xx answer's status, body text and Retry-After header. */
  static fromResponseBody(status, bodyText, retryAfterHeader, action = '') {
    let error = '';
    let detail = '';
    try {
      const body = JSON.parse(bodyText);
      if (body && typeof body === 'object') {
        error = typeof body.error === 'string' ? body.error : '';
        detail = typeof body.detail === 'string' ? body.detail : '';
      }
    } catch {
      error = (bodyText || '').trim().slice(0, 200);
    }
    const seconds = Number.parseFloat(retryAfterHeader);
    return new ApiError({ status, error, detail, retryAfter: Number.isFinite(seconds) ? seconds : null, action });
  }
}

/** One readable sentence for an error from apiRequest (or anything thrown near it). */
export function describeError(err) {
  if (!(err instanceof ApiError)) return `${err?.message || err}`;
  const action = err.action ? `${err.action}: ` : '';
  if (err.status === 0) return `${action}the server could not be reached (${err.error || 'network error'}).`;
  const what = [err.error, err.detail].filter(Boolean).join(' — ') || 'refused';
  let advice = '';
  if (err.status === Status.UNAUTHORIZED) advice = ' Sign in under Access.';
  if (err.status === Status.TOO_MANY) {
    advice = err.retryAfter != null ? ` Try again in ${Math.ceil(err.retryAfter)} s.` : ' Try again later.';
  }
  return `${action}${what} (HTTP ${err.status}).${advice}`;
}

/** A template name from a file name: base name, only allowed characters, never empty. */
export function sanitizeTemplateName(fileName) {
  const base = String(fileName || '').split(/[\\/]/).pop();
  const dot = base.lastIndexOf('.');
  const stem = dot > 0 ? base.slice(0, dot) : base;
  const cleaned = stem
    .replace(DISALLOWED_NAME_CHARS, '_')
    .replace(/^[\s._-]+|[\s._-]+$/g, '') // no leading dots ("..") or dangling separators
    .replace(/\s+/g, ' ')
    .slice(0, MAX_TEMPLATE_NAME_LENGTH)
    .trim();
  return cleaned || FALLBACK_TEMPLATE_NAME;
}

/** True when the server will accept `name` as a template name (TemplateName.swift: ASCII letters,
 * digits, space - _ . ; not starting with '.' or a space, not ending with a space). */
export function isValidTemplateName(name) {
  return typeof name === 'string' && name.trim() === name && name.length > 0 &&
    name.length <= MAX_TEMPLATE_NAME_LENGTH && !HAS_DISALLOWED_NAME_CHAR.test(name) && !name.startsWith('.');
}

/** Content-Type for an image file: the browser's type, else from the extension. */
export function imageContentType(file) {
  if (file?.type) return file.type;
  const extension = String(file?.name || '').split('.').pop().toLowerCase();
  return IMAGE_TYPES_BY_EXTENSION[extension] || 'application/octet-stream';
}

// --- token ------------------------------------------------------------------
// The page no longer keeps a token: signing in gives an HttpOnly session cookie
// (access.js). An older page kept one in localStorage; it is taken once, to sign
// in with, and removed.

export function takeLegacyToken() {
  try {
    const store = globalThis.localStorage;
    const token = store?.getItem(TOKEN_STORAGE_KEY) || '';
    store?.removeItem(TOKEN_STORAGE_KEY);
    return token.trim();
  } catch {
    return ''; // storage disabled
  }
}

const unauthorizedListeners = new Set();
/** Called with the ApiError whenever the server answers 401. */
export function onUnauthorized(listener) {
  unauthorizedListeners.add(listener);
}

// --- requests ---------------------------------------------------------------

/**
 * One request, with the session cookie (same origin). `json` is sent as a JSON body;
 * `body` is sent as is (with `contentType`). Resolves to the parsed JSON answer
 * (or null for an empty one); rejects with ApiError.
 */
export async function apiRequest(path, { method = 'GET', json, body, contentType, action = '' } = {}) {
  const headers = {};
  let payload = body;
  if (json !== undefined) {
    payload = JSON.stringify(json);
    headers['Content-Type'] = 'application/json';
  } else if (contentType) {
    headers['Content-Type'] = contentType;
  }
  const abort = new AbortController();
  const timeout = setTimeout(() => abort.abort(), REQUEST_TIMEOUT_MS);
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, cache: 'no-store', signal: abort.signal });
  } catch (error) {
    throw new ApiError({ status: 0, error: abort.signal.aborted ? 'timed out' : error.message, action });
  } finally {
    clearTimeout(timeout);
  }
  const text = await response.text().catch(() => '');
  if (!response.ok) {
    const err = ApiError.fromResponseBody(response.status, text, response.headers.get('Retry-After'), action);
    if (err.status === Status.UNAUTHORIZED) for (const listener of unauthorizedListeners) listener(err);
    throw err;
  }
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Path segment for a name, e.g. "/api/templates/" + pathName("a b") -> "a%20b". */
export function pathName(name) {
  return encodeURIComponent(name);
}

// --- a notice line shared by the panels ---------------------------------------

export const NOTICE_CLEAR_MS = 8000;

/** Shows short success/failure messages in one element (role=status in the HTML). */
export class Notice {
  constructor(element) {
    this.element = element;
    this.timer = null;
  }

  #show(kind, text, sticky) {
    clearTimeout(this.timer);
    this.element.textContent = text;
    this.element.dataset.kind = kind;
    this.element.hidden = !text;
    if (!sticky && text) this.timer = setTimeout(() => this.clear(), NOTICE_CLEAR_MS);
  }

  ok(text) {
    this.#show('ok', text, false);
  }

  info(text) {
    this.#show('info', text, false);
  }

  /** Errors stay until the next message: people need time to read them. */
  error(errorOrText) {
    this.#show('error', typeof errorOrText === 'string' ? errorOrText : describeError(errorOrText), true);
  }

  clear() {
    this.#show('', '', true);
  }
}
