// Cameras card: a grid of the server's cameras (GET /api/cameras), shown when
// there is more than one. Each tile is that camera's own live stream (its
// /cam/NAME/ws, JPEG) with its own boxes drawn over it by an Overlay, its name,
// state and processed frame rate. A tile streams only while it can be seen: one
// scrolled out of view (IntersectionObserver) or on a hidden page
// (document.visibilityState) closes its WebSocket and opens it again when it is
// seen again. A tile links to ?camera=NAME, the page of that camera with all the
// tools; the tile of the camera the page shows is marked.
//
// An admin (signed in as one) also gets a form to add a camera (POST /api/cameras
// {name, source}) and a Remove button on every tile but the first's (DELETE
// /api/cameras/NAME; the first camera serves the unprefixed routes and stays); the
// card is shown to an admin even with one camera, for the form.
//
// Every tile's canvas says what it painted last in data attributes (seq, width
// and height of the decoded picture, frames painted), for people's tools and the
// browser tests.
//
// Runs on the main thread. The pure helpers (cameraSummary, shownCameraName,
// sameCameras) are unit-tested in Tests/web/camera.test.mjs.

import { apiRequest, Notice, pathName } from './api.js';
import { CAMERAS_PATH, cameraPageHref, pathForCamera } from './camera.js';
import { Overlay } from './overlay.js';
import { FrameStream, ConnectionState, sameHostWebSocketURL } from './stream.js';
import { VideoMode } from './video.js';

/** How often the list (states, frame rates) is read again while the page is visible and the card shown. */
export const CAMERAS_POLL_MS = 2000;
/** How often it is read while the card is hidden (one camera): only to notice a server that now has more. */
export const CAMERAS_IDLE_POLL_MS = 30000;
const MISSING = '–';

/**
 * One line about a camera for its tile: "live · 9.8 fps", "noSignal", "starting · 0.0 fps".
 * @param {{state?: string, fps?: {processed?: number}}} camera an entry of GET /api/cameras
 * @returns {string}
 */
export function cameraSummary(camera) {
  const state = camera?.state || MISSING;
  const fps = camera?.fps?.processed;
  return Number.isFinite(fps) ? `${state} · ${fps.toFixed(1)} fps` : state;
}

/**
 * The name of the camera the page's main view shows: the chosen one, else the
 * first listed (the camera of the unprefixed routes).
 * @param {Array<{name: string}>} cameras
 * @param {string|null} chosen ?camera= of the page, or null
 * @returns {string|null}
 */
export function shownCameraName(cameras, chosen) {
  return chosen ?? cameras?.[0]?.name ?? null;
}

/**
 * Same cameras in the same order (names and stream paths)? Tiles are rebuilt only when not.
 * @param {Array<object>} a
 * @param {Array<object>} b
 * @returns {boolean}
 */
export function sameCameras(a, b) {
  const key = (list) => (list || []).map((c) => `${c.name}\u0000${c.paths?.ws ?? ''}`).join('\u0001');
  return key(a) === key(b);
}

