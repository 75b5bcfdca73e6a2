// @ts-check
/**
 * Keeps the `runs` listing fresh while the page is open, so traces written after it loaded appear
 * in the selectors without a reload, and a replaced or completed trace on screen reloads: every 5 s
 * while the plugin is visible, and at once when it becomes visible again. TensorBoard hides an inactive plugin tab's iframe (visibility: hidden)
 * rather than removing it, so a background tab costs a style check per second and no request.
 */

/** How often the listing is asked for. Each `runs` request also asks the server for a rescan (at most
 * every 2 s, HTTP_API.md), so a file that changed shows in the listing within about two refreshes. */
export const REFRESH_MS = 5000;
/** How often visibility is checked: cheap (no request), and a shown tab refreshes within this long. */
const CHECK_MS = 1000;

/** True when the document is visible and TensorBoard is not hiding the plugin's iframe. */
export function pluginVisible() {
  if (typeof document === 'undefined' || document.visibilityState !== 'visible') return false;
  try {
    const frame = window.frameElement; // null when standalone or cross-origin
    const view = frame?.ownerDocument?.defaultView;
    return !frame || !view || view.getComputedStyle(frame).visibility !== 'hidden';
  } catch {
    return true;
  }
}

export class RunsRefresher {
  /**
   * @param {{get(route: string): Promise<any>}} api
   * @param {(body: any) => void} onRuns called with each `runs` answer
   * @param {(err: unknown) => void} onError called when a refresh fails (the last listing stays)
   * @param {{visible?: () => boolean, now?: () => number, refreshMs?: number, checkMs?: number}} [options] injected in tests
   */
  constructor(api, onRuns, onError, options = {}) {
    this.api = api;
    this.onRuns = onRuns;
    this.onError = onError;
    this.visible = options.visible ?? pluginVisible;
    this.now = options.now ?? (() => Date.now());
    this.refreshMs = options.refreshMs ?? REFRESH_MS;
    this.checkMs = options.checkMs ?? CHECK_MS;
    this.lastMs = -Infinity;
    this.wasHidden = false;
    this.timer = 0;
    /** @type {Promise<void> | null} */
    this.inFlight = null;
    this.onVisibility = () => this.check();
  }

  /** Checks every second from now on (idempotent); the first check refreshes unless one just ran. */
  start() {
    if (this.timer) return;
    this.timer = /** @type {any} */ (setInterval(() => this.check(), this.checkMs));
    if (typeof document !== 'undefined') document.addEventListener('visibilitychange', this.onVisibility);
  }

  /** Stops checking and refreshing (a refresh in flight still reports). */
  stop() {
    clearInterval(this.timer);
    this.timer = 0;
    if (typeof document !== 'undefined') document.removeEventListener('visibilitychange', this.onVisibility);
  }

  /** Refreshes when due: visible, and 15 s since the last refresh or hidden since the last check. */
  check() {
    if (!this.visible()) {
      this.wasHidden = true;
      return;
    }
    const shownAgain = this.wasHidden;
    this.wasHidden = false;
    if (shownAgain || this.now() - this.lastMs >= this.refreshMs) this.refresh();
  }

  /**
   * Shows a listing asked for before the refresher existed (index.js asks for it while the app's code loads) as
   * a refresh's; the next one is due `refreshMs` later.
   * @param {any} body a `runs` answer
   */
  took(body) {
    this.lastMs = this.now();
    try {
      this.onRuns(body);
    } catch (err) {
      console.error('kinetoscope: showing the runs failed', err);
    }
  }

  /** Asks for the listing now (one request at a time). @returns {Promise<void>} */
  refresh() {
    if (this.inFlight) return this.inFlight;
    this.lastMs = this.now();
    this.inFlight = this.api.get('runs').then((body) => this.onRuns(body), (err) => this.onError(err))
      .catch((err) => console.error('kinetoscope: showing the runs failed', err))
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }
}
