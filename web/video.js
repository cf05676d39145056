// The pure parts of the player: which video mode to use, pairing each frame's
// JSON with the binary message after it, the seq -> meta bookkeeping for frames
// inside the H.264 decoder, the keyframe gate, and the bitrate meter.
//
// No DOM, no WebCodecs: everything here runs (and is unit-tested) under node.

/**
 * The video modes of /ws (see DESIGN.md and docs/video.md): JPEG; H.264 decoded with
 * WebCodecs (`?video=h264`, Annex B access units); H.264 played through Media Source Extensions
 * (`?video=fmp4`, fragmented MP4), which needs no secure context.
 */
export const VideoMode = Object.freeze({ JPEG: 'jpeg', H264: 'h264', MSE: 'mse' });
/** localStorage key of the viewer's explicit choice. */
export const MODE_STORAGE_KEY = 'sightline.video';
/** What the page says when the context is not secure (WebCodecs is not exposed there). */
export const NEEDS_HTTPS = 'H.264 needs HTTPS here';
/** What the page says when it plays H.264 through MSE because WebCodecs is missing. */
export const PLAYING_MSE = 'Playing H.264 through Media Source Extensions';

/** The /ws path for a mode: JPEG keeps the plain path (today's stream). */
export function videoWebSocketPath(mode, base = '/ws') {
  if (mode === VideoMode.H264) return `${base}?video=h264`;
  if (mode === VideoMode.MSE) return `${base}?video=fmp4`;
  return base;
}

/**
 * Which mode to start in and which H.264 players can be offered: WebCodecs where the context is
 * secure and has it, MSE (MediaSource or ManagedMediaSource) otherwise, JPEG last.
 * @param {{requested?: string|null, stored?: string|null, hasDecoder: boolean, secure: boolean,
 *          hasMSE?: boolean, host?: string}} env
 *   requested: the page URL's ?video= (this load only); stored: the viewer's remembered
 *   choice; hasDecoder: 'VideoDecoder' in window; hasMSE: MediaSource or ManagedMediaSource
 *   can play H.264 in MP4; secure: window.isSecureContext; host: location.host, for the message.
 * @returns {{mode: string, h264Available: boolean, mseAvailable: boolean, reason: string|null}}
 *   h264Available: WebCodecs; reason says why WebCodecs is off and what plays instead (null when it is on).
 */
export function chooseVideoMode({ requested = null, stored = null, hasDecoder, secure, hasMSE = false, host = '' }) {
  let reason = null;
  const where = host ? ` (http://${host} is not a secure context)` : '';
  if (!secure && hasMSE) {
    reason = `${PLAYING_MSE}${where}: browsers decode video with WebCodecs only over HTTPS or on localhost. ` +
      'MSE plays it here with every picture\'s own boxes, a little behind WebCodecs.';
  } else if (!secure) {
    // Browsers expose WebCodecs only in a secure context: HTTPS, or http://localhost / 127.0.0.1.
    reason = `${NEEDS_HTTPS}${where}: browsers decode video with WebCodecs only over HTTPS or on localhost, ` +
      'and this browser has no Media Source Extensions either. ' +
      'Serve HTTPS (tls: {auto: true} in the config) or open the page at http://127.0.0.1. Showing JPEG.';
  } else if (!hasDecoder) {
    reason = hasMSE
      ? `${PLAYING_MSE}: this browser has no WebCodecs (VideoDecoder).`
      : 'H.264 needs WebCodecs (VideoDecoder), which this browser does not have. Showing JPEG.';
  }
  const h264Available = secure && hasDecoder;
  const mseAvailable = hasMSE;
  const wanted = parseStoredMode(requested) ?? parseStoredMode(stored) ?? VideoMode.H264;
  let mode = VideoMode.JPEG;
  if (wanted === VideoMode.H264) mode = h264Available ? VideoMode.H264 : mseAvailable ? VideoMode.MSE : VideoMode.JPEG;
  else if (wanted === VideoMode.MSE) mode = mseAvailable ? VideoMode.MSE : h264Available ? VideoMode.H264 : VideoMode.JPEG;
  return { mode, h264Available, mseAvailable, reason };
}

