// Sightline browser client: wires the frame stream (JPEG or H.264), the overlay,
// the metrics poller, the status line and the tool panels (source, templates,
// faces, events, access) together, for one camera: the page's ?camera=NAME, else
// the server's first (camera.js maps every path). With several cameras the
// Cameras card shows them all (cameras.js). Everything runs on the main thread.

import { Overlay } from './overlay.js';
import { FrameStream, ConnectionState, sameHostWebSocketURL } from './stream.js';
import { hasMSE } from './mse.js';
import { StatePoller, MetricsPanel } from './metrics.js';
import { FpsChart, SERIES } from './chart.js';
import { TemplatesPanel } from './templates.js';
import { FacesPanel } from './faces.js';
import { SourcesPanel } from './sources.js';
import { AccessPanel } from './access.js';
import { EventsPanel } from './events.js';
import { CamerasPanel } from './cameras.js';
import { CURRENT_CAMERA, cameraPath } from './camera.js';
import {
  VideoMode, MODE_STORAGE_KEY, chooseVideoMode, parseStoredMode, videoWebSocketPath, modeName, formatBitrate, Ring,
} from './video.js';

const WS_PATH = cameraPath('/ws');
const STATE_PATH = cameraPath('/api/state');
/** No frame for this long on an open socket: say "waiting for frames" instead of "live". */
const LIVE_TIMEOUT_MS = 3000;
const STATUS_TICK_MS = 500;
const SHOWN_FPS_WINDOW_MS = 2000;
/** Keyboard shortcuts -> checkbox ids. */
const SHORTCUTS = Object.freeze({ t: 'toggle-labels', l: 'toggle-landmarks', g: 'toggle-ground-truth' });
/** Where typing must not trigger the shortcuts. */
const TYPING_TARGETS = 'input:not([type="checkbox"]):not([type="radio"]), textarea, select, [contenteditable]';

/** Source states from /api/state. */
const SourceState = Object.freeze({ LIVE: 'live', STARTING: 'starting', NO_SIGNAL: 'noSignal' });

const $ = (selector) => document.querySelector(selector);

const elements = {
  stage: $('#stage'),
  canvas: $('#view'),
  message: $('#stage-message'),
  status: $('#status'),
  statusText: $('#status-text'),
  sourceName: $('#source-name'),
  cameraName: $('#camera-name'),
  metrics: $('#metrics'),
  videoModes: [...document.querySelectorAll('input[name="video-mode"]')],
  videoNote: $('#video-note'),
  toggles: {
    labels: $('#toggle-labels'),
    landmarks: $('#toggle-landmarks'),
    groundTruth: $('#toggle-ground-truth'),
  },
  client: Object.fromEntries([...document.querySelectorAll('[data-client]')].map((el) => [el.dataset.client, el])),
};

const overlay = new Overlay(elements.canvas, readToggles());
const metricsPanel = new MetricsPanel(elements.metrics);
const chart = new FpsChart($('#fps-chart'));
renderLegend($('[data-role="legend"]'));
const sourcesPanel = new SourcesPanel($('#sources'));
const templatesPanel = new TemplatesPanel($('#templates'), document.body);
const facesPanel = new FacesPanel($('#faces'), {
  onSelect(id) {
    overlay.setOptions({ selectedFaceId: id });
  },
});
// Signing in or out changes what the stream may show: reconnect it then. The
// sources list depends on the role too (an admin sees full specs, a viewer the
// names without the server's paths): load it again.
let signedIn = null;
let role = null;
let camerasPanel = null; // made below; an admin gets its add and remove controls
new AccessPanel($('#access'), {
  onChange(who) {
    const now = !!who?.signedIn;
    if (signedIn !== null && now !== signedIn) stream?.reconnectNow();
    const nowRole = who?.role ?? null;
    if (signedIn !== null && nowRole !== role) sourcesPanel.refresh();
    if (nowRole !== role) camerasPanel?.refresh();
    signedIn = now;
    role = nowRole;
  },
});
new EventsPanel($('#events'));

// --- cameras ------------------------------------------------------------------

/** The header names the camera shown: the chosen one, or the first when the server has several. */
function showCameraName(name) {
  elements.cameraName.textContent = name || '';
  elements.cameraName.hidden = !name;
  document.title = name ? `${name} · Sightline` : 'Sightline';
}

