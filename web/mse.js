// MsePlayer: plays /ws?video=fmp4 (fragmented MP4, one fragment per frame; see
// docs/video.md) through Media Source Extensions into a <video>, which needs
// no secure context, and hands each presented picture on with the JSON of its own
// frame.
//
// Matching pictures to boxes: each frame's JSON carries its fragment's `fmp4.pts`
// (ticks of the init notice's timescale, 90 kHz). requestVideoFrameCallback gives the
// presented picture's `mediaTime` (its timestamp, seconds); round(mediaTime *
// timescale) is that pts, and the pts -> JSON map gives the frame. The picture is
// copied into a canvas in that callback (the rendering step that presents it). When no
// later frame had been appended by then, the compositor had no later picture to show,
// so the copy is painted at once with its boxes. Otherwise (the page is behind) it is
// painted at the next callback, once that shows the copy held the picture described
// (Chromium's drawImage takes the compositor's newest picture, which can already be
// the next one: then no picture was reported in between, or the next copy is the same
// picture).
//
// Live edge: the buffer stays short. After each append, a playhead more than
// LIVE_BEHIND_S behind the newest frame jumps to it, one more than CATCH_UP_S behind
// plays at CATCH_UP_RATE until it is within CAUGHT_UP_S (no seek, so no glitch); what lies more than
// KEEP_BEHIND_S behind the playhead (and before the newest keyframe) is removed.
// A stall (fragments arrive, no picture is presented for STALL_MS while the page is
// visible) asks the stream to reconnect: the server then starts on a keyframe with a
// new init segment, and a new MediaSource takes it.
//
// Main thread. The pure parts (PtsMetaMap, liveEdge) are unit-tested under node.

export const LIVE_BEHIND_S = 0.15;
/** Behind the buffered end by more than this (and less than a jump): play a little faster until back under CAUGHT_UP_S. */
export const CATCH_UP_S = 0.05;
export const CAUGHT_UP_S = 0.035;
export const CATCH_UP_RATE = 1.1;
export const KEEP_BEHIND_S = 3;
export const STALL_MS = 2500;
export const MAX_PENDING_METAS = 1024;
/**
 * When a later frame was already appended, a presented-picture callback that runs this long after
 * the picture's expected display time is not painted: by then the compositor may have moved the
 * <video> to the next picture, and the copy would show that one with these boxes. The previous
 * picture stays, with its own boxes. (With no later frame appended, the copy is painted at once.)
 */
export const LATE_CALLBACK_MS = 25;
/** The thumbnail two copies are compared by (see MsePlayer's check before painting). */
export const FINGERPRINT_SIZE = [64, 48];

/** Whether two fingerprints (RGBA bytes, or null) are of the same picture. */
export function sameFingerprint(a, b) {
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;
  return true;
}

/** The MediaSource class this browser has: MediaSource, else ManagedMediaSource (iPhone Safari 17.1+), else null. */
export function mediaSourceClass(scope = globalThis) {
  return scope.MediaSource ?? scope.ManagedMediaSource ?? null;
}

/** Whether this browser can play H.264 in fragmented MP4 through MSE at all. */
export function hasMSE(scope = globalThis, codec = 'avc1.42E01E') {
  const MS = mediaSourceClass(scope);
  try {
    return !!MS && typeof MS.isTypeSupported === 'function' && MS.isTypeSupported(`video/mp4; codecs="${codec}"`);
  } catch {
    return false;
  }
}

/**
 * pts -> the JSON of the frames appended but not yet presented. Pictures are presented in
 * pts order, so taking pts P forgets every older entry (frames the browser skipped).
 */
export class PtsMetaMap {
  constructor(limit = MAX_PENDING_METAS) {
    this.limit = limit;
    this.map = new Map();
    this.skipped = 0; // frames never presented (dropped by the browser or behind a jump)
  }

  get size() {
    return this.map.size;
  }

  set(pts, meta) {
    this.map.set(pts, meta);
    while (this.map.size > this.limit) {
      this.map.delete(this.map.keys().next().value);
      this.skipped += 1;
    }
  }

  /** Whether a frame later than `pts` was handed to the player (appended or queued) and is not yet presented. */
  hasAfter(pts) {
    for (const key of this.map.keys()) if (key > pts) return true;
    return false;
  }

