// VideoClipPlayer: plays an event's clip where there is no WebCodecs (a page over plain
// HTTP is no secure context): the browser's own <video> decodes the clip file, and a
// transparent canvas over it gets, from the Overlay,
// the boxes of exactly the picture presented. The boxes come from the clip's own SEI,
// read in the page from the same MP4 (mp4.js demuxes it, sei.js reads each sample).
//
// Which sample is on screen:
// - while playing, requestVideoFrameCallback's `mediaTime` is the presented picture's
//   timestamp; round(mediaTime * timescale) equals that sample's presentation time in
//   the track's timescale (dts + composition offset), matched exactly (samplesByTicks);
// - paused, sought or stepped: the <video> is always left on a time half a frame into a
//   sample (seekTime), so the picture is not in doubt, and on `seeked` the sample whose
//   time range holds currentTime (sampleContaining) is the one drawn. Pausing moves to
//   the middle of the last picture presented, so what stays on screen is what was shown.
// A picture for which no sample is found gets no boxes (never a neighbour's).
//
// The <video> plays the very bytes the page demuxed (a blob: URL of the clip fetched once;
// the page's CSP allows media from blob:): a clip still being written grows on the server,
// and a second download could hold frames the page has no boxes for. A blob is also
// seekable whatever the server answers to ranges.
//
// Chromium gives mediaTime = the sample's presentation time with the clip's first sample
// at 0 (fragmented MP4 from libavformat, no edit list). A clip whose first sample is not
// at 0 is matched relative to its first sample too.
//
// Main thread. The pure helpers are unit-tested under node (Tests/web/clipvideo.test.mjs).

import { Overlay } from './overlay.js';
import { readSightlineSEI } from './sei.js';
import { clipTime, isEventBox } from './clip.js';

/** The width the page shows a clip at (style.css): overlay lines and labels are scaled to look the same on any size. */
const SHOWN_WIDTH = 640;

/** Each sample's presentation time in the track's timescale (integer ticks). */
export function sampleTicks(samples, timescale) {
  return samples.map((s) => Math.round(s.timestamp * timescale));
}

/** ticks -> sample index, for the exact match of a presented picture's mediaTime. */
export function samplesByTicks(samples, timescale) {
  const map = new Map();
  sampleTicks(samples, timescale).forEach((t, i) => map.set(t, i));
  return map;
}

/**
 * The sample of a presented picture from its mediaTime (seconds): the one whose presentation
 * time, in ticks, is round(mediaTime * timescale); or, failing that, the one at that time after
 * the first sample (a timeline the browser starts at 0). -1 when none matches exactly.
 */
export function sampleAtMediaTime(byTicks, firstTicks, mediaTime, timescale) {
  if (!Number.isFinite(mediaTime)) return -1;
  const ticks = Math.round(mediaTime * timescale);
  if (byTicks.has(ticks)) return byTicks.get(ticks);
  if (firstTicks && byTicks.has(ticks + firstTicks)) return byTicks.get(ticks + firstTicks);
  return -1;
}

/**
 * The sample shown at `seconds` on the <video>'s timeline (the clip's first sample at 0): the
 * one whose range [start, start + duration) holds it; -1 before the first, the last one after it.
 */
