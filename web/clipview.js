// ClipView: the Events dialog's clip player. Fetches an event's clip
// (GET /api/events/{id}/clip.mp4, fragmented MP4), demuxes it, and plays it on the
// dialog's canvas with a ClipPlayer (clip.js): play/pause, one frame back or forward,
// a timeline with the event's own span marked, and the time. It opens on the event's
// best frame (the same picture as its snapshot, with that frame's boxes), paused.
//
// Two players, and the dialog says which one plays: with WebCodecs (a secure context),
// ClipPlayer decodes each frame in the page and draws it with its boxes on the canvas;
// without it (a page over plain HTTP, an old browser), VideoClipPlayer (clipvideo.js)
// lets the browser's <video> play the clip file and draws each presented picture's own
// boxes on a canvas laid over it. Either way the boxes come from the clip's own SEI.
//
// Runs on the main thread. events.js decides between this and the best-frame snapshot:
// with neither player, a clip that will not load or a codec the browser cannot decode,
// the snapshot is shown instead.

import { ApiError } from './api.js';
import { ClipPlayer, demuxClip, eventSpan, bestSample, formatClipTime } from './clip.js';
import { VideoClipPlayer, canPlayInVideo } from './clipvideo.js';

/** Can this page decode clips? WebCodecs exists only in a secure context (HTTPS or localhost). */
export function canPlayClips(globals = globalThis) {
  return globals.isSecureContext !== false && typeof globals.VideoDecoder === 'function';
}

/**
 * Which clip player this page has: 'webcodecs' (a secure context with VideoDecoder), else
 * 'video' (the browser's <video> plays MP4 H.264: over plain HTTP), else null.
 */
export function clipPlayerKind(globals = globalThis, videoPlays = () => canPlayInVideo()) {
  if (canPlayClips(globals)) return 'webcodecs';
  return videoPlays() ? 'video' : null;
}

/** What the dialog says about the player it uses. */
export function clipPlayerNote(kind, globals = globalThis) {
  if (kind === 'webcodecs') return 'Played with WebCodecs: each frame decoded in the page and drawn with its own boxes.';
  const why = globals.isSecureContext === false ? 'this page is not HTTPS, so it has no WebCodecs' : 'this browser has no WebCodecs';
  return `Played by the browser's video element (${why}); each picture's own boxes, from the clip, are drawn over it.`;
}

/** Why a clip is not played here, for the note beside the snapshot. */
export function clipUnavailableReason(globals = globalThis) {
  if (globals.isSecureContext === false) {
    return 'Playing clips needs HTTPS (or the page on localhost): browsers decode video with WebCodecs only there. Download the clip instead.';
  }
  return 'This browser has no WebCodecs video decoder to play the clip with. Download it instead.';
}

/** A line about a clip that is not whole: still recording, capped, or cut short. */
export function clipNote(clip) {
  if (!clip) return '';
  if (clip.error) return `The clip was cut short (${clip.error}); it plays up to its last whole fragment.`;
  if (clip.capped) return 'The clip stopped at its length cap while the event went on.';
  if (clip.complete === false) return 'Still recording: this is the clip as written so far.';
  return '';
}

async function fetchClip(url) {
  let response;
  try {
    response = await fetch(url, { cache: 'no-store' });
  } catch (error) {
    throw new ApiError({ status: 0, error: error.message, action: 'Loading the clip' });
  }
  if (!response.ok) {
    const text = await response.text().catch(() => '');
    throw ApiError.fromResponseBody(response.status, text, response.headers.get('Retry-After'), 'Loading the clip');
  }
  return new Uint8Array(await response.arrayBuffer());
}