/** One camera's tile: its canvas, stream, overlay and text. */
class CameraTile {
  /**
   * @param {object} camera an entry of GET /api/cameras
   * @param {{current: boolean, onRemove?: (name: string) => void}} options
   *   onRemove: given (to an admin, for every camera but the first), a Remove button calls it
   */
  constructor(camera, { current, onRemove }) {
    this.name = camera.name;
    this.element = document.createElement('li');
    this.element.className = 'camera-tile';
    this.element.dataset.camera = camera.name;
    this.element.dataset.current = String(current);
    this.element.dataset.streaming = 'false';

    const link = document.createElement('a');
    link.className = 'camera-link';
    link.href = cameraPageHref(camera.name);
    if (current) link.setAttribute('aria-current', 'page');
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'camera-view';
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', `${camera.name}, live view`);
    this.canvas.dataset.frames = '0';
    const caption = document.createElement('span');
    caption.className = 'camera-caption';
    const title = document.createElement('strong');
    title.className = 'camera-title';
    title.textContent = camera.name;
    this.detail = document.createElement('span');
    this.detail.className = 'camera-detail';
    caption.append(title, this.detail);
    link.append(this.canvas, caption);
    link.title = `Open ${camera.name} with all the tools`;
    this.element.append(link);
    if (onRemove) {
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'camera-remove';
      remove.dataset.role = 'remove';
      remove.textContent = 'Remove';
      remove.title = `Remove ${camera.name} (its events and recordings stay on the server)`;
      remove.addEventListener('click', () => onRemove(camera.name));
      this.element.append(remove);
    }

    this.overlay = new Overlay(this.canvas, { labels: false });
    this.painted = 0;
    const path = camera.paths?.ws || pathForCamera('/ws', camera.name);
    this.stream = new FrameStream(sameHostWebSocketURL(path), {
      mode: VideoMode.JPEG,
      onFrame: (frame) => this.#paint(frame),
      onStatus: ({ state }) => {
        this.element.dataset.connection = state;
      },
    });
    this.streaming = false;
    this.resizer = new ResizeObserver(([entry]) => {
      const dpr = window.devicePixelRatio || 1;
      this.overlay.resize(entry.contentRect.width * dpr, entry.contentRect.height * dpr, dpr);
    });
    this.resizer.observe(this.canvas);
    this.update(camera);
  }

  /** New numbers from GET /api/cameras. */
  update(camera) {
    const text = cameraSummary(camera);
    if (this.detail.textContent !== text) this.detail.textContent = text;
    this.element.dataset.state = camera.state || '';
    // No frames are coming while the source has no signal: do not count that as a stall.
    this.stream.expectFrames = camera.state === 'live';
  }

  /** Stream while seen, close the socket while not (and while held). */
  setStreaming(on) {
    if (this.held) on = false;
    if (on === this.streaming) return;
    this.streaming = on;
    this.element.dataset.streaming = String(on);
    if (on) this.stream.start();
    else this.stream.stop();
  }

  #paint(frame) {
    if (!this.streaming) {
      frame.bitmap.close?.();
      return;
    }
    this.overlay.show(frame);
    const drawn = this.overlay.lastDrawn;
    this.painted += 1;
    const data = this.canvas.dataset;
    data.seq = String(drawn.seq);
    data.width = String(drawn.picture.width);
    data.height = String(drawn.picture.height);
    data.detections = String(drawn.detections.length);
    data.frames = String(this.painted);
  }

  /** Held: no socket whatever is seen (the camera is being removed). */
  hold(on) {
    this.held = on;
    if (on) this.setStreaming(false);
  }

  dispose() {
    this.setStreaming(false);
    this.stream.stop();
    this.resizer.disconnect();
    this.overlay.frame?.bitmap.close?.();
    this.element.remove();
  }
}