export function sampleContaining(samples, seconds) {
  if (!samples.length || !Number.isFinite(seconds)) return -1;
  const base = samples[0].timestamp;
  let lo = 0;
  let hi = samples.length - 1;
  if (seconds < 0) return -1;
  // Samples are in presentation order with increasing times: the last one starting by `seconds`.
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (samples[mid].timestamp - base <= seconds + 1e-9) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The time to seek the <video> to for sample `index`: half a frame into it (its duration, else the gap to the next). */
export function seekTime(samples, index) {
  const sample = samples[index];
  const next = samples[index + 1];
  const length = next ? next.timestamp - sample.timestamp : sample.duration || 1 / 30;
  return clipTime(samples, index) + Math.max(0.001, length / 2);
}

/** Whether this browser's <video> can play the clip's codec (MP4, H.264). */
export function canPlayInVideo(codec = 'avc1.64001f', doc = globalThis.document) {
  try {
    const video = doc?.createElement?.('video');
    return !!video && video.canPlayType(`video/mp4; codecs="${codec}"`) !== '';
  } catch {
    return false;
  }
}

export class VideoClipPlayer {
  /**
   * @param {{video: HTMLVideoElement, canvas: HTMLCanvasElement, onChange?: (state: object) => void,
   *          onError?: (error: Error) => void}} options canvas: transparent, laid over the video
   */
  constructor({ video, canvas, onChange = () => {}, onError = () => {} }) {
    this.video = video;
    this.canvas = canvas;
    this.overlay = new Overlay(canvas, { labels: true, transparent: true });
    this.onChange = onChange;
    this.onError = onError;
    this.samples = [];
    this.metas = [];
    this.event = null;
    this.timescale = 1;
    this.byTicks = new Map();
    this.firstTicks = 0;
    this.index = -1; // the sample whose boxes are drawn (the picture on screen)
    this.wanted = null; // a sample being sought
    this.resumeAfterSeek = false; // a seek made while playing plays on once it lands
    this.playing = false;
    this.generation = 0;
    this.stats = { presented: 0, unmatched: 0, seeks: 0 };
    this.listeners = [];
    const on = (type, fn) => {
      video.addEventListener(type, fn);
      this.listeners.push([type, fn]);
    };
    on('seeked', () => this.#seeked());
    on('pause', () => this.#paused());
    on('ended', () => this.#paused());
    on('play', () => this.#changed());
    on('error', () => {
      if (this.samples.length && video.error) this.onError(new Error(`the video element could not play the clip (${video.error.message || `code ${video.error.code}`})`));
    });
  }

  /**
   * Takes a demuxed clip (mp4.js demuxClip), its bytes (what the <video> plays) and the event it
   * belongs to. Resolves once the video has its first picture (throws when it cannot load it).
   */
  async load(clip, bytes, event = null) {
    this.#reset();
    const generation = this.generation;
    this.event = event;
    this.samples = clip.samples;
    this.metas = clip.samples.map((s) => readSightlineSEI(s.data, clip.lengthSize));
    this.timescale = clip.timescale;
    this.byTicks = samplesByTicks(clip.samples, clip.timescale);
    this.firstTicks = sampleTicks(clip.samples.slice(0, 1), clip.timescale)[0] || 0;
    const width = clip.width || this.metas.find(Boolean)?.width || 640;
    const height = clip.height || this.metas.find(Boolean)?.height || 480;
    this.overlay.resize(width, height, Math.max(0.5, width / SHOWN_WIDTH));
    const video = this.video;
    video.muted = true;
    video.playsInline = true;
    video.preload = 'auto';
    const ready = new Promise((resolve, reject) => {
      const done = () => {
        video.removeEventListener('loadeddata', done);
        video.removeEventListener('error', failed);
        resolve();
      };
      const failed = () => {
        video.removeEventListener('loadeddata', done);
        video.removeEventListener('error', failed);
        reject(new Error(`the video element could not load the clip (${video.error?.message || 'unsupported'})`));
      };
      video.addEventListener('loadeddata', done);
      video.addEventListener('error', failed);
    });
    this.url = URL.createObjectURL(new Blob([bytes], { type: 'video/mp4' }));
    video.src = this.url;
    await ready;
    if (generation !== this.generation) return false;
    this.#watchFrames(generation);
    this.#changed();
    return true;
  }

  get length() {
    return this.samples.length;
  }

  get state() {
    const meta = this.metas[this.index] || null;
    return {
      index: this.index,
      length: this.samples.length,
      playing: this.playing,
      time: this.index >= 0 ? clipTime(this.samples, this.index) : 0,
      duration: this.samples.length ? clipTime(this.samples, this.samples.length - 1) : 0,
      wanted: this.wanted,
      seq: meta?.seq ?? null,
      capturedAt: meta?.capturedAt ?? null,
    };
  }

  /**
   * Shows sample `index` (playing on from there if it was playing). Resolves true once the video
   * has sought there and its boxes are drawn.
   */
  async seek(index) {
    if (!this.samples.length) return false;
    const target = Math.max(0, Math.min(this.samples.length - 1, Math.round(index)));
    // Seeks in a row (a dragged timeline) while playing: play on after the last one.
    this.resumeAfterSeek = this.playing || this.resumeAfterSeek;
    if (!this.video.paused) this.video.pause();
    this.playing = false;
    const shown = await this.#seekTo(target);
    if (this.wanted === null && this.resumeAfterSeek) {
      this.resumeAfterSeek = false;
      if (shown) this.play();
    }
    return shown;
  }

  /** One frame forward (+1) or back (-1) from the frame shown or being sought; pauses. */
  step(delta) {
    this.resumeAfterSeek = false;
    const from = this.wanted ?? this.index;
    if (!this.video.paused) this.video.pause();
    this.playing = false;
    const target = Math.max(0, Math.min(this.samples.length - 1, from + delta));
    if (target === from || !this.samples.length) {
      this.#changed();
      return Promise.resolve(false);
    }
    return this.#seekTo(target);
  }

  /** Plays from the frame shown, or from the start when at the end. */
  play() {
    if (this.playing || !this.samples.length) return;
    const video = this.video;
    if (this.index >= this.samples.length - 1 || video.ended) video.currentTime = seekTime(this.samples, 0);
    this.playing = true;
    this.wanted = null;
    this.#changed();
    video.play().catch((error) => {
      if (error?.name === 'AbortError') return; // a pause or a new source came first
      this.playing = false;
      this.onError(error);
      this.#changed();
    });
  }

  pause() {
    this.resumeAfterSeek = false;
    if (!this.playing && this.video.paused) return;
    this.video.pause(); // #paused settles on the picture shown
  }

  toggle() {
    if (this.playing) this.pause();
    else this.play();
  }

  /** Stops and lets the clip go (the dialog closed, or another event opens). */
  close() {
    this.#reset();
    this.samples = [];
    this.metas = [];
    for (const key of ['clipIndex', 'seq', 'clipTime', 'box', 'boxes', 'playing', 'player', 'mediaTime']) delete this.canvas.dataset[key];
  }

  #reset() {
    this.generation += 1;
    this.resumeAfterSeek = false;
    this.playing = false;
    this.wanted = null;
    this.index = -1;
    this.seekResolve?.(false);
    this.seekResolve = null;
    const video = this.video;
    if (this.frameCallback !== undefined) video.cancelVideoFrameCallback?.(this.frameCallback);
    this.frameCallback = undefined;
    video.pause();
    if (video.getAttribute('src')) {
      video.removeAttribute('src');
      video.load();
    }
    if (this.url) URL.revokeObjectURL(this.url);
    this.url = null;
    this.overlay.show({ meta: { detections: [] }, bitmap: null, format: 'clip-video' });
  }

  #seekTo(target) {
    this.wanted = target;
    this.stats.seeks += 1;
    this.seekResolve?.(false);
    const shown = new Promise((resolve) => {
      this.seekResolve = resolve;
    });
    this.video.currentTime = seekTime(this.samples, target);
    this.#changed();
    return shown;
  }

  /** The video has sought: draw the boxes of the sample whose range holds currentTime. */
  #seeked() {
    if (!this.samples.length) return;
    const video = this.video;
    if (video.seeking) return; // another seek is under way: its own seeked comes
    const index = sampleContaining(this.samples, video.currentTime);
    // Landed on the sample sought, or (the clip's end, a time the video would not go to) elsewhere: done either way.
    if (this.wanted !== null && index !== this.wanted) this.stats.missed = (this.stats.missed || 0) + 1;
    this.wanted = null;
    if (index >= 0) this.#present(index, null);
    else this.#changed();
    this.seekResolve?.(index >= 0);
    this.seekResolve = null;
  }

  /** Paused (or ended): stay on the picture last presented, half a frame into it, so the paused picture is certain. */
  #paused() {
    if (!this.samples.length) return;
    const wasPlaying = this.playing;
    this.playing = false;
    if (!wasPlaying || this.video.seeking) {
      this.#changed();
      return;
    }
    const shown = this.index >= 0 ? this.index : Math.max(0, sampleContaining(this.samples, this.video.currentTime));
    this.#seekTo(shown);
  }

  /** requestVideoFrameCallback, again after each: while playing, each presented picture's own boxes by its mediaTime. */
  #watchFrames(generation) {
    const video = this.video;
    if (typeof video.requestVideoFrameCallback !== 'function') return;
    const onPresented = (now, metadata) => {
      if (generation !== this.generation) return;
      this.frameCallback = video.requestVideoFrameCallback(onPresented);
      if (video.seeking) return; // seeked draws the sought picture's boxes
      const index = sampleAtMediaTime(this.byTicks, this.firstTicks, metadata.mediaTime, this.timescale);
      if (index < 0) {
        this.stats.unmatched += 1;
        this.#present(-1, metadata.mediaTime);
        return;
      }
      this.stats.presented += 1;
      if (index !== this.index || !this.playing) this.#present(index, metadata.mediaTime);
    };
    this.frameCallback = video.requestVideoFrameCallback(onPresented);
  }

  /** Draws sample `index`'s own boxes over the picture (-1: none, a picture with no sample found). */
  #present(index, mediaTime) {
    const sei = index >= 0 ? this.metas[index] || {} : {};
    const meta = {
      seq: sei.seq,
      capturedAt: sei.capturedAt,
      width: sei.width || this.overlay.canvas?.width,
      height: sei.height || this.overlay.canvas?.height,
      detections: index >= 0 && Array.isArray(sei.detections) ? sei.detections : [],
    };
    this.overlay.show({ meta, bitmap: null, format: 'clip-video' });
    this.index = index;
    const rects = this.overlay.lastDrawn?.rects || [];
    const own = rects.find((r) => isEventBox(r, this.event)) || rects[0];
    const data = this.canvas.dataset;
    data.player = 'video';
    data.mediaTime = mediaTime === null ? '' : String(mediaTime);
    data.seq = meta.seq === undefined ? '' : String(meta.seq);
    data.clipTime = index >= 0 ? clipTime(this.samples, index).toFixed(3) : '';
    data.box = own ? own.corners.map((p) => p.map((v) => v.toFixed(1)).join(',')).join(' ') : '';
    data.boxes = JSON.stringify(rects.map((r) => ({
      kind: r.kind, label: r.label, id: r.id, roll: r.roll, x: +r.x.toFixed(1), y: +r.y.toFixed(1), w: +r.w.toFixed(1), h: +r.h.toFixed(1),
    })));
    data.clipIndex = String(index); // last: watchers of data-clip-index see the rest already set
    this.#changed();
  }

  #changed() {
    if (this.canvas?.dataset) this.canvas.dataset.playing = String(this.playing);
    this.onChange(this.state);
  }
}