  /** The JSON of the picture at `pts`, or undefined; entries older than it go. */
  take(pts) {
    const meta = this.map.get(pts);
    for (const key of [...this.map.keys()]) {
      if (key < pts) {
        this.map.delete(key);
        this.skipped += 1;
      } else if (key === pts) this.map.delete(key);
    }
    return meta;
  }

  clear() {
    this.map.clear();
  }
}

/**
 * What to do with the playhead and the buffer, from the buffered range [start, end] that
 * holds the newest frame (seconds), the playhead, and the newest keyframe's time.
 * @returns {{seekTo: number|null, removeBefore: number|null, playbackRate: number}}
 *   seekTo: jump there (just before the end, inside the newest frame); removeBefore: remove
 *   the buffer before that time (never past the newest keyframe, which later frames need);
 *   playbackRate: faster while a little behind, 1 once caught up (`rate`: the current one).
 */
export function liveEdge({ start, end, currentTime, newestKeyTime = null, rate = 1, behind = LIVE_BEHIND_S,
  keep = KEEP_BEHIND_S }) {
  let seekTo = null;
  if (currentTime < start || end - currentTime > behind) seekTo = Math.max(start, end - 0.001);
  const lag = seekTo === null ? end - currentTime : 0;
  const playbackRate = lag > CATCH_UP_S ? CATCH_UP_RATE : lag < CAUGHT_UP_S ? 1 : rate;
  const playhead = seekTo ?? currentTime;
  let removeBefore = null;
  const limit = Math.min(playhead - keep, newestKeyTime ?? -Infinity);
  if (limit > start + 0.5) removeBefore = limit;
  return { seekTo, removeBefore, playbackRate };
}

export class MsePlayer {
  /**
   * @param {{video: HTMLVideoElement,
   *          onFrame: (frame: {meta: object, bitmap: HTMLCanvasElement, format: string}) => void,
   *          onStall?: (why: string) => void,
   *          onUnsupported?: (error: Error, codec: string) => void,
   *          document?: Document}} options
   */
  constructor({ video, onFrame, onStall = () => {}, onUnsupported = () => {}, document = globalThis.document }) {
    this.video = video;
    this.onFrame = onFrame;
    this.onStall = onStall;
    this.onUnsupported = onUnsupported;
    this.document = document;
    this.MediaSource = mediaSourceClass();
    this.source = null;
    this.buffer = null;
    this.url = null;
    this.queue = [];
    this.metas = new PtsMetaMap();
    this.timescale = 90000;
    this.codec = null;
    this.generation = 0;
    this.newestKeyTime = null;
    this.lastAppendAt = 0;
    this.lastPresentedAt = 0;
    this.canvas = null;
    this.unsupported = null;
    this.stats = {
      inits: 0, fragments: 0, presented: 0, atOnce: 0, late: 0, unverified: 0, orphans: 0, rearmed: 0, jumps: 0, removes: 0, appendErrors: 0, stalls: 0,
      dropped: 0, // fragments before any init segment (never appended)
    };
    this.#watchFrames();
    this.stallTimer = setInterval(() => this.#checkStall(), 500);
  }

  /** Frames appended but never presented (the browser dropped them, or a jump passed them). */
  get skipped() {
    return this.metas.skipped;
  }

  /** How far the playhead is behind the newest frame appended, in seconds (null before any). */
  get behindSeconds() {
    const b = this.buffer?.buffered;
    if (!b || !b.length) return null;
    return Math.max(0, b.end(b.length - 1) - this.video.currentTime);
  }

  /** An init segment (after its `fmp4Init` notice): a new timeline, so a new MediaSource. */
  init(notice, data) {
    const codec = typeof notice.codec === 'string' && notice.codec ? notice.codec : 'avc1.64001f';
    const type = `video/mp4; codecs="${codec}"`;
    if (!this.MediaSource || !this.MediaSource.isTypeSupported(type)) {
      this.unsupported = new Error(`this browser's MSE cannot play ${type}`);
      this.onUnsupported(this.unsupported, codec);
      return;
    }
    this.#teardown();
    this.generation += 1;
    const generation = this.generation;
    this.codec = codec;
    this.timescale = Number.isFinite(notice.timescale) && notice.timescale > 0 ? notice.timescale : 90000;
    this.queue = [data];
    this.stats.inits += 1;
    const source = new this.MediaSource();
    this.source = source;
    source.addEventListener('sourceopen', () => {
      if (generation !== this.generation) return;
      try {
        this.buffer = source.addSourceBuffer(type);
      } catch (error) {
        this.unsupported = error;
        this.onUnsupported(error, codec);
        return;
      }
      this.buffer.mode = 'segments';
      this.buffer.addEventListener('updateend', () => {
        if (generation === this.generation) this.#afterAppend();
      });
      this.buffer.addEventListener('error', () => {
        if (generation === this.generation) this.stats.appendErrors += 1;
      });
      this.#pump();
    }, { once: true });
    // ManagedMediaSource (Safari) plays only with remote playback off.
    if (this.MediaSource !== globalThis.MediaSource) this.video.disableRemotePlayback = true;
    this.url = URL.createObjectURL(source);
    this.video.src = this.url;
    this.lastPresentedAt = performance.now();
  }

  /** One paired frame: its JSON (with `fmp4`) and its fragment. Returns false when it cannot be played. */
  push(meta, data) {
    if (!this.source || this.unsupported) {
      this.stats.dropped += 1;
      return false;
    }
    const pts = meta.fmp4.pts;
    this.metas.set(pts, meta);
    if (meta.video?.key) this.newestKeyTime = pts / this.timescale;
    this.queue.push(data);
    this.stats.fragments += 1;
    this.lastAppendAt = performance.now();
    this.#pump();
    return true;
  }

  /** A new stream (reconnect, mode switch): everything goes; the next init segment starts again. */
  reset() {
    this.#teardown();
    this.generation += 1;
  }

  close() {
    this.reset();
    clearInterval(this.stallTimer);
    this.stallTimer = null;
  }

  #teardown() {
    this.queue = [];
    this.held = null;
    this.lastPrint = null;
    this.metas.clear();
    this.newestKeyTime = null;
    this.buffer = null;
    const source = this.source;
    this.source = null;
    if (source && source.readyState === 'open') {
      try {
        source.endOfStream();
      } catch {}
    }
    if (this.url) {
      this.video.removeAttribute('src');
      this.video.load();
      URL.revokeObjectURL(this.url);
      this.url = null;
    }
  }

