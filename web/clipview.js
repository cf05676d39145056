// ClipView: the Events dialog's clip player. Fetches an event's clip
// (GET /api/events/{id}/clip.mp4, fragmented MP4), demuxes it, and plays it on the
// dialog's canvas with a ClipPlayer (clip.js): play/pause, one frame back or forward,
// a timeline with the event's own span marked, and the time. It opens on the event's
// best frame (the same picture as its snapshot, with that frame's boxes), paused.
//
// Runs on the main thread. events.js decides between this and the best-frame snapshot:
// without WebCodecs (an insecure context, an old browser), a clip that will not load or
// a codec the browser cannot decode, the snapshot is shown instead.

import { ApiError } from './api.js';
import { ClipPlayer, demuxClip, eventSpan, bestSample, formatClipTime } from './clip.js';

/** Can this page decode clips? WebCodecs exists only in a secure context (HTTPS or localhost). */
export function canPlayClips(globals = globalThis) {
  return globals.isSecureContext !== false && typeof globals.VideoDecoder === 'function';
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

  /**
   * Loads `event`'s clip from `url` and shows it, paused on its best frame. Resolves true
   * once that frame is on the canvas, false when another event was opened meanwhile;
   * throws when the clip cannot be played (the caller shows the snapshot then).
   */
  async show(event, url) {
    this.close();
    const generation = ++this.generation;
    this.#setNote('Loading the clip…');
    const bytes = await fetchClip(url);
    if (generation !== this.generation) return false;
    const clip = demuxClip(bytes);
    if (!clip.samples.length) throw new Error('the clip has no whole frame yet');
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
    this.player.load(clip, event);
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
    this.canvas.dataset.mode = 'clip';
    this.controls.hidden = false;
    this.#setNote(clipNote(event.clip));
    return true;
  }

  /** Stops playing and hides the controls (the dialog closed, or another event opens). */
  close() {
    this.generation += 1;
    this.player?.close();
    this.controls.hidden = true;
    this.#setNote('');
    delete this.canvas.dataset.mode;
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
