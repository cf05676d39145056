// Access card: enter the server token once; it is kept in localStorage and sent
// as a bearer token on changes (api.js). A 401 anywhere opens this card's message
// so people know where to look.
//
// Runs on the main thread.

import { getToken, setToken, onUnauthorized, describeError, Notice } from './api.js';

export class AccessPanel {
  constructor(root) {
    this.root = root;
    this.form = root.querySelector('[data-role="token-form"]');
    this.input = root.querySelector('[data-role="token"]');
    this.forget = root.querySelector('[data-role="forget"]');
    this.state = root.querySelector('[data-role="token-state"]');
    this.notice = new Notice(root.querySelector('[data-role="notice"]'));

    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      const value = this.input.value.trim();
      if (!value) {
        this.notice.error('Type the token first (the server prints it at first start, or it is in <data-dir>/token).');
        this.input.focus();
        return;
      }
      setToken(value);
      this.input.value = '';
      this.root.dataset.invalid = 'false';
      this.notice.ok('Token saved in this browser.');
      this.#renderState();
    });
    this.forget.addEventListener('click', () => {
      setToken('');
      this.notice.ok('Token removed from this browser.');
      this.#renderState();
    });
    onUnauthorized((error) => {
      this.root.dataset.invalid = 'true';
      this.notice.error(`${describeError(error)}`);
      this.#renderState();
    });
    this.#renderState();
  }

  #renderState() {
    const token = getToken();
    this.state.textContent = token
      ? 'A token is saved in this browser.'
      : 'No token saved: changes (uploads, naming, switching) will be refused.';
    this.input.placeholder = token ? 'New token' : 'Server token';
  }
}