showCameraName(CURRENT_CAMERA);
camerasPanel = new CamerasPanel($('#cameras'), {
  chosen: CURRENT_CAMERA,
  onList(cameras) {
    if (!CURRENT_CAMERA) showCameraName(cameras.length > 1 ? cameras[0].name : null);
  },
});

let connection = { state: ConnectionState.CONNECTING, retryAt: undefined };
let everConnected = false;
let serverState = null;
let lastFrameAt = 0;
let nextFrame = null; // newest decoded frame waiting for the next animation frame
let frameRequested = false;
const shownTimes = [];
let status = { key: 'connecting', text: 'connecting' };

// --- video mode ---------------------------------------------------------------

function readStoredMode() {
  try {
    return parseStoredMode(localStorage.getItem(MODE_STORAGE_KEY));
  } catch {
    return null; // storage blocked: no remembered choice
  }
}

function storeMode(mode) {
  try {
    localStorage.setItem(MODE_STORAGE_KEY, mode);
  } catch {}
}

const videoChoice = chooseVideoMode({
  requested: new URLSearchParams(location.search).get('video'), // a link may ask for a mode (not remembered)
  stored: readStoredMode(),
  hasDecoder: 'VideoDecoder' in window,
  secure: window.isSecureContext === true,
  hasMSE: hasMSE(window),
  host: location.host,
});
let h264Available = videoChoice.h264Available;
let mseAvailable = videoChoice.mseAvailable;

function renderVideoChoice(mode, reason) {
  for (const input of elements.videoModes) {
    input.checked = input.value === mode;
    if (input.value === VideoMode.H264) {
      input.disabled = !h264Available;
      input.parentElement.title = h264Available ? '' : reason || '';
    }
    if (input.value === VideoMode.MSE) {
      input.disabled = !mseAvailable;
      input.parentElement.title = mseAvailable ? 'H.264 played by Media Source Extensions (no HTTPS needed)'
        : 'This browser has no Media Source Extensions for H.264';
    }
  }
  elements.videoNote.textContent = reason || '';
  elements.videoNote.hidden = !reason;
}

renderVideoChoice(videoChoice.mode, videoChoice.reason);

for (const input of elements.videoModes) {
  input.addEventListener('change', () => {
    if (!input.checked) return;
    const mode = input.value === VideoMode.H264 && h264Available ? VideoMode.H264
      : input.value === VideoMode.MSE && mseAvailable ? VideoMode.MSE : VideoMode.JPEG;
    storeMode(mode);
    stream.setMode(mode);
    updateStatus();
  });
}

/** The browser cannot decode the stream's H.264 after all: back to JPEG, and say why. */
function h264Unsupported(error, codec) {
  if (stream.mode === VideoMode.MSE) mseAvailable = false;
  else h264Available = false;
  const detail = error?.message ? ` (${error.message})` : '';
  renderVideoChoice(VideoMode.JPEG, `This browser cannot decode the server's H.264 (${codec || 'unknown codec'})${detail}. Showing JPEG.`);
  stream.setMode(VideoMode.JPEG);
}

// --- paint log (debug hook for tests; records only while asked) ---------------

/** Most entries the paint log may keep. */
const PAINT_LOG_MAX = 5000;
/** Half-size of the square averaged around each probe point, in canvas pixels. */
const PROBE_RADIUS_PX = 2;
let paintLog = null; // {ring, probe: [[x, y] normalized]} while recording

/** Average luma (0-255) of a small square around each normalized point of the painted picture. */
function probePicture(ctx, fit, points) {
  return points.map(([nx, ny]) => {
    const x = Math.round(fit.offsetX + nx * fit.width);
    const y = Math.round(fit.offsetY + ny * fit.height);
    const r = PROBE_RADIUS_PX;
    const data = ctx.getImageData(x - r, y - r, 2 * r + 1, 2 * r + 1).data;
    let sum = 0;
    for (let i = 0; i < data.length; i += 4) sum += 0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2];
    return Math.round(sum / (data.length / 4));
  });
}

