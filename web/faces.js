// Faces panel: pick a face (click its box on the view, or its button in the
// "in view" list for keyboard users), then name it, confirm the recognised name
// or correct it; the list of known people with delete.
//
// Runs on the main thread. Hit-testing uses the rotated boxes exactly as the
// overlay drew them (geometry.js, unit-tested).

import { apiRequest, pathName, Notice } from './api.js';
import { hitTest, clientToCanvas } from './geometry.js';
import { cameraPath } from './camera.js';

/** The faces and people of the camera the page shows. */
export const FACES_PATH = cameraPath('/api/faces');
export const PEOPLE_PATH = cameraPath('/api/people');
/** Extra slack around a face box for clicks, in CSS pixels. */
export const HIT_MARGIN_PX = 6;
export const MAX_PERSON_NAME_LENGTH = 64;
const FACE = 'face';

/** /api/people answer -> [{name, detail}], whatever list shape the server uses. */
export function normalizePeople(answer) {
  const list = Array.isArray(answer) ? answer : answer?.people || answer?.names || [];
  if (!Array.isArray(list)) return [];
  return list
    .map((entry) => {
      if (typeof entry === 'string') return { name: entry, detail: '' };
      if (!entry || typeof entry.name !== 'string') return null;
      const samples = entry.samples ?? entry.sampleCount ?? entry.faces ?? entry.count;
      return { name: entry.name, detail: Number.isFinite(samples) ? `${samples} sample${samples === 1 ? '' : 's'}` : '' };
    })
    .filter(Boolean);
}

/** The face detections of a drawn frame, as hit-testable rects {id, x, y, w, h, roll}. */
export function faceRects(drawn) {
  return (drawn?.rects || []).filter((r) => r.kind === FACE && r.id !== undefined);
}

/** " (learned 3 pictures; Ada has 5)" from the server's enrollment answer {id, name, learned, samples}. */
export function enrollmentDetail(answer) {
  if (!answer || !Number.isFinite(answer.learned)) return '';
  const plural = (n) => (n === 1 ? '' : 's');
  const total = Number.isFinite(answer.samples) && answer.name ? `; ${answer.name} has ${answer.samples}` : '';
  return ` (learned ${answer.learned} picture${plural(answer.learned)}${total})`;
}

/** One line on the face detector from /api/state's "faces" (absent: detection is off). */
export function detectorSummary(faces) {
  if (!faces || typeof faces.detector !== 'string') return 'Face detection is off on this server.';
  const name = faces.detector.startsWith('yunet') ? `YuNet (${faces.detector.slice(6) || '?'} input)`
    : faces.detector === 'haar' ? 'Haar cascades (no face model set)' : faces.detector;
  const refined = faces.refineLandmarks ? ', refined landmarks' : '';
  const limit = Number.isFinite(faces.maxFaces) ? `, up to ${faces.maxFaces} faces` : '';
  return `Detector: ${name}${refined}${limit}.`;
}

function faceLabel(det) {
  const name = det.name ? ` ${det.name}` : '';
  const confidence = det.name && Number.isFinite(det.nameConfidence) ? ` (${det.nameConfidence.toFixed(2)})` : '';
  return `#${det.id}${name}${confidence}`;
}

