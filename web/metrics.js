// Metrics: polls GET /api/state about once a second and renders the numbers into
// the side panel. Every value sits in an element with data-metric="<path>" (the
// dotted path into the /api/state JSON), so tests and people read the same text.
//
// Runs on the main thread. Text goes in with textContent only.

export const POLL_INTERVAL_MS = 1000;
export const POLL_TIMEOUT_MS = 2500;
export const MISSING = '–';

/** Value at a dotted path ("fps.capture") in an object, or undefined. */
export function valueAt(object, path) {
  return path.split('.').reduce((node, key) => (node == null ? undefined : node[key]), object);
}

export function formatFps(value) {
  return Number.isFinite(value) ? value.toFixed(1) : MISSING;
}

export function formatCount(value) {
  return Number.isFinite(value) ? String(Math.round(value)) : MISSING;
}

export function formatMs(value) {
  if (!Number.isFinite(value)) return MISSING;
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

/** 850 B, 41.2 kB (1 kB = 1000 bytes), 1.25 MB. */
export function formatBytes(value) {
  if (!Number.isFinite(value)) return MISSING;
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)} MB`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)} kB`;
  return `${Math.round(value)} B`;
}

/** One rendition of /api/state video.renditions as a line: "main 640×480 · encoding · 2 viewers". */
export function renditionText(rendition) {
  if (!rendition || typeof rendition !== 'object') return MISSING;
  const size = Number.isFinite(rendition.width) && Number.isFinite(rendition.height)
    ? ` ${rendition.width}×${rendition.height}` : '';
  const encoding = rendition.encoding === true ? 'encoding' : rendition.encoding === false ? 'idle' : null;
  const viewers = Number.isFinite(rendition.viewers)
    ? `${rendition.viewers} viewer${rendition.viewers === 1 ? '' : 's'}` : null;
  return [`${rendition.name ?? '?'}${size}`, encoding, viewers].filter(Boolean).join(' · ');
}

/** The fixed rows of the panel: [path, label, formatter]. Stages are added dynamically. */
const ROWS = Object.freeze({
  fps: [
    ['fps.capture', 'Capture', formatFps],
    ['fps.processed', 'Processed', formatFps],
    ['fps.sent', 'Sent', formatFps],
  ],
  drops: [
    ['drops.superseded', 'Superseded', formatCount],
    ['drops.late', 'Late', formatCount],
    ['drops.error', 'Error', formatCount],
    ['clientSkips', 'Client skips', formatCount],
  ],
  clients: [
    ['clients.ws', 'WebSocket', formatCount],
    ['clients.mjpeg', 'MJPEG', formatCount],
    ['frames.sent', 'Frames sent', formatCount],
    ['latency.captureToSend.p50', 'Capture→send p50 ms', formatMs],
  ],
  // /api/state "video" (servers without H.264 have none: the section stays hidden).
  video: [
    ['video.viewers.jpeg', 'JPEG viewers', formatCount],
    ['video.viewers.h264', 'H.264 viewers', formatCount],
    ['video.encodeMs.p50', 'Encode p50 ms', formatMs],
    ['video.encodeMs.p99', 'Encode p99 ms', formatMs],
    ['video.encodeMs.count', 'Frames encoded', formatCount],
    ['video.bytesPerFrame.jpeg', 'JPEG per frame', formatBytes],
    ['video.bytesPerFrame.h264', 'H.264 per frame', formatBytes],
    ['video.keyframes.scheduled', 'Keyframes scheduled', formatCount],
    ['video.keyframes.requested', 'Keyframes requested', formatCount],
    ['video.skipsToKeyframe', 'Skips to keyframe', formatCount],
  ],
});

/** Polls a JSON endpoint; calls onState(json) or onError(error) each time. */
export class StatePoller {
  constructor(url, { onState, onError = () => {} }, intervalMs = POLL_INTERVAL_MS) {
    this.url = url;
    this.onState = onState;
    this.onError = onError;
    this.intervalMs = intervalMs;
    this.timer = null;
  }

  start() {
    this.#poll();
    return this;
  }

  async #poll() {
    const started = performance.now();
    const abort = new AbortController();
    const timeout = setTimeout(() => abort.abort(), POLL_TIMEOUT_MS);
    try {
      const response = await fetch(this.url, { cache: 'no-store', signal: abort.signal });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      this.onState(await response.json());
    } catch (error) {
      this.onError(error);
    } finally {
      clearTimeout(timeout);
      const elapsed = performance.now() - started;
      this.timer = setTimeout(() => this.#poll(), Math.max(0, this.intervalMs - elapsed));
    }
  }
}

/** Renders /api/state (plus a few client-side numbers) into `root`. */
export class MetricsPanel {
  /** @param {HTMLElement} root an element containing the [data-group] <dl>s */
  constructor(root) {
    this.root = root;
    this.cells = new Map();
    for (const [group, rows] of Object.entries(ROWS)) {
      const list = root.querySelector(`[data-group="${group}"]`);
      for (const [path, label, format] of rows) this.#addRow(list, path, label, format);
    }
    this.stageBody = root.querySelector('[data-group="stages"] tbody');
    this.stageRows = new Map();
    this.updated = root.querySelector('[data-role="updated"]');
    this.videoSection = root.querySelector('[data-requires="video"]');
    this.renditions = root.querySelector('[data-group="renditions"]');
  }

  #addRow(list, path, label, format) {
    const dt = document.createElement('dt');
    dt.textContent = label;
    const dd = document.createElement('dd');
    dd.dataset.metric = path;
    dd.textContent = MISSING;
    list.append(dt, dd);
    this.cells.set(path, { element: dd, format });
  }

  /** Update from one /api/state answer. */
  render(state) {
    for (const [path, { element, format }] of this.cells) {
      const text = format(valueAt(state, path));
      if (element.textContent !== text) element.textContent = text;
    }
    this.#renderStages(state.stages || {});
    this.#renderVideo(state.video);
    if (this.updated) this.updated.textContent = new Date().toLocaleTimeString();
    this.root.dataset.stale = 'false';
  }

  /** Mark the numbers as old (server unreachable); keep them visible. */
  markStale() {
    this.root.dataset.stale = 'true';
  }

  #renderVideo(video) {
    const present = !!video && typeof video === 'object';
    if (this.videoSection && this.videoSection.hidden === present) this.videoSection.hidden = !present;
    if (!this.renditions) return;
    const lines = present && Array.isArray(video.renditions) ? video.renditions.map(renditionText) : [];
    const items = [...this.renditions.children];
    if (items.length === lines.length && items.every((li, i) => li.textContent === lines[i])) return;
    this.renditions.replaceChildren(...lines.map((text, i) => {
      const li = document.createElement('li');
      li.dataset.metric = `video.renditions.${i}`;
      li.textContent = text;
      return li;
    }));
  }

  #renderStages(stages) {
    for (const [name, stats] of Object.entries(stages)) {
      let row = this.stageRows.get(name);
      if (!row) {
        const tr = document.createElement('tr');
        const th = document.createElement('th');
        th.scope = 'row';
        th.textContent = name;
        const p50 = document.createElement('td');
        p50.dataset.metric = `stages.${name}.p50`;
        const p99 = document.createElement('td');
        p99.dataset.metric = `stages.${name}.p99`;
        tr.append(th, p50, p99);
        this.stageBody.append(tr);
        row = { p50, p99 };
        this.stageRows.set(name, row);
      }
      row.p50.textContent = formatMs(stats?.p50);
      row.p99.textContent = formatMs(stats?.p99);
    }
  }
}