export class ClipView {
  /**
   * @param {HTMLDialogElement} dialog holds the controls ([data-role="clip-..."])
   * @param {HTMLCanvasElement} canvas where the pictures go
   * @param {{onError?: (error: Error) => void}} options onError: playback failed after it started
   */
  constructor(dialog, canvas, { onError = () => {} } = {}) {
    this.canvas = canvas;
    this.onError = onError;
    const $ = (role) => dialog.querySelector(`[data-role="${role}"]`);
    this.videoBox = $('clip-video-box'); // the <video> and the canvas over it (the player without WebCodecs)
    this.video = $('clip-video');
    this.videoCanvas = $('clip-overlay');
    this.playerNote = $('clip-player');
    this.kind = null; // the player in use: 'webcodecs' or 'video'
    this.controls = $('clip-controls');
    this.playButton = $('clip-play');
    this.backButton = $('clip-back');
    this.forwardButton = $('clip-forward');
    this.position = $('clip-position');
    this.span = $('clip-span');
    this.time = $('clip-time');
    this.note = $('clip-note');
    this.player = null; // made on the first clip
    this.generation = 0;
    this.playButton.addEventListener('click', () => this.player?.toggle());
    this.backButton.addEventListener('click', () => this.player?.step(-1));
    this.forwardButton.addEventListener('click', () => this.player?.step(1));
    this.position.addEventListener('input', () => this.player?.seek(Number(this.position.value)));
    dialog.addEventListener('keydown', (event) => this.#key(event));
  }

  /** The element that shows the clip: the canvas (WebCodecs) or the canvas over the <video>. */
  get surface() {
    return this.kind === 'video' ? this.videoCanvas : this.canvas;
  }

  /**
   * Loads `event`'s clip from `url` and shows it, paused on its best frame, with the player
   * `kind` ('webcodecs' or 'video', clipPlayerKind()). Resolves true once that frame is shown,
   * false when another event was opened meanwhile; throws when the clip cannot be played
   * (the caller shows the snapshot then).
   */
  async show(event, url, kind = 'webcodecs') {
    this.close();
    const generation = ++this.generation;
    this.#setNote('Loading the clip…');
    const bytes = await fetchClip(url);
    if (generation !== this.generation) return false;
    const clip = demuxClip(bytes);
    if (!clip.samples.length) throw new Error('the clip has no whole frame yet');
    if (kind === 'video') {
      if (!canPlayInVideo(clip.codec)) throw new Error(`this browser's video element cannot play ${clip.codec}`);
      this.player?.close();
      this.player = this.#videoPlayer();
      this.kind = 'video';
      this.videoBox.style.aspectRatio = `${clip.width || 4} / ${clip.height || 3}`;
      this.videoBox.hidden = false;
      this.canvas.hidden = true;
      if (!(await this.player.load(clip, bytes, event))) return false;
      if (generation !== this.generation) return false;
    } else {
      const config = { codec: clip.codec, description: clip.description, codedWidth: clip.width, codedHeight: clip.height };
      const support = await globalThis.VideoDecoder.isConfigSupported?.(config);
      if (support && !support.supported) throw new Error(`this browser cannot decode ${clip.codec}`);
      if (generation !== this.generation) return false;
      if (!this.player) {
        this.player = new ClipPlayer({
          canvas: this.canvas,
          onChange: (state) => this.#render(state),
          onError: (error) => this.onError(error),
        });
      }
      this.kind = 'webcodecs';
      this.player.load(clip, event);
    }
    const start = event.clip?.start;
    this.position.max = String(clip.samples.length - 1);
    const span = eventSpan(clip.samples, start, event);
    this.span.hidden = !span;
    if (span) {
      this.span.style.setProperty('--from', String(span.from));
      this.span.style.setProperty('--to', String(span.to));
      this.span.title = `The event: ${formatClipTime(clip.samples[span.first].timestamp - clip.samples[0].timestamp)}` +
        ` to ${formatClipTime(clip.samples[span.last].timestamp - clip.samples[0].timestamp)}`;
    }
    const shown = await this.player.seek(bestSample(clip.samples, this.player.metas, start, event));
    if (generation !== this.generation) return false;
    if (!shown) throw new Error('its first picture could not be decoded');
    this.surface.dataset.mode = 'clip';
    this.controls.hidden = false;
    this.#setNote(clipNote(event.clip));
    if (this.playerNote) {
      this.playerNote.textContent = clipPlayerNote(this.kind);
      this.playerNote.hidden = false;
    }
    return true;
  }

  /** Stops playing and hides the controls (the dialog closed, or another event opens). */
  close() {
    this.generation += 1;
    this.player?.close();
    if (this.kind === 'video') this.player = null; // the next clip may go to either player
    this.kind = null;
    this.controls.hidden = true;
    this.#setNote('');
    if (this.playerNote) this.playerNote.hidden = true;
    if (this.videoBox) this.videoBox.hidden = true;
    this.canvas.hidden = false;
    delete this.canvas.dataset.mode;
    if (this.videoCanvas) delete this.videoCanvas.dataset.mode;
  }

  #videoPlayer() {
    this.videoPlayerMade ??= new VideoClipPlayer({
      video: this.video,
      canvas: this.videoCanvas,
      onChange: (state) => this.#render(state),
      onError: (error) => this.onError(error),
    });
    return this.videoPlayerMade;
  }

  #setNote(text) {
    this.note.textContent = text;
    this.note.hidden = !text;
  }

  #render(state) {
    const playing = state.playing;
    this.playButton.textContent = playing ? '❚❚' : '▶';
    this.playButton.setAttribute('aria-label', playing ? 'Pause' : 'Play');
    this.backButton.disabled = state.length === 0 || (state.wanted ?? state.index) <= 0;
    this.forwardButton.disabled = state.length === 0 || (state.wanted ?? state.index) >= state.length - 1;
    this.position.value = String(state.wanted ?? Math.max(0, state.index));
    const text = `${formatClipTime(state.time)} / ${formatClipTime(state.duration)}`;
    this.time.textContent = text;
    this.position.setAttribute('aria-valuetext', `${formatClipTime(state.time)} of ${formatClipTime(state.duration)}`);
  }

  /** k: play or pause; , and .: a frame back or forward (as in common video players). */
  #key(event) {
    if (!this.player || this.controls.hidden || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest?.('input:not([type="range"]), textarea, select')) return;
    const actions = { k: () => this.player.toggle(), ',': () => this.player.step(-1), '.': () => this.player.step(1) };
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  }
}
