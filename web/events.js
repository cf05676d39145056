// Events card: the server's recorded events (GET /api/events), newest first,
// with a thumbnail of each (its crop), filters by kind and by label or name,
// polled so the list grows while the camera runs. A click opens the event: its
// clip when it has one and the browser can decode it (clipview.js: played with
// each frame's own boxes, opening on the best frame), else its best frame with
// its box drawn (rotated by the face's roll). Without WebCodecs (a page over plain
// HTTP) the clip plays in a <video> with the boxes drawn over it. An event with a clip offers it for
// download either way. An unknown face's event offers "name this person"
// (POST /api/events/{id}/name), which teaches recognition so that person's next
// events carry the name.
//
// Runs on the main thread. The pure helpers (eventsQuery, eventTitle,
// eventTimes, mergeEvents, boxCorners, clipURL) are unit-tested in Tests/web/events.test.mjs.

import { apiRequest, pathName, Notice, describeError } from './api.js';
import { ClipView, clipPlayerKind, clipUnavailableReason } from './clipview.js';
import { cameraPath } from './camera.js';

/** The events of the camera the page shows (/api/cameras/NAME/events with ?camera=NAME). */
export const EVENTS_PATH = cameraPath('/api/events');
export const POLL_MS = 2000;
export const PAGE_SIZE = 30;
const MAX_THUMB_RETRIES = 3;
const FACE = 'face';

/** The list query for the filters: kind ('' for all) and a label or person name. */
export function eventsQuery({ kind = '', text = '', limit = PAGE_SIZE } = {}) {
  const params = new URLSearchParams();
  if (kind) params.set('kind', kind);
  const wanted = String(text || '').trim();
  if (wanted) params.set(kind === FACE ? 'name' : 'label', wanted);
  params.set('limit', String(limit));
  return `${EVENTS_PATH}?${params}`;
}

/** "Ada", "unknown face" or the template's label. */
export function eventTitle(event) {
  if (event?.kind === FACE) return event.name ? event.name : 'unknown face';
  return event?.label || 'template';
}

/** "14:02:05, 3.2 s" or "14:02:05, in view" (local time). */
export function eventTimes(event, toTime = (seconds) => new Date(seconds * 1000).toLocaleTimeString()) {
  const start = toTime(event.startTime);
  if (event.endTime == null) return `${start}, in view`;
  return `${start}, ${Math.max(0, event.endTime - event.startTime).toFixed(1)} s`;
}

/** Newest first by start time, one entry per id (a newer copy of an event replaces the older one). */
export function mergeEvents(current, incoming) {
  const byId = new Map(current.map((e) => [e.id, e]));
  for (const event of incoming) byId.set(event.id, event);
  return [...byId.values()].sort((a, b) => b.startTime - a.startTime || (a.id < b.id ? 1 : -1));
}

/** Where an event's clip is (GET, byte ranges work too). */
export function clipURL(id) {
  return `${EVENTS_PATH}/${pathName(id)}/clip.mp4`;
}