export class CamerasPanel {
  /**
   * @param {HTMLElement} root the Cameras card (hidden until there is more than one camera)
   * @param {{chosen: string|null, onList?: (cameras: Array<object>) => void}} options
   *   chosen: the page's ?camera=; onList: called with every list read
   */
  constructor(root, { chosen, onList = () => {} }) {
    this.root = root;
    this.list = root.querySelector('[data-role="list"]');
    this.notice = new Notice(root.querySelector('[data-role="notice"]'));
    this.chosen = chosen;
    this.onList = onList;
    this.cameras = [];
    this.admin = false; // whether the tiles were made for an admin (with Remove buttons)
    this.form = root.querySelector('[data-role="add-form"]');
    this.adminNotice = new Notice(root.querySelector('[data-role="admin-notice"]'));
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.add(this.form.querySelector('[data-role="add-name"]').value.trim(),
        this.form.querySelector('[data-role="add-source"]').value.trim());
    });
    this.tiles = new Map(); // name -> CameraTile
    this.seen = new Set(); // names of the tiles in view
    this.timer = null;
    this.observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const name = entry.target.dataset.camera;
        if (entry.isIntersecting) this.seen.add(name);
        else this.seen.delete(name);
      }
      this.#applyVisibility();
    });
    document.addEventListener('visibilitychange', () => {
      this.#applyVisibility();
      if (document.visibilityState === 'visible') this.refresh();
    });
  }

  /** Reads the list now, and again every CAMERAS_POLL_MS (CAMERAS_IDLE_POLL_MS while hidden) while the page is visible. */
  async refresh() {
    clearTimeout(this.timer);
    this.timer = null;
    if (document.visibilityState === 'visible') {
      try {
        const answer = await apiRequest(CAMERAS_PATH, { action: 'Loading the cameras' });
        this.#render(Array.isArray(answer?.cameras) ? answer.cameras : []);
      } catch (error) {
        if (error.status === 404) {
          this.#render([]); // a server without cameras: nothing to show
          return;
        }
        // Keep the tiles (their streams reconnect by themselves); the list is read again.
      }
    }
    if (document.visibilityState === 'visible' && !this.timer) {
      this.timer = setTimeout(() => this.refresh(), this.root.hidden ? CAMERAS_IDLE_POLL_MS : CAMERAS_POLL_MS);
    }
  }

  /** Admin: adds camera `name` with source `spec`, then reads the list again. */
  async add(name, source) {
    const button = this.form.querySelector('[data-role="add"]');
    button.disabled = true;
    try {
      await apiRequest(CAMERAS_PATH, { method: 'POST', json: { name, source }, action: `Adding camera “${name}”` });
      this.form.reset();
      this.adminNotice.ok(`Added camera “${name}”.`);
    } catch (error) {
      this.adminNotice.error(error);
    } finally {
      button.disabled = false;
    }
    await this.refresh();
  }

  /** Admin: removes camera `name` (after asking), then reads the list again. */
  async remove(name) {
    if (!window.confirm(`Remove camera “${name}”? Its viewers are disconnected; its events and recordings stay on the server.`)) return;
    // The removal closes this tile's socket: hold it first, or it reconnects to a camera that is
    // gone (a 404) before the list is read again.
    const tile = this.tiles.get(name);
    tile?.hold(true);
    try {
      await apiRequest(`${CAMERAS_PATH}/${pathName(name)}`, { method: 'DELETE', action: `Removing camera “${name}”` });
      this.adminNotice.ok(`Removed camera “${name}”.`);
    } catch (error) {
      tile?.hold(false);
      this.#applyVisibility();
      this.adminNotice.error(error);
    }
    await this.refresh();
  }

  #render(listed) {
    let cameras = listed;
    const admin = document.body.dataset.role === 'admin';
    const unknown = this.chosen !== null && cameras.length > 0 && !cameras.some((c) => c.name === this.chosen);
    if (unknown) this.notice.error(`This server has no camera named “${this.chosen}”. Pick one:`);
    else this.notice.clear();
    const show = cameras.length > 1 || unknown;
    // An admin sees the card with one camera too: for the form that adds another.
    this.root.hidden = !show && !(admin && listed.length > 0);
    this.form.hidden = !admin;
    const current = shownCameraName(cameras, this.chosen);
    if (!show) cameras = [];
    if (!sameCameras(cameras, this.cameras) || admin !== this.admin) {
      this.admin = admin;
      for (const tile of this.tiles.values()) {
        this.observer.unobserve(tile.element);
        tile.dispose();
      }
      this.tiles.clear();
      this.seen.clear();
      for (const [index, camera] of cameras.entries()) {
        const onRemove = admin && index > 0 ? (name) => this.remove(name) : undefined;
        const tile = new CameraTile(camera, { current: camera.name === current, onRemove });
        this.tiles.set(camera.name, tile);
        this.list.append(tile.element);
        this.observer.observe(tile.element);
      }
    }
    for (const camera of cameras) this.tiles.get(camera.name)?.update(camera);
    this.cameras = cameras;
    this.root.dataset.cameras = String(cameras.length);
    this.onList(listed);
  }

  #applyVisibility() {
    const pageVisible = document.visibilityState === 'visible';
    for (const [name, tile] of this.tiles) tile.setStreaming(pageVisible && this.seen.has(name));
  }

  /** What the tiles do, for the debug hook: [{name, streaming, connection, frames}]. */
  get summary() {
    return [...this.tiles.values()].map((tile) => ({
      name: tile.name,
      streaming: tile.streaming,
      connection: tile.element.dataset.connection ?? ConnectionState.CONNECTING,
      frames: tile.painted,
    }));
  }
}
