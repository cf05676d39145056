// FrameStream: the /ws connection. Pairs each frame's JSON with the JPEG that
// follows it (same seq), decodes the JPEG off the main thread with
// createImageBitmap, and hands {meta, bitmap} pairs to onFrame. Reconnects by
// itself with exponential backoff and jitter.
//
// Runs on the main thread; decoding is async. At most one decode is in flight and
// at most one paired frame waits behind it (newer replaces older), so a slow
// browser skips frames instead of queueing them.

export const RECONNECT_BASE_MS = 500;
export const RECONNECT_MAX_MS = 10000;
export const RECONNECT_JITTER = 0.25; // +-25 %
/** No message for this long on an open socket while frames are expected: reconnect. */
export const STALL_TIMEOUT_MS = 10000;
export const STALL_CHECK_MS = 1000;

/** Connection states reported to onStatus. */
export const ConnectionState = Object.freeze({
  CONNECTING: 'connecting',
  OPEN: 'open',
  RECONNECTING: 'reconnecting',
});

/** ws:// or wss:// URL for `path` on the page's own host. */
export function sameHostWebSocketURL(path, location = globalThis.location) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${path}`;
}

/** Delay before reconnect attempt number `attempt` (0-based), in ms. */
export function backoffDelay(attempt, random = Math.random) {
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** attempt);
  return Math.round(base * (1 + RECONNECT_JITTER * (2 * random() - 1)));
}

export class FrameStream {
  /**
   * @param {string} url
   * @param {{onFrame: (frame: {meta: object, bitmap: ImageBitmap}) => void,
   *          onStatus?: (status: {state: string, retryAt?: number, attempt: number}) => void}} handlers
   */
  constructor(url, { onFrame, onStatus = () => {} }) {
    this.url = url;
    this.onFrame = onFrame;
    this.onStatus = onStatus;
    this.socket = null;
    this.attempt = 0;
    this.state = ConnectionState.CONNECTING;
    this.expectFrames = true; // set false by the app while the source has no signal
    this.lastMessageAt = 0;
    this.pendingMeta = null; // JSON waiting for its JPEG
    this.decoding = false;
    this.waiting = null; // newest paired {meta, blob} waiting for the decoder
    this.newestSeq = -Infinity;
    this.generation = 0;
    this.stats = { received: 0, decoded: 0, skipped: 0, unpaired: 0, sizeMismatch: 0, decodeErrors: 0, reconnects: 0 };
    this.retryTimer = null;
    this.stallTimer = setInterval(() => this.#checkStall(), STALL_CHECK_MS);
  }

  start() {
    this.#connect();
    return this;
  }

  /** Reconnects at once (after signing in or out, so the new session applies to the stream). */
  reconnectNow() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.attempt = 0;
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close();
    this.#connect();
  }

  #setState(state, retryAt) {
    this.state = state;
    this.onStatus({ state, retryAt, attempt: this.attempt });
  }

  #connect() {
    this.retryTimer = null;
    this.pendingMeta = null;
    this.generation += 1; // frames from an older connection are never shown
    this.newestSeq = -Infinity; // a restarted server may start seq again
    let socket;
    try {
      socket = new WebSocket(this.url);
    } catch (error) {
      this.#scheduleReconnect();
      return;
    }
    socket.binaryType = 'blob';
    this.socket = socket;
    socket.onopen = () => {
      this.lastMessageAt = performance.now();
      this.#setState(ConnectionState.OPEN);
    };
    socket.onmessage = (event) => this.#onMessage(event.data);
    socket.onclose = () => {
      if (this.socket === socket) this.#scheduleReconnect();
    };
    // An error is always followed by close; nothing to do here.
    socket.onerror = () => {};
  }

  #scheduleReconnect() {
    this.socket = null;
    this.pendingMeta = null;
    if (this.retryTimer) return;
    const delay = backoffDelay(this.attempt);
    this.attempt += 1;
    this.stats.reconnects += 1;
    this.retryTimer = setTimeout(() => this.#connect(), delay);
    this.#setState(ConnectionState.RECONNECTING, Date.now() + delay);
  }

  #checkStall() {
    if (this.state !== ConnectionState.OPEN || !this.socket || !this.expectFrames) return;
    if (performance.now() - this.lastMessageAt > STALL_TIMEOUT_MS) {
      const socket = this.socket;
      this.socket = null;
      socket.close();
      this.#scheduleReconnect();
    }
  }

  #onMessage(data) {
    this.lastMessageAt = performance.now();
    if (typeof data === 'string') {
      let meta;
      try {
        meta = JSON.parse(data);
      } catch {
        return;
      }
      if (!meta || meta.type !== 'frame') return;
      if (this.pendingMeta) this.stats.unpaired += 1; // its JPEG never came
      this.pendingMeta = meta;
      return;
    }
    const meta = this.pendingMeta;
    this.pendingMeta = null;
    if (!meta) {
      this.stats.unpaired += 1; // a JPEG without its JSON: never draw it
      return;
    }
    const blob = data instanceof Blob ? data : new Blob([data]);
    if (Number.isFinite(meta.jpegBytes) && blob.size !== meta.jpegBytes) {
      this.stats.sizeMismatch += 1;
      return;
    }
    this.stats.received += 1;
    this.attempt = 0; // a whole frame arrived: the connection works
    if (globalThis.document?.hidden) {
      this.stats.skipped += 1; // nobody can see it: don't spend time decoding
      return;
    }
    if (this.waiting) this.stats.skipped += 1;
    this.waiting = { meta, blob, generation: this.generation };
    this.#decodeNext();
  }

  async #decodeNext() {
    if (this.decoding || !this.waiting) return;
    const { meta, blob, generation } = this.waiting;
    this.waiting = null;
    this.decoding = true;
    try {
      const bitmap = await createImageBitmap(blob);
      if (generation !== this.generation || (Number.isFinite(meta.seq) && !(meta.seq > this.newestSeq))) {
        bitmap.close(); // from a closed connection, or not newer than what we showed
        this.stats.skipped += 1;
      } else {
        if (Number.isFinite(meta.seq)) this.newestSeq = meta.seq;
        this.stats.decoded += 1;
        this.onFrame({ meta, bitmap });
      }
    } catch (error) {
      this.stats.decodeErrors += 1;
    } finally {
      this.decoding = false;
      this.#decodeNext();
    }
  }
}