export class FacesPanel {
  /**
   * @param {HTMLElement} root the faces card
   * @param {{onSelect?: (id: number|null) => void}} hooks
   */
  constructor(root, { onSelect = () => {} } = {}) {
    this.root = root;
    this.onSelect = onSelect;
    this.inView = root.querySelector('[data-role="in-view"]');
    this.noFaces = root.querySelector('[data-role="no-faces"]');
    this.form = root.querySelector('[data-role="face-form"]');
    this.selectedText = root.querySelector('[data-role="selected"]');
    this.nameInput = root.querySelector('[data-role="person-name"]');
    this.buttons = {
      name: root.querySelector('[data-role="name-face"]'),
      confirm: root.querySelector('[data-role="confirm-face"]'),
      correct: root.querySelector('[data-role="correct-face"]'),
      clear: root.querySelector('[data-role="deselect"]'),
    };
    this.detector = root.querySelector('[data-role="detector"]');
    this.people = root.querySelector('[data-role="people"]');
    this.noPeople = root.querySelector('[data-role="no-people"]');
    this.notice = new Notice(root.querySelector('[data-role="notice"]'));
    this.selectedId = null;
    this.faces = new Map(); // id -> detection, from the frame on screen
    this.inViewKey = '';
    this.busy = false;

    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      // Enter in the name field: name an unnamed face, correct a named one.
      this.#send(this.#selectedFace()?.name ? 'correct' : 'name');
    });
    this.buttons.confirm.addEventListener('click', () => this.#send('confirm'));
    this.buttons.correct.addEventListener('click', () => this.#send('correct'));
    this.buttons.clear.addEventListener('click', () => this.select(null));
    this.nameInput.addEventListener('input', () => this.#renderForm());
    this.#renderForm();
  }

  /** From each /api/state poll: which detector runs (text only changes when it does). */
  syncFromState(faces) {
    const text = detectorSummary(faces);
    if (this.detector && this.detector.textContent !== text) this.detector.textContent = text;
  }

  /** After each paint: the faces now on screen. Cheap when nothing changed. */
  update(drawn) {
    const detections = (drawn?.detections || []).filter((d) => d.kind === FACE && d.id !== undefined);
    this.faces = new Map(detections.map((d) => [d.id, d]));
    const key = detections.map(faceLabel).join('|');
    if (key === this.inViewKey) return;
    this.inViewKey = key;
    this.#renderInView(detections);
    this.#renderForm();
  }

  /** A click at client (x, y) on the view canvas: select the face under it (or nothing). */
  clickAt(clientX, clientY, canvas, drawn) {
    const id = this.faceAt(clientX, clientY, canvas, drawn);
    if (id !== null || this.selectedId !== null) this.select(id);
    return id;
  }

  /** The id of the face box under client (x, y), or null. */
  faceAt(clientX, clientY, canvas, drawn) {
    if (!drawn) return null;
    const point = clientToCanvas(clientX, clientY, canvas.getBoundingClientRect(), canvas.width, canvas.height);
    const hit = hitTest(point, faceRects(drawn), HIT_MARGIN_PX * (drawn.canvas?.dpr || 1));
    return hit ? hit.id : null;
  }

  select(id) {
    if (id === this.selectedId) return;
    this.selectedId = id;
    this.nameInput.value = '';
    this.notice.clear();
    this.#renderInView([...this.faces.values()]);
    this.#renderForm();
    this.onSelect(id);
    if (id !== null) this.nameInput.focus({ preventScroll: true });
  }

  #selectedFace() {
    return this.selectedId === null ? null : this.faces.get(this.selectedId) || null;
  }

  #renderInView(detections) {
    const buttons = detections.map((det) => {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'chip';
      button.dataset.faceId = String(det.id);
      button.textContent = faceLabel(det);
      button.setAttribute('aria-pressed', String(det.id === this.selectedId));
      button.addEventListener('click', () => this.select(det.id === this.selectedId ? null : det.id));
      return button;
    });
    const focusedId = this.inView.contains(document.activeElement) ? document.activeElement.dataset.faceId : null;
    this.inView.replaceChildren(...buttons);
    if (focusedId) this.inView.querySelector(`[data-face-id="${CSS.escape(focusedId)}"]`)?.focus();
    this.noFaces.hidden = detections.length > 0;
  }

  #renderForm() {
    const id = this.selectedId;
    this.form.hidden = id === null;
    if (id === null) return;
    const face = this.#selectedFace();
    const recognised = face?.name;
    let text = `Face #${id}`;
    if (!face) text += ' (not in view now)';
    else if (recognised) text += ` looks like ${recognised}`;
    else text += ', not recognised';
    if (this.selectedText.textContent !== text) this.selectedText.textContent = text;
    const typed = this.nameInput.value.trim();
    this.buttons.name.hidden = Boolean(recognised);
    this.buttons.confirm.hidden = !recognised;
    this.buttons.correct.hidden = !recognised;
    if (recognised && this.buttons.confirm.textContent !== `Yes, ${recognised}`) {
      this.buttons.confirm.textContent = `Yes, ${recognised}`;
    }
    this.buttons.name.disabled = this.busy || !typed;
    this.buttons.correct.disabled = this.busy || !typed || typed === recognised;
    this.buttons.confirm.disabled = this.busy;
  }

  async #send(kind) {
    const id = this.selectedId;
    if (id === null || this.busy) return;
    const face = this.#selectedFace();
    const typed = this.nameInput.value.trim();
    let path;
    let json;
    let success;
    if (kind === 'confirm') {
      if (!face?.name) return;
      path = `${FACES_PATH}/${id}/feedback`;
      json = { correct: true };
      success = `Confirmed: face #${id} is ${face.name}`;
    } else {
      if (!typed) {
        this.nameInput.focus();
        return;
      }
      if (typed.length > MAX_PERSON_NAME_LENGTH) {
        this.notice.error(`Names are at most ${MAX_PERSON_NAME_LENGTH} characters.`);
        return;
      }
      if (kind === 'correct') {
        path = `${FACES_PATH}/${id}/feedback`;
        json = { name: typed };
        success = `Corrected: face #${id} is ${typed}${face?.name ? `, not ${face.name}` : ''}`;
      } else {
        path = `${FACES_PATH}/${id}/name`;
        json = { name: typed };
        success = `Named face #${id} ${typed}`;
      }
    }
    this.busy = true;
    this.#renderForm();
    try {
      const answer = await apiRequest(path, { method: 'POST', json, action: `Face #${id}` });
      this.notice.ok(`${success}${enrollmentDetail(answer)}.`);
      this.nameInput.value = '';
      await this.refreshPeople();
    } catch (error) {
      this.notice.error(error);
    } finally {
      this.busy = false;
      this.#renderForm();
    }
  }

  async refreshPeople() {
    try {
      const answer = await apiRequest(PEOPLE_PATH, { action: 'Loading people failed' });
      this.#renderPeople(normalizePeople(answer));
    } catch (error) {
      this.notice.error(error);
    }
  }

  #renderPeople(people) {
    const items = people.map(({ name, detail }) => {
      const li = document.createElement('li');
      li.className = 'person';
      li.dataset.person = name;
      const label = document.createElement('span');
      label.className = 'person-name';
      label.textContent = name;
      const extra = document.createElement('span');
      extra.className = 'person-detail';
      extra.textContent = detail;
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'danger';
      remove.textContent = 'Delete';
      remove.setAttribute('aria-label', `Forget ${name}`);
      remove.addEventListener('click', () => this.#deletePerson(name, remove));
      li.append(label, extra, remove);
      return li;
    });
    this.people.replaceChildren(...items);
    this.noPeople.hidden = people.length > 0;
  }

  async #deletePerson(name, button) {
    button.disabled = true;
    try {
      await apiRequest(`${PEOPLE_PATH}/${pathName(name)}`, { method: 'DELETE', action: `Forgetting ${name} refused` });
      this.notice.ok(`Forgot ${name}.`);
      await this.refreshPeople();
    } catch (error) {
      button.disabled = false;
      this.notice.error(error);
    }
  }
}
