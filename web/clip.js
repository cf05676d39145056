// ClipPlayer: plays an event's clip (fragmented MP4 demuxed by mp4.js) with WebCodecs,
// drawing each picture and that same sample's SEI boxes (sei.js) in one go through the
// page's Overlay, so a box never lands on a neighbouring frame. Play is paced by the
// samples' timestamps; pause; step one frame forward or back; seek anywhere. A frame
// far from what the decoder holds is reached by decoding from the keyframe before it,
// and only that frame is shown.
//
// Each chunk's timestamp is its sample index, so a decoded VideoFrame says which sample
// it is. Decoding is serial: one wanted frame at a time, under a lock, and a newer seek
// supersedes an older one still waiting. A decoder that holds a picture back (no output
// within OUTPUT_WAIT_MS) is flushed, after which it needs a keyframe again.
//
// Runs on the main thread; decoding happens on the browser's own threads. VideoDecoder,
// EncodedVideoChunk, the overlay and the clock are injected so the stepping logic is
// unit-tested under node (Tests/web/clip.test.mjs). The pure helpers are exported.

import { Overlay } from './overlay.js';
import { readSightlineSEI } from './sei.js';

export { demuxClip, parseBoxes, parseAvcC, codecString, ClipFormatError } from './mp4.js';
export { readSightlineSEI, nalUnits, removeEmulationPrevention, seiMessages, SIGHTLINE_SEI_UUID } from './sei.js';

/** How long a wanted picture may take to come out before the decoder is flushed for it. */
export const OUTPUT_WAIT_MS = 400;
/** Playback this late re-anchors its clock instead of rushing through frames to catch up. */
export const MAX_LATE_MS = 250;
/** Half a frame at 60 fps: times this close count as the same instant. */
const TIME_EPSILON_S = 0.008;
/** The width the page shows a clip at (style.css): overlay lines and labels are scaled to look the same on any picture size. */
const SHOWN_WIDTH = 640;

/** Index of the keyframe at or before sample `index` (0 when there is none). */
export function keyframeBefore(samples, index) {
  for (let i = Math.min(index, samples.length - 1); i >= 0; i -= 1) if (samples[i].isKey) return i;
  return 0;
}

/** Seconds from the clip's first sample to sample `index`. */
export function clipTime(samples, index) {
  return samples.length ? samples[index].timestamp - samples[0].timestamp : 0;
}

/** The sample on screen `seconds` after the clip's first sample: the last one starting by then. */
export function sampleAt(samples, seconds) {
  let found = 0;
  for (let i = 0; i < samples.length; i += 1) {
    if (clipTime(samples, i) <= seconds + TIME_EPSILON_S) found = i;
    else break;
  }
  return found;
}

/**
 * The event's own span on the clip's timeline: the first and last samples captured
 * between event.startTime and event.endTime (still open: to the clip's end), and those
 * as fractions of the timeline (sample index / last index). Null when they do not meet.
 */
export function eventSpan(samples, clipStart, event) {
  if (!samples.length || !Number.isFinite(clipStart) || !Number.isFinite(event?.startTime)) return null;
  const from = event.startTime - clipStart;
  const to = Number.isFinite(event.endTime) ? event.endTime - clipStart : Infinity;
  let first = -1;
  let last = -1;
  for (let i = 0; i < samples.length; i += 1) {
    const t = clipTime(samples, i);
    if (t + TIME_EPSILON_S < from || t - TIME_EPSILON_S > to) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) return null;
  const scale = samples.length > 1 ? samples.length - 1 : 1;
  return { first, last, from: first / scale, to: last / scale };
}

/**
 * The sample of the event's best frame: the one whose SEI seq is best.seq, else the one
 * captured nearest best.time, else the start of the event's span, else the first.
 */
export function bestSample(samples, metas, clipStart, event) {
  const best = event?.best;
  if (Number.isFinite(best?.seq)) {
    const i = metas.findIndex((m) => m?.seq === best.seq);
    if (i >= 0) return i;
  }
  if (Number.isFinite(best?.time) && Number.isFinite(clipStart) && samples.length) {
    let nearest = 0;
    for (let i = 1; i < samples.length; i += 1) {
      const distance = (i) => Math.abs(clipStart + clipTime(samples, i) - best.time);
      if (distance(i) < distance(nearest)) nearest = i;
    }
    return nearest;
  }
  return eventSpan(samples, clipStart, event)?.first ?? 0;
}

