// Templates panel: upload (file picker or drag and drop anywhere on the page),
// the list with thumbnails, a threshold slider per template, delete.
//
// Runs on the main thread. All text goes in with textContent; names come from
// the server and the user, never as HTML.

import { apiRequest, pathName, sanitizeTemplateName, isValidTemplateName, imageContentType, Notice } from './api.js';
import { cameraPath } from './camera.js';

/** The templates of the camera the page shows. */
export const TEMPLATES_PATH = cameraPath('/api/templates');
export const MAX_UPLOAD_BYTES = 8 * 1024 * 1024;
export const THRESHOLD_MIN = 0.3;
export const THRESHOLD_MAX = 0.99;
export const THRESHOLD_STEP = 0.01;
export const DEFAULT_THRESHOLD = 0.7;
const ACCEPTED_TYPES = Object.freeze(['image/jpeg', 'image/png']);

function formatThreshold(value) {
  return Number(value).toFixed(2);
}

/** Same list? (names and thresholds; used to notice changes made elsewhere) */
function listKey(templates) {
  return (templates || [])
    .map((t) => `${t.name}=${formatThreshold(t.threshold)}`)
    .sort()
    .join('|');
}

export class TemplatesPanel {
  /**
   * @param {HTMLElement} root the templates card
   * @param {HTMLElement} dropTarget where dropping a file uploads it (the whole page)
   */
  constructor(root, dropTarget) {
    this.root = root;
    this.form = root.querySelector('[data-role="upload-form"]');
    this.fileInput = root.querySelector('[data-role="file"]');
    this.nameInput = root.querySelector('[data-role="name"]');
    this.uploadButton = root.querySelector('[data-role="upload"]');
    this.list = root.querySelector('[data-role="list"]');
    this.empty = root.querySelector('[data-role="empty"]');
    this.notice = new Notice(root.querySelector('[data-role="notice"]'));
    this.file = null;
    this.nameEdited = false;
    this.shownKey = null;
    this.busy = false;
    this.refreshing = null;

    this.fileInput.addEventListener('change', () => this.#choose(this.fileInput.files[0] || null));
    this.nameInput.addEventListener('input', () => {
      this.nameEdited = this.nameInput.value !== '';
      this.#updateButton();
    });
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.upload();
    });
    this.#watchDrops(dropTarget);
    this.#updateButton();
  }

  #choose(file) {
    this.file = file;
    if (file && !this.nameEdited) this.nameInput.value = sanitizeTemplateName(file.name);
    this.#updateButton();
  }

  #updateButton() {
    this.uploadButton.disabled = this.busy || !this.file;
  }

  #watchDrops(target) {
    let depth = 0;
    const hasFiles = (event) => [...(event.dataTransfer?.types || [])].includes('Files');
    const setActive = (on) => target.classList.toggle('drop-active', on);
    target.addEventListener('dragenter', (event) => {
      if (!hasFiles(event)) return;
      event.preventDefault();
      depth += 1;
      setActive(true);
    });
    target.addEventListener('dragover', (event) => {
      if (!hasFiles(event)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
    });
    target.addEventListener('dragleave', () => {
      depth = Math.max(0, depth - 1);
      if (depth === 0) setActive(false);
    });
    target.addEventListener('drop', (event) => {
      if (!hasFiles(event)) return;
      event.preventDefault();
      depth = 0;
      setActive(false);
      const file = event.dataTransfer.files[0];
      if (!file) return;
      this.nameEdited = false; // a dropped file names itself
      this.#choose(file);
      this.upload();
    });
  }

  /** Upload the chosen file under the name in the form. */
  async upload() {
    const file = this.file;
    if (!file || this.busy) return;
    const name = this.nameInput.value.trim();
    if (!isValidTemplateName(name)) {
      this.notice.error('Template names use letters, digits, spaces and - _ . only (at most 64 characters).');
      this.nameInput.focus();
      return;
    }
    const type = imageContentType(file);
    if (!ACCEPTED_TYPES.includes(type)) {
      this.notice.error(`${file.name} is not a JPEG or PNG image.`);
      return;
    }
    if (file.size > MAX_UPLOAD_BYTES) {
      this.notice.error(`${file.name} is over 8 MiB.`);
      return;
    }
    this.busy = true;
    this.#updateButton();
    this.notice.info(`Uploading ${name}…`);
    try {
      const answer = await apiRequest(`${TEMPLATES_PATH}?name=${encodeURIComponent(name)}`, {
        method: 'POST',
        body: file,
        contentType: type,
        action: `Upload of "${name}" refused`,
      });
      const made = answer?.template || { name };
      const size = made.width && made.height ? ` (${made.width}×${made.height})` : '';
      this.notice.ok(`Added template "${made.name}"${size}; it is searched for from the next frame.`);
      this.form.reset();
      this.file = null;
      this.nameEdited = false;
      await this.refresh();
    } catch (error) {
      this.notice.error(error);
    } finally {
      this.busy = false;
      this.#updateButton();
    }
  }

  /** Reload the list from GET /api/templates. */
  refresh() {
    if (this.refreshing) return this.refreshing;
    this.refreshing = (async () => {
      try {
        const answer = await apiRequest(TEMPLATES_PATH, { action: 'Loading the templates failed' });
        this.render(answer?.templates || []);
      } catch (error) {
        this.notice.error(error);
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  /** Called with /api/state "templates" each poll: reload when someone else changed them. */
  syncFromState(templates) {
    if (!Array.isArray(templates) || this.shownKey === null || this.busy) return;
    if (this.root.contains(document.activeElement) && document.activeElement.type === 'range') return;
    if (listKey(templates) !== this.shownKey) this.refresh();
  }

  render(templates) {
    this.shownKey = listKey(templates);
    this.empty.hidden = templates.length > 0;
    // Same templates in the same order: update in place, so focus, sliders and thumbnails stay put.
    const items = [...this.list.children];
    const same = items.length === templates.length &&
      items.every((li, i) => li.dataset.template === templates[i].name && li.dataset.created === String(templates[i].createdAt));
    if (same) {
      items.forEach((li, i) => this.#update(li, templates[i]));
      return;
    }
    const focusedName = this.list.contains(document.activeElement)
      ? document.activeElement.closest('[data-template]')?.dataset.template
      : null;
    const focusedRole = document.activeElement?.dataset?.role;
    this.list.replaceChildren(...templates.map((t) => this.#item(t)));
    if (focusedName) {
      const item = [...this.list.children].find((li) => li.dataset.template === focusedName);
      item?.querySelector(`[data-role="${focusedRole}"]`)?.focus();
    }
  }

  /** Refresh an item's numbers; a slider someone is holding keeps its value. */
  #update(li, template) {
    const slider = li.querySelector('[data-role="threshold"]');
    const output = li.querySelector('output');
    if (Number.isFinite(template.threshold) && document.activeElement !== slider) {
      slider.value = String(template.threshold);
      output.textContent = formatThreshold(template.threshold);
    }
  }

  #item(template) {
    const li = document.createElement('li');
    li.className = 'template-item';
    li.dataset.template = template.name;
    li.dataset.created = String(template.createdAt);

    const img = document.createElement('img');
    img.className = 'thumb';
    img.alt = '';
    img.loading = 'lazy';
    img.decoding = 'async';
    // The server names the thumbnail by its unprefixed path (/api/templates/NAME.png) whichever
    // camera it belongs to: map it to the camera the page shows.
    const thumbnail = template.thumbnail ? cameraPath(template.thumbnail) : `${TEMPLATES_PATH}/${pathName(template.name)}.png`;
    // createdAt changes when a name is re-used, so the browser never shows an old picture.
    img.src = template.createdAt ? `${thumbnail}?v=${encodeURIComponent(template.createdAt)}` : thumbnail;

    const info = document.createElement('div');
    info.className = 'template-info';
    const title = document.createElement('span');
    title.className = 'template-name';
    title.textContent = template.name;
    const size = document.createElement('span');
    size.className = 'template-size';
    size.textContent = template.width && template.height ? `${template.width}×${template.height}` : '';

    const sliderId = `threshold-${Math.random().toString(36).slice(2)}`;
    const sliderLabel = document.createElement('label');
    sliderLabel.className = 'threshold';
    sliderLabel.htmlFor = sliderId;
    sliderLabel.textContent = 'Threshold ';
    const value = document.createElement('output');
    value.htmlFor = sliderId;
    const threshold = Number.isFinite(template.threshold) ? template.threshold : DEFAULT_THRESHOLD;
    value.textContent = formatThreshold(threshold);
    sliderLabel.append(value);
    const slider = document.createElement('input');
    slider.type = 'range';
    slider.id = sliderId;
    slider.dataset.role = 'threshold';
    slider.min = String(THRESHOLD_MIN);
    slider.max = String(THRESHOLD_MAX);
    slider.step = String(THRESHOLD_STEP);
    slider.value = String(threshold);
    slider.setAttribute('aria-label', `Threshold for ${template.name}`);
    slider.addEventListener('input', () => {
      value.textContent = formatThreshold(slider.value);
    });
    slider.addEventListener('change', () => this.#setThreshold(template.name, Number(slider.value), slider, value));

    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'danger';
    remove.dataset.role = 'delete';
    remove.textContent = 'Delete';
    remove.setAttribute('aria-label', `Delete template ${template.name}`);
    remove.addEventListener('click', () => this.#delete(template.name, remove));

    info.append(title, size, sliderLabel, slider);
    li.append(img, info, remove);
    return li;
  }

  async #setThreshold(name, threshold, slider, output) {
    try {
      const answer = await apiRequest(`${TEMPLATES_PATH}/${pathName(name)}`, {
        method: 'PATCH',
        json: { threshold },
        action: `Changing the threshold of "${name}" refused`,
      });
      const now = answer?.template?.threshold ?? threshold;
      slider.value = String(now);
      output.textContent = formatThreshold(now);
      this.notice.ok(`"${name}" now needs a score of ${formatThreshold(now)}.`);
      this.shownKey = null; // re-read on the next refresh
      await this.refresh();
    } catch (error) {
      this.notice.error(error);
      await this.refresh(); // show the threshold the server really has
    }
  }

  async #delete(name, button) {
    button.disabled = true;
    try {
      await apiRequest(`${TEMPLATES_PATH}/${pathName(name)}`, {
        method: 'DELETE',
        action: `Deleting "${name}" refused`,
      });
      this.notice.ok(`Deleted template "${name}".`);
      await this.refresh();
      this.fileInput.focus();
    } catch (error) {
      button.disabled = false;
      this.notice.error(error);
    }
  }
}