  #pump() {
    const buffer = this.buffer;
    if (!buffer || buffer.updating || !this.queue.length) return;
    // Everything waiting goes in one append (a joiner's catch-up, a tab coming back).
    const parts = this.queue;
    this.queue = [];
    let bytes;
    if (parts.length === 1) bytes = parts[0];
    else {
      const total = parts.reduce((n, p) => n + p.byteLength, 0);
      bytes = new Uint8Array(total);
      let at = 0;
      for (const p of parts) {
        bytes.set(new Uint8Array(p), at);
        at += p.byteLength;
      }
    }
    try {
      buffer.appendBuffer(bytes);
    } catch (error) {
      // QuotaExceededError or a closed source: start again from the next keyframe.
      this.stats.appendErrors += 1;
      this.#stalled(`append: ${error?.name || error}`);
    }
  }

  #afterAppend() {
    const buffer = this.buffer;
    const video = this.video;
    if (!buffer || !buffer.buffered.length) return this.#pump();
    const last = buffer.buffered.length - 1;
    const visible = !this.document?.hidden;
    const { seekTo, removeBefore, playbackRate } = liveEdge({
      start: buffer.buffered.start(last),
      end: buffer.buffered.end(last),
      currentTime: video.currentTime,
      newestKeyTime: this.newestKeyTime,
      rate: video.playbackRate,
    });
    if (video.playbackRate !== playbackRate) video.playbackRate = playbackRate;
    if (seekTo !== null && visible) {
      video.currentTime = seekTo;
      this.stats.jumps += 1;
    }
    if (video.paused && visible) video.play().catch(() => {});
    // Older ranges (before a gap) and what lies far behind the playhead go, when nothing waits to be appended.
    const firstStart = buffer.buffered.start(0);
    const cut = buffer.buffered.length > 1 ? Math.max(removeBefore ?? -Infinity, buffer.buffered.start(last) - 0.001)
      : removeBefore;
    if (cut !== null && cut > firstStart && !this.queue.length) {
      try {
        buffer.remove(firstStart, cut);
        this.stats.removes += 1;
        return;
      } catch {}
    }
    this.#pump();
  }

  /**
   * requestVideoFrameCallback, again after each callback. A callback lost while the page was frozen
   * (a background tab) would end the chain, so a chain silent for over a second while fragments
   * arrive is started again (#checkStall).
   */
  #watchFrames() {
    const video = this.video;
    if (typeof video.requestVideoFrameCallback !== 'function') return;
    if (this.frameCallback !== undefined) video.cancelVideoFrameCallback?.(this.frameCallback);
    const onPresented = (now, metadata) => {
      this.frameCallback = video.requestVideoFrameCallback(onPresented);
      this.lastCallbackAt = performance.now();
      this.#presented(metadata);
    };
    this.frameCallback = video.requestVideoFrameCallback(onPresented);
    this.lastCallbackAt = performance.now();
  }

  /** A picture is being presented (requestVideoFrameCallback): its frame's JSON, and a copy of it. */
  #presented(metadata) {
    this.lastPresentedAt = performance.now();
    const video = this.video;
    const width = metadata.width || video.videoWidth;
    const height = metadata.height || video.videoHeight;
    if (!width || !height) return;
    // The picture, copied now, into the one of three canvases that is neither on screen (the overlay
    // holds it, and may paint it again) nor held for the check below.
    this.canvases ??= [0, 1, 2].map(() => this.document.createElement('canvas'));
    const canvas = this.canvases.find((c) => c !== this.shown && c !== this.held?.frame.bitmap);
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    canvas.getContext('2d').drawImage(video, 0, 0, width, height);
    const print = this.#fingerprint(canvas);

    // The copy made at the previous callback is painted only now, once this one shows it was the
    // picture that callback described: Chromium's drawImage takes the compositor's newest picture,
    // which can already be the next one. Then either that next picture was never reported (a
    // picture came between the two callbacks unreported) or it is this one (the two copies are the
    // same picture while the one before them differed); either way the copy is dropped.
    const held = this.held;
    this.held = null;
    if (held) {
      const consecutive = metadata.presentedFrames === held.presentedFrames + 1;
      const aheadOfItself = sameFingerprint(held.print, print) && !sameFingerprint(held.print, held.before);
      if (consecutive && !aheadOfItself) {
        this.#show(held.frame);
      } else this.stats.unverified += 1;
    }
    const before = this.lastPrint;
    this.lastPrint = print;

    const pts = Math.round(metadata.mediaTime * this.timescale);
    const meta = this.metas.take(pts);
    if (!meta) {
      this.stats.orphans += 1; // a picture whose JSON is gone (a stale picture after a reset): never drawn with boxes
      return;
    }
    const frame = { meta, bitmap: canvas, format: 'mse', mediaTime: metadata.mediaTime };
    if (!this.metas.hasAfter(pts)) {
      // No later picture had been appended when the copy was made, so the compositor had none to
      // show: the copy is this picture, painted now, in the rendering step that presents it.
      this.stats.atOnce += 1;
      this.#show(frame);
      return;
    }
    if (performance.now() - metadata.expectedDisplayTime > LATE_CALLBACK_MS) {
      this.stats.late += 1;
      return;
    }
    this.held = {
      presentedFrames: metadata.presentedFrames,
      print,
      before,
      frame,
    };
  }

  #show(frame) {
    this.stats.presented += 1;
    this.shown = frame.bitmap;
    this.onFrame(frame);
  }

  /** A small grey thumbnail of a copy, to tell whether two copies hold the same picture. */
  #fingerprint(canvas) {
    if (!this.thumb) {
      this.thumb = this.document.createElement('canvas');
      this.thumb.width = FINGERPRINT_SIZE[0];
      this.thumb.height = FINGERPRINT_SIZE[1];
      this.thumbContext = this.thumb.getContext('2d', { willReadFrequently: true });
    }
    const [w, h] = FINGERPRINT_SIZE;
    this.thumbContext.drawImage(canvas, 0, 0, w, h);
    return this.thumbContext.getImageData(0, 0, w, h).data;
  }

  #checkStall() {
    if (!this.source || this.document?.hidden) {
      this.lastPresentedAt = performance.now();
      return;
    }
    const now = performance.now();
    if (now - this.lastAppendAt < 1000 && now - this.lastCallbackAt > 1000) {
      this.stats.rearmed += 1;
      this.#watchFrames();
    }
    if (now - this.lastAppendAt < 1000 && now - this.lastPresentedAt > STALL_MS) this.#stalled('no picture presented');
  }

  #stalled(why) {
    this.stats.stalls += 1;
    this.lastPresentedAt = performance.now();
    this.reset();
    this.onStall(why);
  }
}