/**
 * Is a drawn box (an Overlay rect: kind, label, id) the event's own thing? Same kind, and
 * the template's label or the face's track id when the event says it.
 */
export function isEventBox(rect, event) {
  if (!event || rect.kind !== event.kind) return false;
  if (rect.kind === 'face') return event.trackId == null || rect.id === event.trackId;
  return event.label == null || rect.label === event.label;
}

/** "0:04.27" (minutes, seconds with hundredths). */
export function formatClipTime(seconds) {
  const s = Math.max(0, Number.isFinite(seconds) ? seconds : 0);
  const minutes = Math.floor(s / 60);
  return `${minutes}:${(s - minutes * 60).toFixed(2).padStart(5, '0')}`;
}

/**
 * What to feed the decoder to show sample `target` when samples up to `fedUpTo` have been
 * fed (-1: none) and `needsKey` says whether it must start again on a keyframe:
 * {reset, from} — decode samples from..target, after a reset when going back.
 */
export function decodePlan(samples, target, fedUpTo, needsKey) {
  const key = keyframeBefore(samples, target);
  if (target > fedUpTo) {
    // Forward: go on from what was fed, unless a keyframe comes first or the chain is broken.
    if (!needsKey && fedUpTo >= 0 && fedUpTo + 1 >= key) return { reset: false, from: fedUpTo + 1 };
    return { reset: false, from: key };
  }
  return { reset: true, from: key }; // back (or the same frame again): from its keyframe, afresh
}

export class ClipPlayer {
  /**
   * @param {{canvas: object, overlay?: object, onChange?: (state: object) => void,
   *          onError?: (error: Error) => void, VideoDecoder?: Function, EncodedVideoChunk?: Function,
   *          now?: () => number, sleep?: (ms: number) => Promise<void>, outputWaitMs?: number}} options
   *   overlay: an Overlay (made on `canvas` when not given); onChange: after every picture and
   *   play/pause; onError: a decode that failed (playback stops).
   */
  constructor({
    canvas,
    overlay = null,
    onChange = () => {},
    onError = () => {},
    VideoDecoder = globalThis.VideoDecoder,
    EncodedVideoChunk = globalThis.EncodedVideoChunk,
    now = () => performance.now(),
    sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    outputWaitMs = OUTPUT_WAIT_MS,
  }) {
    this.canvas = canvas;
    this.overlay = overlay || new Overlay(canvas, { labels: true });
    this.onChange = onChange;
    this.onError = onError;
    this.VideoDecoder = VideoDecoder;
    this.EncodedVideoChunk = EncodedVideoChunk;
    this.now = now;
    this.sleep = sleep;
    this.outputWaitMs = outputWaitMs;
    this.samples = [];
    this.metas = []; // each sample's SEI JSON (null when it has none)
    this.event = null; // the event the clip belongs to: its own box is the one in data-box
    this.config = null;
    this.decoder = null;
    this.fedUpTo = -1; // the last sample given to the decoder
    this.needsKey = true; // the decoder must start again on a keyframe
    this.waiting = null; // {index, resolve, reject}: the picture being waited for
    this.index = -1; // the sample on screen
    this.wanted = null; // the newest sample asked for and not yet shown
    this.playing = false;
    this.playToken = 0;
    this.resumeAfterSeek = false;
    this.tail = Promise.resolve(); // the decode lock
    this.stats = { decoded: 0, shown: 0, restarts: 0, flushes: 0, discarded: 0, errors: 0 };
  }

  /**
   * Takes a demuxed clip (mp4.js demuxClip) and the event it belongs to (optional);
   * nothing is decoded until the first seek.
   */
  load(clip, event = null) {
    this.#stop();
    this.event = event;
    this.samples = clip.samples;
    this.metas = clip.samples.map((s) => readSightlineSEI(s.data, clip.lengthSize));
    this.config = {
      codec: clip.codec,
      description: clip.description,
      codedWidth: clip.width || undefined,
      codedHeight: clip.height || undefined,
      optimizeForLatency: true,
      hardwareAcceleration: 'no-preference',
    };
    this.index = -1;
    this.wanted = null;
    const width = clip.width || this.metas.find(Boolean)?.width || 640;
    const height = clip.height || this.metas.find(Boolean)?.height || 480;
    this.overlay.resize(width, height, Math.max(0.5, width / SHOWN_WIDTH));
    this.#changed();
  }

  get length() {
    return this.samples.length;
  }

