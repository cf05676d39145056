// Access card: signs this browser in with a token (POST /api/session sets an
// HttpOnly session cookie, so the token is never kept by the page, and the
// cookie also carries the WebSocket, which cannot have headers), shows who is
// signed in and what that role may do, and signs out (DELETE /api/session).
// A 401 anywhere opens this card's message so people know where to look.
//
// Runs on the main thread. accessSummary() is unit-tested in Tests/web/api.test.mjs.

import { apiRequest, onUnauthorized, describeError, Notice, takeLegacyToken } from './api.js';

export const SESSION_PATH = '/api/session';

/** One sentence on who this browser is and what it may do, from GET /api/session. */
export function accessSummary(who) {
  if (!who || typeof who !== 'object') return 'Checking who you are…';
  if (who.signedIn) {
    const name = who.name ? `“${who.name}”` : 'a token';
    return who.mayChange
      ? `Signed in as ${name} (admin): you may watch, upload templates, name faces and switch sources.`
      : `Signed in as ${name} (viewer): you may watch; uploads, naming and switching need an admin token.`;
  }
  return who.viewOpen
    ? 'Not signed in: watching is open here; sign in with an admin token to upload, name faces or switch sources.'
    : 'Not signed in: this server needs a token to watch. Sign in below.';
}

export class AccessPanel {
  constructor(root, { onChange = () => {} } = {}) {
    this.root = root;
    this.onChange = onChange;
    this.form = root.querySelector('[data-role="token-form"]');
    this.input = root.querySelector('[data-role="token"]');
    this.signOut = root.querySelector('[data-role="forget"]');
    this.state = root.querySelector('[data-role="token-state"]');
    this.notice = new Notice(root.querySelector('[data-role="notice"]'));
    this.who = null;

    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      const value = this.input.value.trim();
      if (!value) {
        this.notice.error('Type the token first (the server prints it at first start, or it is in <data-dir>/token).');
        this.input.focus();
        return;
      }
      this.signIn(value);
    });
    this.signOut.addEventListener('click', async () => {
      try {
        await apiRequest(SESSION_PATH, { method: 'DELETE', action: 'Signing out' });
        this.notice.ok('Signed out.');
      } catch (error) {
        this.notice.error(error);
      }
      this.refresh();
    });
    onUnauthorized((error) => {
      this.root.dataset.invalid = 'true';
      this.notice.error(`${describeError(error)}`);
      this.refresh();
    });
    // A token an older page kept in localStorage: sign in with it once, then forget it.
    const legacy = takeLegacyToken();
    if (legacy) this.signIn(legacy, { quiet: true });
    else this.refresh();
  }

  async signIn(token, { quiet = false } = {}) {
    try {
      this.who = await apiRequest(SESSION_PATH, { method: 'POST', json: { token }, action: 'Signing in' });
      this.input.value = '';
      this.root.dataset.invalid = 'false';
      if (!quiet) this.notice.ok('Signed in.');
    } catch (error) {
      this.root.dataset.invalid = 'true';
      this.notice.error(error);
    }
    this.refresh();
  }

  async refresh() {
    try {
      this.who = await apiRequest(SESSION_PATH, { action: 'Checking the session' });
    } catch {
      this.who = null;
    }
    this.#render();
  }

  #render() {
    const who = this.who;
    this.state.textContent = accessSummary(who);
    document.body.dataset.role = who?.signedIn ? who.role || '' : '';
    document.body.dataset.mayChange = String(!!who?.mayChange);
    this.signOut.hidden = !who?.signedIn;
    this.input.placeholder = who?.signedIn ? 'Another token' : 'Token';
    this.onChange(who);
  }
}