function recordPaint(frame, samples) {
  const { meta } = frame;
  paintLog.ring.push({
    seq: meta.seq,
    format: frame.format,
    capturedAt: meta.capturedAt,
    paintedAt: Date.now(),
    picture: overlay.lastDrawn?.picture ?? null,
    templates: (meta.detections || []).filter((d) => d && d.kind === 'template' && d.box)
      .map((d) => ({ label: d.label, box: { ...d.box } })),
    samples,
  });
}

// --- frames -----------------------------------------------------------------

const stream = new FrameStream((mode) => sameHostWebSocketURL(videoWebSocketPath(mode, WS_PATH)), {
  mode: videoChoice.mode,
  video: document.getElementById('mse-video'),
  onUnsupported: h264Unsupported,
  onFrame(frame) {
    lastFrameAt = performance.now();
    if (frame.format === VideoMode.MSE) {
      // Painted now, in the rendering step that presents this picture (requestVideoFrameCallback).
      if (nextFrame) nextFrame.bitmap.close?.();
      nextFrame = frame;
      paint();
      return;
    }
    if (nextFrame) nextFrame.bitmap.close?.(); // superseded before it was painted
    nextFrame = frame;
    if (!frameRequested) {
      frameRequested = true;
      requestAnimationFrame(paint);
    }
  },
  onStatus(next) {
    connection = next;
    if (next.state === ConnectionState.OPEN) everConnected = true;
    updateStatus();
  },
});

function paint() {
  frameRequested = false;
  const frame = nextFrame;
  nextFrame = null;
  if (!frame) return;
  if (paintLog) {
    let samples = null;
    overlay.show(frame, paintLog.probe.length ? (ctx, fit) => {
      samples = probePicture(ctx, fit, paintLog.probe);
    } : null);
    recordPaint(frame, samples);
  } else {
    overlay.show(frame); // image and its own detections, in one go
  }
  facesPanel.update(overlay.lastDrawn);
  const now = performance.now();
  shownTimes.push(now);
  while (shownTimes.length && now - shownTimes[0] > SHOWN_FPS_WINDOW_MS) shownTimes.shift();
  updateStatus();
}

// --- canvas size (HiDPI) ----------------------------------------------------

function observeCanvasSize() {
  let cssSize = null;
  let dprQuery = null;
  const apply = (device) => {
    const dpr = window.devicePixelRatio || 1;
    let [w, h] = [cssSize.width * dpr, cssSize.height * dpr];
    // Prefer the exact device-pixel size when the browser reports a consistent one
    // (emulated scale factors can leave it at the CSS size).
    if (device && Math.abs(device.inlineSize - w) < 2 && Math.abs(device.blockSize - h) < 2) {
      [w, h] = [device.inlineSize, device.blockSize];
    }
    overlay.resize(w, h, dpr);
    watchDevicePixelRatio(dpr);
  };
  // A zoom or a move to another screen changes devicePixelRatio without resizing the box.
  const watchDevicePixelRatio = (dpr) => {
    dprQuery?.removeEventListener('change', onDprChange);
    dprQuery = window.matchMedia(`(resolution: ${dpr}dppx)`);
    dprQuery.addEventListener('change', onDprChange);
  };
  const onDprChange = () => cssSize && apply(null);
  const observer = new ResizeObserver(([entry]) => {
    cssSize = { width: entry.contentRect.width, height: entry.contentRect.height };
    apply(entry.devicePixelContentBoxSize?.[0]);
  });
  try {
    observer.observe(elements.canvas, { box: 'device-pixel-content-box' });
  } catch {
    observer.observe(elements.canvas);
  }
}

// --- toggles ----------------------------------------------------------------

function readToggles() {
  return {
    labels: elements.toggles.labels.checked,
    landmarks: elements.toggles.landmarks.checked,
    groundTruth: elements.toggles.groundTruth.checked,
  };
}

for (const input of Object.values(elements.toggles)) {
  input.addEventListener('change', () => overlay.setOptions(readToggles()));
}

document.addEventListener('keydown', (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey || event.repeat) return;
  if (event.target instanceof HTMLElement && event.target.closest(TYPING_TARGETS)) return;
  const id = SHORTCUTS[event.key.toLowerCase()];
  if (!id) return;
  const input = document.getElementById(id);
  input.checked = !input.checked;
  input.dispatchEvent(new Event('change'));
});

// --- faces: click a box on the view to pick it ----------------------------------