  /** What the controls show: position, time, whether it plays. */
  get state() {
    const meta = this.metas[this.index] || null;
    return {
      index: this.index,
      length: this.samples.length,
      playing: this.playing,
      time: this.index >= 0 ? clipTime(this.samples, this.index) : 0,
      duration: this.samples.length ? clipTime(this.samples, this.samples.length - 1) : 0,
      wanted: this.wanted, // a frame asked for and still being decoded, or null
      seq: meta?.seq ?? null,
      capturedAt: meta?.capturedAt ?? null,
    };
  }

  /** Shows sample `index` (playing on from there if it was playing). Resolves true once shown. */
  async seek(index) {
    if (!this.samples.length) return false;
    const target = Math.max(0, Math.min(this.samples.length - 1, Math.round(index)));
    // Seeks in a row (a dragged timeline) while playing: play on after the last one.
    const resume = this.playing || this.resumeAfterSeek;
    this.resumeAfterSeek = resume;
    this.#halt();
    const shown = await this.#goTo(target);
    if (this.wanted === null && this.resumeAfterSeek) {
      this.resumeAfterSeek = false;
      if (shown) this.play();
    }
    return shown;
  }

  /** One frame forward (+1) or back (-1) from the frame shown or last asked for; pauses. */
  step(delta) {
    this.pause();
    const from = this.wanted ?? this.index;
    const target = Math.max(0, Math.min(this.samples.length - 1, from + delta));
    if (target === from || !this.samples.length) return Promise.resolve(false);
    return this.#goTo(target);
  }

  /** Plays from the frame shown (or being sought), or from the start when at the end. */
  play() {
    if (this.playing || !this.samples.length) return;
    this.playing = true;
    const token = ++this.playToken;
    this.#changed();
    this.#playLoop(token);
  }

  pause() {
    this.resumeAfterSeek = false;
    this.#halt();
  }

  toggle() {
    if (this.playing) this.pause();
    else this.play();
  }

  /** Stops, frees the decoder and the picture on screen. */
  close() {
    this.#stop();
    this.samples = [];
    this.metas = [];
    this.index = -1;
    const shown = this.overlay.frame;
    if (shown) {
      shown.bitmap?.close?.();
      this.overlay.frame = null;
    }
    for (const key of ['clipIndex', 'seq', 'clipTime', 'box', 'boxes', 'playing']) delete this.canvas.dataset[key];
  }

