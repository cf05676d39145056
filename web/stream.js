// FrameStream: the /ws connection, in JPEG or H.264 mode. Pairs each frame's
// JSON with the binary message that follows it (FramePairer), and hands
// {meta, bitmap, format} to onFrame: a JPEG decoded off the main thread with
// createImageBitmap, or an access unit decoded by H264Player (WebCodecs) into a
// VideoFrame bound to its own seq. Counts the bytes of both messages for the
// bitrate shown. Reconnects by itself with exponential backoff and jitter.
//
// Runs on the main thread; decoding is async. JPEG: at most one decode is in
// flight and at most one paired frame waits behind it (newer replaces older), so
// a slow browser skips frames instead of queueing them. H.264: every access unit
// goes to the decoder (a delta needs the ones before it) unless its queue is
// full, when deltas are dropped until the next keyframe.

import { FramePairer, BitrateMeter, VideoMode, frameFormat, binarySize, utf8Length } from './video.js';
import { H264Player } from './h264.js';
import { MsePlayer } from './mse.js';

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
  CLOSED: 'closed', // stop() was called
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
   * @param {string|((mode: string) => string)} url the WebSocket URL, or a function of the mode
   * @param {{onFrame: (frame: {meta: object, bitmap: ImageBitmap|VideoFrame, format: string}) => void,
   *          onStatus?: (status: {state: string, retryAt?: number, attempt: number}) => void,
   *          onUnsupported?: (error: Error, codec: string) => void,
   *          mode?: string, video?: HTMLVideoElement}} handlers
   *   onUnsupported: the browser cannot decode the H.264 stream's codec (the app goes back to JPEG).
   *   video: the <video> MSE mode plays into (its pictures reach onFrame copied, with their own JSON).
   */
  constructor(url, { onFrame, onStatus = () => {}, onUnsupported = () => {}, mode = VideoMode.JPEG, video = null }) {
    this.urlFor = typeof url === 'function' ? url : () => url;
    this.mode = mode;
    this.url = this.urlFor(mode);
    this.onFrame = onFrame;
    this.onStatus = onStatus;
    this.onUnsupported = onUnsupported;
    this.socket = null;
    this.attempt = 0;
    this.state = ConnectionState.CONNECTING;
    this.expectFrames = true; // set false by the app while the source has no signal
    this.lastMessageAt = 0;
    // A frame lost between the JSON and its binary breaks an H.264 reference chain:
    // the player then waits for the next keyframe.
    this.pairer = new FramePairer({
      onLoss: (reason, meta) => {
        if (!meta || frameFormat(meta) === VideoMode.H264) this.player?.gap('lost');
      },
    });
    this.meter = new BitrateMeter();
    this.player = null; // H264Player, made on the first H.264 frame
    this.video = video;
    this.mse = null; // MsePlayer, made on the first fMP4 init segment
    this.pendingInit = null; // an fmp4Init notice whose init segment is the next binary message
    this.decoding = false;
    this.waiting = null; // newest paired {meta, blob} waiting for the decoder
    this.newestSeq = -Infinity;
    this.generation = 0;
    this.lastFormat = null; // format of the newest frame received
    this.stats = { received: 0, decoded: 0, skipped: 0, unpaired: 0, sizeMismatch: 0, decodeErrors: 0, reconnects: 0 };
    this.retryTimer = null;
    this.stallTimer = setInterval(() => this.#checkStall(), STALL_CHECK_MS);
  }

  /** Switch between JPEG and H.264: a new connection on the mode's URL. */
  setMode(mode) {
    if (mode === this.mode) return;
    this.mode = mode;
    this.url = this.urlFor(mode);
    this.meter.reset();
    this.reconnectNow();
  }

  /** Bits per second received (both messages of every frame) over the last few seconds. */
  bitsPerSecond(now = performance.now()) {
    return this.meter.bitsPerSecond(now);
  }

  /** The H.264 decoder's counters (WebCodecs, or MSE in MSE mode), or null before the first H.264 frame. */
  get videoStats() {
    if (this.mode === VideoMode.MSE) {
      if (!this.mse) return null;
      return {
        ...this.mse.stats,
        player: 'mse',
        codec: this.mse.codec,
        skipped: this.mse.skipped,
        behindSeconds: this.mse.behindSeconds,
        decodeErrors: this.mse.stats.appendErrors,
        orphans: 0, // a picture without its JSON is never drawn; counted as mse orphans
        waitingFor: this.mse.source ? null : 'start',
        unsupported: this.mse.unsupported ? String(this.mse.unsupported.message || this.mse.unsupported) : null,
      };
    }
    if (!this.player) return null;
    return {
      ...this.player.stats,
      codec: this.player.codec,
      catchUpThrough: Number.isFinite(this.player.catchUpThrough) ? this.player.catchUpThrough : null,
      waitingFor: this.player.waitingFor,
      keyframeWaits: this.player.keyframeWaits,
      unsupported: this.player.unsupported ? String(this.player.unsupported.message || this.player.unsupported) : null,
    };
  }

  /** Connects (again after stop()); nothing happens while already connected or about to be. */
  start() {
    if (this.socket || this.retryTimer) return this;
    this.stallTimer ??= setInterval(() => this.#checkStall(), STALL_CHECK_MS);
    this.#connect();
    return this;
  }

  /**
   * Closes the connection and stays closed until start(): no reconnect, no
   * timer, and a frame still being decoded is never handed on (a tile scrolled
   * out of view costs nothing).
   */
  stop() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    clearInterval(this.stallTimer);
    this.stallTimer = null;
    this.generation += 1;
    this.waiting = null;
    this.pairer.reset();
    this.player?.reset();
    this.mse?.reset();
    this.pendingInit = null;
    this.attempt = 0;
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close();
    this.#setState(ConnectionState.CLOSED);
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
    this.pairer.reset();
    this.player?.reset(); // a new stream starts on a keyframe of its own
    this.mse?.reset(); // and an init segment of its own
    this.pendingInit = null;
    this.waiting = null;
    this.generation += 1; // frames from an older connection are never shown
    this.newestSeq = -Infinity; // a restarted server may start seq again
    let socket;
    try {
      socket = new WebSocket(this.url);
    } catch (error) {
      this.#scheduleReconnect();
      return;
    }
    // JPEG goes to createImageBitmap as a Blob; an access unit to the decoder as bytes.
    socket.binaryType = this.mode === VideoMode.JPEG ? 'blob' : 'arraybuffer';
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
    this.pairer.reset();
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
      this.meter.add(utf8Length(data), this.lastMessageAt);
      if (!this.pairer.text(data)) this.#notice(data);
      this.stats.unpaired = this.pairer.stats.unpaired;
      return;
    }
    this.meter.add(binarySize(data), this.lastMessageAt);
    if (this.pendingInit) {
      // An fMP4 init segment: announced by its notice, never part of a frame.
      const notice = this.pendingInit;
      this.pendingInit = null;
      if (binarySize(data) === notice.bytes) this.#ensureMse().init(notice, data);
      return;
    }
    const paired = this.pairer.binary(data);
    this.stats.unpaired = this.pairer.stats.unpaired;
    this.stats.sizeMismatch = this.pairer.stats.sizeMismatch;
    if (paired.loss) return; // never drawn (the pairer told the player)
    const { meta } = paired;
    this.stats.received += 1;
    this.attempt = 0; // a whole frame arrived: the connection works
    this.lastFormat = frameFormat(meta);
    if (this.lastFormat === VideoMode.MSE) {
      // Appended even while hidden (a hole would stop playback until the next keyframe).
      if (!this.#ensureMse().push(meta, data)) this.stats.skipped += 1;
      return;
    }
    if (this.lastFormat === VideoMode.H264) {
      this.#decodeH264(meta, data);
      return;
    }
    if (globalThis.document?.hidden) {
      this.stats.skipped += 1; // nobody can see it: don't spend time decoding
      return;
    }
    const blob = data instanceof Blob ? data : new Blob([data]);
    if (this.waiting) this.stats.skipped += 1;
    this.waiting = { meta, blob, generation: this.generation };
    this.#decodeNext();
  }

  /** A text message that is no frame: a catch-up notice (DESIGN.md: a joiner on a camera's own H.264
   * gets the units since its newest keyframe at once, so its decoder catches up). */
  #notice(text) {
    let notice;
    try {
      notice = JSON.parse(text);
    } catch {
      return;
    }
    if (notice?.type === 'fmp4Init' && Number.isFinite(notice.bytes)) {
      this.pendingInit = notice;
      return;
    }
    if (notice?.type !== 'catchUp' || !Number.isFinite(notice.through)) return;
    if (this.mode === VideoMode.MSE) return; // MSE plays a catch-up from the buffer; nothing to tell it
    this.#ensurePlayer();
    this.player.catchUp(notice.through);
  }

  #ensureMse() {
    if (!this.mse) {
      this.mse = new MsePlayer({
        video: this.video,
        onFrame: (frame) => this.#deliverMse(frame),
        onStall: () => this.reconnectNow(),
        onUnsupported: (error, codec) => this.onUnsupported(error, codec),
      });
    }
    return this.mse;
  }

  /** A picture MSE presented, with its own JSON. */
  #deliverMse(frame) {
    const seq = frame.meta.seq;
    if (!(seq > this.newestSeq)) {
      this.stats.skipped += 1;
      return;
    }
    this.newestSeq = seq;
    this.stats.decoded += 1;
    this.onFrame(frame);
  }

  #ensurePlayer() {
    if (!this.player) {
      this.player = new H264Player({
        onFrame: (frame) => this.#deliver(frame),
        onUnsupported: (error, codec) => this.onUnsupported(error, codec),
      });
    }
  }

  #decodeH264(meta, data) {
    this.#ensurePlayer();
    if (globalThis.document?.hidden) {
      // Nobody can see it: don't decode. Deltas need their predecessors, so
      // decoding resumes at the first keyframe after the page is shown again.
      this.stats.skipped += 1;
      this.player.gap('hidden');
      return;
    }
    if (!this.player.push(meta, data)) this.stats.skipped += 1;
  }

  /** An H.264 picture decoded, with its own meta; newer than anything shown. */
  #deliver(frame) {
    const seq = frame.meta.seq;
    if (!(seq > this.newestSeq)) {
      frame.bitmap.close();
      this.stats.skipped += 1;
      return;
    }
    this.newestSeq = seq;
    this.stats.decoded += 1;
    this.onFrame(frame);
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
        this.onFrame({ meta, bitmap, format: VideoMode.JPEG });
      }
    } catch (error) {
      this.stats.decodeErrors += 1;
    } finally {
      this.decoding = false;
      this.#decodeNext();
    }
  }
}