elements.canvas.addEventListener('click', (event) => {
  facesPanel.clickAt(event.clientX, event.clientY, elements.canvas, overlay.lastDrawn);
});
elements.canvas.addEventListener('pointermove', (event) => {
  const over = facesPanel.faceAt(event.clientX, event.clientY, elements.canvas, overlay.lastDrawn) !== null;
  elements.canvas.classList.toggle('over-face', over);
});

// --- chart legend ------------------------------------------------------------------

function renderLegend(list) {
  list.replaceChildren(...SERIES.map(({ label, color }) => {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = color;
    item.append(swatch, label);
    return item;
  }));
}

// --- server state -----------------------------------------------------------

let peopleLoaded = false;
new StatePoller(STATE_PATH, {
  onState(state) {
    serverState = state;
    metricsPanel.render(state);
    chart.push(state);
    templatesPanel.syncFromState(state.templates);
    sourcesPanel.syncFromState(state.source);
    facesPanel.syncFromState(state.faces);
    if (state.faces && !peopleLoaded) {
      peopleLoaded = true;
      facesPanel.refreshPeople();
    }
    const source = state.source || {};
    const name = source.name || source.spec || '';
    const dims = source.width && source.height ? `${source.width}x${source.height}` : '';
    const size = dims && !name.includes(dims) ? ` · ${dims.replace('x', '×')}` : '';
    elements.sourceName.textContent = name ? `${name}${size}` : '';
    stream.expectFrames = source.state === SourceState.LIVE;
    updateStatus();
  },
  onError() {
    metricsPanel.markStale();
    chart.push(null); // a gap in the lines
  },
}).start();

// --- status -----------------------------------------------------------------

function secondsUntil(timestamp) {
  return Math.max(0, Math.ceil((timestamp - Date.now()) / 1000));
}

function computeStatus() {
  if (connection.state !== ConnectionState.OPEN) {
    if (!everConnected && connection.state === ConnectionState.CONNECTING) {
      return { key: 'connecting', text: 'connecting', message: 'Connecting…' };
    }
    const retry = connection.retryAt ? ` (retry in ${secondsUntil(connection.retryAt)} s)` : '';
    return { key: 'reconnecting', text: 'reconnecting', message: `Connection lost, reconnecting${retry}…` };
  }
  const source = serverState?.source;
  if (source?.state === SourceState.NO_SIGNAL) {
    const retry = Number.isFinite(source.retryInSeconds) ? ` Retrying in ${Math.ceil(source.retryInSeconds)} s.` : '';
    const detail = source.detail ? ` ${source.detail}.` : '';
    return { key: 'no-signal', text: 'no signal', message: `No signal from the source.${detail}${retry}` };
  }
  const fresh = lastFrameAt && performance.now() - lastFrameAt < LIVE_TIMEOUT_MS;
  if (fresh) return { key: 'live', text: 'live' };
  if (source?.state === SourceState.STARTING) return { key: 'starting', text: 'starting', message: 'Source starting…' };
  return { key: 'waiting', text: 'waiting', message: 'Waiting for frames…' };
}

function updateStatus() {
  const next = computeStatus();
  if (next.key !== status.key || next.text !== status.text) {
    elements.status.dataset.status = next.key;
    elements.statusText.textContent = next.text;
  }
  const message = next.message || '';
  if (elements.message.textContent !== message) elements.message.textContent = message;
  elements.message.hidden = !message;
  elements.stage.dataset.stale = String(next.key !== 'live' && overlay.frame !== null);
  status = next;
  renderClientStats();
}

function renderClientStats() {
  const drawn = overlay.lastDrawn;
  const set = (key, text) => {
    const el = elements.client[key];
    if (el && el.textContent !== text) el.textContent = text;
  };
  set('seq', drawn ? String(drawn.seq) : '–');
  const span = shownTimes.length > 1 ? shownTimes[shownTimes.length - 1] - shownTimes[0] : 0;
  set('shownFps', span > 0 ? (((shownTimes.length - 1) * 1000) / span).toFixed(1) : '–');
  set('detections', drawn ? String(drawn.detections.length) : '–');
  set('skipped', String(stream.stats.skipped));
  set('mode', videoInUse());
  set('bitrate', formatBitrate(stream.bitsPerSecond()));
  if (drawn) {
    const label = `Frame ${drawn.seq}, ${drawn.detections.length} detection${drawn.detections.length === 1 ? '' : 's'}`;
    if (elements.canvas.getAttribute('aria-label') !== label && performance.now() - (renderClientStats.labelAt || 0) > 2000) {
      elements.canvas.setAttribute('aria-label', label);
      renderClientStats.labelAt = performance.now();
    }
  }
}