  #stop() {
    this.pause();
    this.wanted = null;
    const closed = new Error('the clip was closed');
    closed.name = 'AbortError'; // a decode cut short on purpose: not reported
    this.#closeDecoder(closed);
  }

  #halt() {
    if (!this.playing) return;
    this.playing = false;
    this.playToken += 1;
    this.#changed();
  }

  async #playLoop(token) {
    const last = this.samples.length - 1;
    const from = this.wanted ?? this.index;
    let next = from < 0 || from >= last ? 0 : from + 1;
    let anchorWall = this.now();
    let anchorTime = next === 0 ? this.samples[0].timestamp : this.samples[from].timestamp;
    for (; next <= last; next += 1) {
      let frame;
      try {
        frame = await this.#exclusive(() => this.#decodeTo(next));
      } catch (error) {
        if (token === this.playToken) {
          this.#halt();
          this.#failed(error);
        }
        return;
      }
      if (token !== this.playToken) {
        frame.close();
        return;
      }
      const due = anchorWall + (this.samples[next].timestamp - anchorTime) * 1000;
      let wait = due - this.now();
      if (wait < -MAX_LATE_MS) {
        anchorWall -= wait; // far behind (a slow decode): go on from now rather than rush
        wait = 0;
      }
      if (wait > 1) await this.sleep(wait);
      if (token !== this.playToken) {
        frame.close();
        return;
      }
      this.#present(frame, next);
    }
    if (token === this.playToken) {
      this.playing = false;
      this.#changed();
    }
  }

  /** Decodes and shows `target`, unless a newer request comes first. */
  async #goTo(target) {
    this.wanted = target;
    this.#changed();
    try {
      return await this.#exclusive(async () => {
        if (this.wanted !== target) return false; // superseded while waiting for the lock
        const frame = await this.#decodeTo(target);
        this.#present(frame, target);
        if (this.wanted === target) this.wanted = null;
        return true;
      });
    } catch (error) {
      if (this.wanted === target) this.wanted = null;
      if (error?.name !== 'AbortError') this.#failed(error);
      return false;
    }
  }

  /** Runs `fn` once every earlier holder of the decode lock is done. */
  #exclusive(fn) {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => {});
    return result;
  }

  /** Feeds what `target` needs and resolves to its VideoFrame (the caller owns it). */
  async #decodeTo(target) {
    if (!this.decoder || this.decoder.state === 'closed') this.#makeDecoder();
    const decoder = this.decoder;
    const plan = decodePlan(this.samples, target, this.fedUpTo, this.needsKey);
    if (plan.reset || decoder.state !== 'configured') {
      if (decoder.state === 'configured') decoder.reset();
      decoder.configure(this.config);
      this.stats.restarts += 1;
      this.needsKey = true;
      plan.from = keyframeBefore(this.samples, target);
    }
    const picture = new Promise((resolve, reject) => {
      this.waiting = { index: target, resolve, reject };
    });
    try {
      for (let i = plan.from; i <= target; i += 1) {
        const sample = this.samples[i];
        decoder.decode(new this.EncodedVideoChunk({
          type: sample.isKey ? 'key' : 'delta',
          timestamp: i,
          data: sample.data,
        }));
        this.fedUpTo = i;
        if (sample.isKey) this.needsKey = false;
      }
    } catch (error) {
      this.#closeDecoder(error);
      throw error;
    }
    let timer = null;
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), this.outputWaitMs);
    });
    let frame;
    try {
      frame = await Promise.race([picture, late]);
    } finally {
      clearTimeout(timer);
    }
    if (!frame) {
      // The decoder holds the picture back: flush it out (a keyframe is needed after that).
      this.stats.flushes += 1;
      try {
        await decoder.flush();
      } catch (error) {
        this.#closeDecoder(error);
        throw error;
      }
      this.needsKey = true;
      if (this.waiting?.index === target) {
        this.waiting = null;
        throw new Error(`the decoder gave no picture for frame ${target}`);
      }
      frame = await picture;
    }
    this.stats.decoded += 1;
    return frame;
  }

  #makeDecoder() {
    const decoder = new this.VideoDecoder({
      output: (frame) => this.#output(decoder, frame),
      error: (error) => {
        if (decoder === this.decoder) this.#closeDecoder(error);
      },
    });
    this.decoder = decoder;
    this.fedUpTo = -1;
    this.needsKey = true;
  }

  #output(decoder, frame) {
    const waiting = this.waiting;
    if (decoder !== this.decoder || !waiting || frame.timestamp !== waiting.index) {
      this.stats.discarded += 1; // a frame on the way to the wanted one, or from before a reset
      frame.close();
      return;
    }
    this.waiting = null;
    waiting.resolve(frame);
  }

  #closeDecoder(error) {
    const decoder = this.decoder;
    this.decoder = null;
    this.fedUpTo = -1;
    this.needsKey = true;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
    if (decoder && decoder.state !== 'closed') {
      try {
        decoder.close();
      } catch {}
    }
  }

  #failed(error) {
    this.stats.errors += 1;
    this.onError(error);
    this.#changed();
  }

  /** Draws `frame` (owned from here on) with sample `index`'s own boxes. */
  #present(frame, index) {
    const sei = this.metas[index] || {};
    const meta = {
      seq: sei.seq,
      capturedAt: sei.capturedAt,
      width: sei.width || this.overlay.canvas?.width || frame.displayWidth,
      height: sei.height || this.overlay.canvas?.height || frame.displayHeight,
      detections: Array.isArray(sei.detections) ? sei.detections : [],
    };
    this.overlay.show({ meta, bitmap: frame, format: 'clip' });
    this.index = index;
    this.stats.shown += 1;
    const rects = this.overlay.lastDrawn?.rects || [];
    const own = rects.find((r) => isEventBox(r, this.event)) || rects[0];
    const data = this.canvas.dataset;
    data.clipIndex = String(index);
    data.seq = meta.seq === undefined ? '' : String(meta.seq);
    data.clipTime = clipTime(this.samples, index).toFixed(3);
    data.box = own ? own.corners.map((p) => p.map((v) => v.toFixed(1)).join(',')).join(' ') : '';
    data.boxes = JSON.stringify(rects.map((r) => ({
      kind: r.kind, label: r.label, id: r.id, roll: r.roll, x: +r.x.toFixed(1), y: +r.y.toFixed(1), w: +r.w.toFixed(1), h: +r.h.toFixed(1),
    })));
    this.#changed();
  }

  #changed() {
    if (this.canvas?.dataset) this.canvas.dataset.playing = String(this.playing);
    this.onChange(this.state);
  }
}