/** The four corners of a normalized box turned by `roll` degrees (clockwise) about its centre, in pixels. */
export function boxCorners(box, roll, width, height) {
  const cx = (box.x + box.w / 2) * width;
  const cy = (box.y + box.h / 2) * height;
  const hw = (box.w * width) / 2;
  const hh = (box.h * height) / 2;
  const a = ((roll || 0) * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  return [[-hw, -hh], [hw, -hh], [hw, hh], [-hw, hh]].map(([x, y]) => [cx + x * cos - y * sin, cy + x * sin + y * cos]);
}

export class EventsPanel {
  constructor(root) {
    this.root = root;
    this.list = root.querySelector('[data-role="list"]');
    this.empty = root.querySelector('[data-role="empty"]');
    this.kind = root.querySelector('[data-role="kind"]');
    this.text = root.querySelector('[data-role="filter-text"]');
    this.notice = new Notice(root.querySelector('[data-role="notice"]'));
    this.dialog = root.querySelector('[data-role="viewer"]');
    this.canvas = this.dialog.querySelector('canvas');
    this.caption = this.dialog.querySelector('[data-role="caption"]');
    this.nameForm = this.dialog.querySelector('[data-role="name-form"]');
    this.nameInput = this.dialog.querySelector('[data-role="event-person"]');
    this.dialogNotice = new Notice(this.dialog.querySelector('[data-role="viewer-notice"]'));
    this.download = this.dialog.querySelector('[data-role="clip-download"]');
    this.clipView = new ClipView(this.dialog, this.canvas, {
      onError: (error) => this.dialogNotice.error(`The clip stopped: ${describeError(error)}`),
    });
    this.events = [];
    this.filterKey = '';
    this.shown = null;
    this.timer = null;
    this.available = true;

    const refilter = () => {
      this.events = [];
      this.render();
      this.refresh();
    };
    this.kind.addEventListener('change', refilter);
    this.text.addEventListener('input', () => {
      clearTimeout(this.typing);
      this.typing = setTimeout(refilter, 300);
    });
    this.dialog.querySelector('[data-role="close"]').addEventListener('click', () => this.dialog.close());
    this.dialog.addEventListener('close', () => {
      this.shown = null;
      this.clipView.close(); // stop playing and free the decoder
    });
    this.nameForm.addEventListener('submit', (event) => {
      event.preventDefault();
      this.#name();
    });
    this.refresh();
  }

  async refresh() {
    clearTimeout(this.timer);
    const query = eventsQuery({ kind: this.kind.value, text: this.text.value });
    try {
      const answer = await apiRequest(query, { action: 'Loading events' });
      if (query === eventsQuery({ kind: this.kind.value, text: this.text.value })) {
        this.events = mergeEvents(this.events, answer?.events || []).slice(0, PAGE_SIZE * 3);
        this.available = true;
        this.render();
      }
    } catch (error) {
      if (error.status === 404) {
        this.available = false; // events are off on this server
        this.render();
        return;
      }
      this.notice.error(error);
    }
    this.timer = setTimeout(() => this.refresh(), POLL_MS);
  }

  render() {
    this.empty.hidden = this.events.length > 0;
    this.empty.textContent = this.available ? 'No events yet.' : 'Events are off on this server.';
    const items = this.events.map((event) => {
      const existing = this.list.querySelector(`[data-event-id="${CSS.escape(event.id)}"]`);
      const item = existing || this.#item(event);
      this.#fill(item, event);
      return item;
    });
    this.list.replaceChildren(...items);
  }

  #item(event) {
    const item = document.createElement('li');
    item.className = 'event';
    item.dataset.eventId = event.id;
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'event-open';
    const thumb = document.createElement('img');
    thumb.className = 'thumb';
    thumb.alt = '';
    thumb.loading = 'lazy';
    thumb.src = `${EVENTS_PATH}/${pathName(event.id)}/crop.jpg`;
    thumb.dataset.retries = '0';
    thumb.addEventListener('error', () => { thumb.hidden = true; });
    const text = document.createElement('span');
    text.className = 'event-text';
    button.append(thumb, text);
    button.addEventListener('click', () => this.open(event.id));
    item.append(button);
    return item;
  }

  #fill(item, event) {
    // A thumbnail refused while the server was busy (503) or not written yet: try again, a few times.
    const thumb = item.querySelector('.thumb');
    if (thumb.hidden && Number(thumb.dataset.retries) < MAX_THUMB_RETRIES) {
      thumb.dataset.retries = String(Number(thumb.dataset.retries) + 1);
      thumb.hidden = false;
      thumb.src = `${EVENTS_PATH}/${pathName(event.id)}/crop.jpg?try=${thumb.dataset.retries}`;
    }
    item.dataset.kind = event.kind;
    item.dataset.open = String(event.endTime == null);
    item.dataset.clip = String(!!event.clip);
    const text = item.querySelector('.event-text');
    const title = eventTitle(event);
    const score = Number.isFinite(event.best?.score) ? ` · ${event.best.score.toFixed(2)}` : '';
    text.textContent = '';
    const strong = document.createElement('strong');
    strong.textContent = title;
    const detail = document.createElement('span');
    detail.className = 'event-detail';
    detail.textContent = `${eventTimes(event)}${score}`;
    text.append(strong, detail);
    if (event.clip) {
      const mark = document.createElement('span');
      mark.className = 'event-clip';
      mark.textContent = 'clip';
      text.append(mark);
    }
    const what = event.clip ? 'play the clip' : 'show the picture';
    item.querySelector('button').setAttribute('aria-label', `${title}, ${eventTimes(event)}: ${what}`);
  }

  /** Plays an event's clip, or shows its best frame with its box; offers naming for an unknown face. */
  async open(id) {
    const event = this.events.find((e) => e.id === id);
    if (!event) return;
    this.shown = event;
    this.caption.textContent = `${eventTitle(event)} — ${eventTimes(event)}`;
    this.nameForm.hidden = !(event.kind === FACE && !event.name);
    this.dialogNotice.clear();
    this.clipView.close();
    delete this.canvas.dataset.eventId;
    delete this.clipView.videoCanvas?.dataset.eventId;
    this.download.hidden = !event.clip;
    if (event.clip) {
      this.download.href = clipURL(id);
      this.download.download = `${id}.mp4`;
    }
    if (!this.dialog.open) this.dialog.showModal();
    const player = event.clip ? clipPlayerKind() : null;
    if (player) {
      try {
        if (await this.clipView.show(event, clipURL(id), player) && this.shown === event) this.clipView.surface.dataset.eventId = id;
        return;
      } catch (error) {
        if (this.shown !== event) return;
        this.clipView.close();
        this.dialogNotice.error(`The clip cannot be played here (${describeError(error)}); showing the best frame.`);
      }
    } else if (event.clip) {
      this.dialogNotice.info(clipUnavailableReason());
    }
    await this.#showSnapshot(event);
  }

  /** The event's best frame (its stored snapshot) with its box. */
  async #showSnapshot(event) {
    const id = event.id;
    const image = new Image();
    image.decoding = 'async';
    image.src = `${EVENTS_PATH}/${pathName(id)}/snapshot.jpg`;
    try {
      await image.decode();
    } catch {
      this.dialogNotice.error('The picture of this event could not be loaded (deleted or not written yet).');
      return;
    }
    if (this.shown !== event) return;
    const context = this.canvas.getContext('2d');
    this.canvas.width = image.naturalWidth;
    this.canvas.height = image.naturalHeight;
    context.drawImage(image, 0, 0);
    const corners = boxCorners(event.best.box, event.best.roll, image.naturalWidth, image.naturalHeight);
    context.lineWidth = Math.max(2, image.naturalWidth / 320);
    context.strokeStyle = event.kind === FACE ? '#ffd400' : '#37d67a';
    context.beginPath();
    corners.forEach(([x, y], i) => (i ? context.lineTo(x, y) : context.moveTo(x, y)));
    context.closePath();
    context.stroke();
    this.canvas.dataset.mode = 'snapshot';
    this.canvas.dataset.eventId = id;
    this.canvas.dataset.box = corners.map((p) => p.map((v) => v.toFixed(1)).join(',')).join(' ');
  }

  async #name() {
    const event = this.shown;
    const name = this.nameInput.value.trim();
    if (!event || !name) {
      this.dialogNotice.error('Type the person\'s name first.');
      return;
    }
    try {
      const answer = await apiRequest(`${EVENTS_PATH}/${pathName(event.id)}/name`, {
        method: 'POST', json: { name }, action: 'Naming',
      });
      this.nameInput.value = '';
      this.nameForm.hidden = true;
      this.dialogNotice.ok(`Learned ${answer?.name || name} (${answer?.learned ?? 0} picture${answer?.learned === 1 ? '' : 's'}); their next events carry the name.`);
    } catch (error) {
      this.dialogNotice.error(describeError(error));
    }
  }
}