/** A stored choice read back safely (anything unknown is no choice). */
export function parseStoredMode(value) {
  return value === VideoMode.JPEG || value === VideoMode.H264 || value === VideoMode.MSE ? value : null;
}

/** "H.264" / "H.264 (MSE)" / "JPEG" for people. */
export function modeName(mode) {
  if (mode === VideoMode.H264) return 'H.264';
  if (mode === VideoMode.MSE) return 'H.264 (MSE)';
  return mode === VideoMode.JPEG ? 'JPEG' : '–';
}

/** The format of a frame's JSON: 'mse' when it announces an fMP4 fragment, 'h264' an access unit, else 'jpeg'. */
export function frameFormat(meta) {
  if (meta?.fmp4 && Number.isFinite(meta.fmp4.pts)) return VideoMode.MSE;
  return meta?.video?.format === VideoMode.H264 ? VideoMode.H264 : VideoMode.JPEG;
}

/** The length the binary message after this JSON must have, or undefined when it does not say. */
export function expectedBinaryBytes(meta) {
  const format = frameFormat(meta);
  if (format === VideoMode.MSE) return Number.isFinite(meta.fmp4.bytes) ? meta.fmp4.bytes : undefined;
  if (format === VideoMode.H264) return Number.isFinite(meta.video.bytes) ? meta.video.bytes : undefined;
  return Number.isFinite(meta?.jpegBytes) ? meta.jpegBytes : undefined;
}

/** Size in bytes of a binary WebSocket message (Blob, ArrayBuffer or a typed array). */
export function binarySize(data) {
  if (data == null) return 0;
  if (Number.isFinite(data.size)) return data.size; // Blob
  if (Number.isFinite(data.byteLength)) return data.byteLength; // ArrayBuffer, views
  return 0;
}

/**
 * Pairs each frame's JSON with the binary message that follows it. A binary with
 * no JSON before it, a JSON whose binary never came (another JSON came first), or
 * a binary of the wrong length is never handed on; each is counted, and `onLoss`
 * is told (so an H.264 player knows its reference chain is broken).
 */
export class FramePairer {
  /** @param {{onLoss?: (reason: 'unpaired'|'sizeMismatch', meta: object|null) => void}} options */
  constructor({ onLoss = () => {} } = {}) {
    this.onLoss = onLoss;
    this.pending = null;
    this.stats = { paired: 0, unpaired: 0, sizeMismatch: 0 };
  }

  /** A text message: a frame's JSON (anything else is ignored). Returns true when it was a frame. */
  text(message) {
    let meta;
    try {
      meta = JSON.parse(message);
    } catch {
      return false;
    }
    if (!meta || meta.type !== 'frame') return false;
    const lost = this.pending;
    this.pending = meta;
    if (lost) {
      this.stats.unpaired += 1; // its binary never came
      this.onLoss('unpaired', lost);
    }
    return true;
  }

  /**
   * A binary message. Returns {meta, data} when it completes a frame, or
   * {loss: 'unpaired'|'sizeMismatch'} when it must be dropped.
   */
  binary(data) {
    const meta = this.pending;
    this.pending = null;
    if (!meta) {
      this.stats.unpaired += 1; // no JSON before it (its JSON was lost): never drawn
      this.onLoss('unpaired', null);
      return { loss: 'unpaired' };
    }
    const expected = expectedBinaryBytes(meta);
    if (expected !== undefined && binarySize(data) !== expected) {
      this.stats.sizeMismatch += 1;
      this.onLoss('sizeMismatch', meta);
      return { loss: 'sizeMismatch', meta };
    }
    this.stats.paired += 1;
    return { meta, data };
  }

  /** Forget a half-received frame (a new connection). */
  reset() {
    this.pending = null;
  }
}

/**
 * seq -> meta for the frames inside the decoder. Decoded frames come out in
 * decode order (no B-frames), so taking seq N also forgets every older entry: a
 * frame the decoder dropped never leaves a stale entry behind. Bounded: past
 * `limit` entries the oldest goes.
 */
export class SeqMetaMap {
  constructor(limit = 64) {
    this.limit = limit;
    this.map = new Map();
    this.evicted = 0;
    this.forgotten = 0;
  }