/** The mode in use, as painted: "H.264", "JPEG", with what is going on when it is not plain. */
function videoInUse() {
  const painted = overlay.lastDrawn?.format;
  const asked = stream.mode;
  if (asked === VideoMode.MSE) {
    if (stream.lastFormat === VideoMode.JPEG) return 'JPEG (this server sends no H.264)';
    if (painted === VideoMode.MSE && overlay.lastDrawn.picture?.width) {
      const { width, height } = overlay.lastDrawn.picture;
      return `H.264 (MSE) ${width}×${height}`;
    }
    return 'H.264 (MSE)';
  }
  if (asked === VideoMode.H264) {
    const waiting = stream.videoStats?.waitingFor;
    if (stream.lastFormat === VideoMode.JPEG) return 'JPEG (this server sends no H.264)';
    if (waiting && waiting !== 'hidden' && connection.state === ConnectionState.OPEN) return 'H.264 (waiting for a keyframe)';
    if (painted === VideoMode.H264 && overlay.lastDrawn.picture?.width) {
      const { width, height } = overlay.lastDrawn.picture;
      return `H.264 ${width}×${height}`;
    }
    return 'H.264';
  }
  return modeName(painted === VideoMode.H264 ? asked : painted ?? asked);
}

setInterval(updateStatus, STATUS_TICK_MS);

// --- read-only debug hook for tests ------------------------------------------

Object.defineProperty(window, 'sightline', {
  value: Object.freeze({
    get lastDrawn() {
      return overlay.lastDrawn;
    },
    get state() {
      return serverState;
    },
    get status() {
      return status.key;
    },
    get stats() {
      return { ...stream.stats };
    },
    /** The video mode asked for, the one painted, what H.264 decoding is doing, the bitrate received. */
    get video() {
      return {
        mode: stream.mode,
        painted: overlay.lastDrawn?.format ?? null,
        h264Available,
        mseAvailable,
        note: elements.videoNote.hidden ? null : elements.videoNote.textContent,
        bitsPerSecond: stream.bitsPerSecond(),
        decoder: stream.videoStats,
      };
    },
    /**
     * Start (or stop, with false) logging each paint: seq, format, capturedAt,
     * paintedAt (Date.now()), the template boxes drawn, and, for each `probe` point
     * ([x, y] normalized to the frame), the luma of the painted picture there, read
     * back from the canvas before any box is drawn. Keeps the newest `limit` entries.
     */
    recordPaints(options = {}) {
      if (options === false) {
        paintLog = null;
        return false;
      }
      const limit = Math.min(PAINT_LOG_MAX, Math.max(1, Number(options.limit) || 600));
      const probe = Array.isArray(options.probe)
        ? options.probe.filter((p) => Array.isArray(p) && p.length === 2 && p.every(Number.isFinite)).map(([x, y]) => [x, y])
        : [];
      paintLog = { ring: new Ring(limit), probe };
      return true;
    },
    get paintLog() {
      return paintLog ? paintLog.ring.items.map((entry) => ({ ...entry })) : [];
    },
    get chart() {
      return { samples: chart.samples.map((s) => ({ ...s })), drawnSegments: chart.drawnSegments };
    },
    get selectedFaceId() {
      return facesPanel.selectedId;
    },
    /** The camera this page shows (?camera=), or null for the server's first. */
    get camera() {
      return CURRENT_CAMERA;
    },
    /** The Cameras card's tiles: [{name, streaming, connection, frames}]. */
    get cameras() {
      return camerasPanel.summary;
    },
  }),
  writable: false,
  configurable: false,
});

observeCanvasSize();
stream.start();
sourcesPanel.refresh();
templatesPanel.refresh();
camerasPanel.refresh();
// The people list exists only while faces are on: it is loaded once the first state says so
// (a server with --no-faces answers /api/people with 404, which the browser logs as an error).
