// Source selector: the sources the server offers (GET /api/sources: cameras it
// found, the demo, configured files and URLs) and a button that switches the
// running source (POST /api/source). A <select> plus an explicit button, so
// arrowing through the list with the keyboard never switches cameras by accident.
//
// Runs on the main thread.

import { apiRequest, Notice } from './api.js';
import { cameraPath } from './camera.js';

/** The sources offered to, and the source of, the camera the page shows. */
export const SOURCES_PATH = cameraPath('/api/sources');
export const SOURCE_PATH = cameraPath('/api/source');

/** A readable option text for an offered source. */
export function sourceLabel(source) {
  const label = source.label || source.spec;
  return source.kind && !label.toLowerCase().includes(source.kind.toLowerCase()) ? `${label} · ${source.kind}` : label;
}

export class SourcesPanel {
  constructor(root) {
    this.root = root;
    this.form = root.querySelector('[data-role="source-form"]');
    this.select = root.querySelector('[data-role="source-select"]');
    this.button = root.querySelector('[data-role="switch"]');
    this.current = root.querySelector('[data-role="current"]');
    this.notice = new Notice(root.querySelector('[data-role="notice"]'));
    this.currentSpec = null;
    this.offered = [];
    this.busy = false;
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.switchTo(this.select.value);
    });
    this.select.addEventListener('change', () => this.#updateButton());
  }

  async refresh() {
    try {
      const answer = await apiRequest(SOURCES_PATH, { action: 'Loading the sources failed' });
      this.offered = Array.isArray(answer?.sources) ? answer.sources : [];
      this.#render(answer?.current ?? this.currentSpec);
    } catch (error) {
      this.notice.error(error);
    }
  }

  /** From each /api/state poll: the spec that is really running. */
  syncFromState(source) {
    const spec = source?.spec;
    if (!spec || spec === this.currentSpec) return;
    if (this.offered.length && !this.offered.some((s) => s.spec === spec)) {
      this.refresh(); // someone switched to a source we have not listed
      return;
    }
    this.#setCurrent(spec);
  }

  #render(currentSpec) {
    const keep = this.select.value;
    // Replace the options only when the list changed: a refresh that finds the same sources
    // must not close a list the viewer has open (or swap the elements under a script).
    const wanted = this.offered.map((source) => [source.spec, sourceLabel(source)]);
    const shown = [...this.select.options].map((option) => [option.value, option.textContent]);
    if (JSON.stringify(wanted) !== JSON.stringify(shown)) {
      this.select.replaceChildren(...this.offered.map((source) => {
        const option = document.createElement('option');
        option.value = source.spec;
        option.textContent = sourceLabel(source);
        option.title = source.spec;
        return option;
      }));
      this.select.disabled = this.offered.length === 0;
    }
    const userChoice = keep && keep !== this.currentSpec && this.offered.some((s) => s.spec === keep);
    this.#setCurrent(currentSpec);
    if (userChoice) this.select.value = keep;
  }

  #setCurrent(spec) {
    this.currentSpec = spec;
    const source = this.offered.find((s) => s.spec === spec);
    this.current.textContent = source ? sourceLabel(source) : spec || '–';
    this.current.title = spec || '';
    if (source) this.select.value = spec;
    this.#updateButton();
  }

  #updateButton() {
    this.button.disabled = this.busy || !this.select.value || this.select.value === this.currentSpec;
  }

  async switchTo(spec) {
    if (!spec || this.busy) return;
    this.busy = true;
    this.#updateButton();
    const label = sourceLabel(this.offered.find((s) => s.spec === spec) || { spec });
    this.notice.info(`Switching to ${label}…`);
    try {
      const answer = await apiRequest(SOURCE_PATH, {
        method: 'POST',
        json: { spec },
        action: `Switching to ${label} refused`,
      });
      this.#setCurrent(answer?.current || spec);
      this.notice.ok(`Now showing ${label}.`);
    } catch (error) {
      this.notice.error(error);
      this.#setCurrent(this.currentSpec); // back to what is really running
    } finally {
      this.busy = false;
      this.#updateButton();
    }
  }
}