  get size() {
    return this.map.size;
  }

  set(seq, meta) {
    this.map.delete(seq);
    this.map.set(seq, meta);
    while (this.map.size > this.limit) {
      this.map.delete(this.map.keys().next().value);
      this.evicted += 1;
    }
  }

  /** The meta of `seq` (undefined when unknown); entries with a smaller seq are dropped. */
  take(seq) {
    const meta = this.map.get(seq);
    for (const key of [...this.map.keys()]) {
      if (key < seq) {
        this.map.delete(key);
        this.forgotten += 1;
      } else if (key === seq) {
        this.map.delete(key);
      }
    }
    return meta;
  }

  clear() {
    this.map.clear();
  }
}

/**
 * Lets access units into the decoder only from a keyframe on: at the start, and
 * after anything that breaks the reference chain (a decode error, a lost or
 * dropped frame, a full decode queue). Counts why it had to wait and what it held back.
 */
export class KeyframeGate {
  constructor() {
    this.waiting = true;
    this.reason = 'start';
    this.waits = {}; // reason -> times the chain broke for it (the start is not counted)
    this.held = 0; // deltas dropped while waiting
  }

  /** Should this access unit go to the decoder? */
  admit(key) {
    if (key) {
      this.waiting = false;
      this.reason = null;
      return true;
    }
    if (this.waiting) {
      this.held += 1;
      return false;
    }
    return true;
  }

  /** The chain broke: hold deltas until the next keyframe. Counted once per break. */
  wait(reason) {
    if (!this.waiting) this.waits[reason] = (this.waits[reason] || 0) + 1;
    this.waiting = true;
    this.reason = reason;
  }

  /** A new stream (reconnect): wait for its first keyframe without counting a break. */
  restart() {
    this.waiting = true;
    this.reason = 'start';
  }

  get totalWaits() {
    return Object.values(this.waits).reduce((a, b) => a + b, 0);
  }
}

export const BITRATE_WINDOW_MS = 3000;

/** Bytes received over the last `windowMs`, as bits per second. */
export class BitrateMeter {
  constructor(windowMs = BITRATE_WINDOW_MS) {
    this.windowMs = windowMs;
    this.samples = []; // [time ms, bytes]
    this.total = 0; // bytes in the window
    this.firstAt = null;
  }

  add(bytes, now) {
    if (!(bytes > 0)) return;
    if (this.firstAt === null) this.firstAt = now;
    this.samples.push([now, bytes]);
    this.total += bytes;
    this.#prune(now);
  }

  #prune(now) {
    while (this.samples.length && now - this.samples[0][0] >= this.windowMs) this.total -= this.samples.shift()[1];
  }

  /** Bits per second over the window ending now (over the time since the first byte while that is shorter); null before any byte. */
  bitsPerSecond(now) {
    if (this.firstAt === null) return null;
    this.#prune(now);
    const span = Math.min(this.windowMs, now - this.firstAt);
    if (span < 250) return null; // too short to say
    return (this.total * 8 * 1000) / span;
  }

  reset() {
    this.samples = [];
    this.total = 0;
    this.firstAt = null;
  }
}

/** 850 kbit/s, 1.25 Mbit/s, 12.7 Mbit/s. */
export function formatBitrate(bitsPerSecond) {
  if (!Number.isFinite(bitsPerSecond)) return '–';
  if (bitsPerSecond >= 10e6) return `${(bitsPerSecond / 1e6).toFixed(1)} Mbit/s`;
  if (bitsPerSecond >= 1e6) return `${(bitsPerSecond / 1e6).toFixed(2)} Mbit/s`;
  return `${Math.round(bitsPerSecond / 1e3)} kbit/s`;
}

/** UTF-8 length of a string without allocating (WebSocket text messages are UTF-8). */
export function utf8Length(text) {
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** A bounded list of the newest `limit` entries. */
export class Ring {
  constructor(limit) {
    this.limit = Math.max(1, Math.floor(limit));
    this.items = [];
  }

  push(item) {
    this.items.push(item);
    if (this.items.length > this.limit) this.items.splice(0, this.items.length - this.limit);
  }
}
