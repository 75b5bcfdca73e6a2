// @ts-check
/**
 * Follows TensorBoard's dark mode. TensorBoard marks its own page with `body.dark-mode` (its toggle, or
 * the system's `prefers-color-scheme` on first visit); the plugin runs in a same-origin iframe, so it
 * watches that class and mirrors it as `ks-dark` on its own body and in the canvas palette. Where the
 * parent page cannot be read (the plugin opened on its own, another origin), the system's preference
 * decides.
 */
import { redrawAllCanvases } from '../render/canvas_view.js';
import { useDarkColors } from '../render/frame.js';

/**
 * The parent TensorBoard page's body, or null when there is none we may read.
 * @returns {HTMLElement | null}
 */
function tensorBoardBody() {
  try {
    if (window.parent === window) return null;
    return window.parent.document.body;
  } catch {
    return null; // another origin
  }
}

/**
 * Applies one theme to the page and the canvases.
 * @param {HTMLElement} body @param {boolean} dark
 */
export function applyTheme(body, dark) {
  if (body.classList.contains('ks-dark') === dark && body.dataset.theme) return;
  body.classList.toggle('ks-dark', dark);
  body.dataset.theme = dark ? 'dark' : 'light';
  useDarkColors(dark);
  redrawAllCanvases();
}

/**
 * Keeps the page's theme equal to TensorBoard's from now on.
 * @param {HTMLElement} body
 */
export function followTheme(body) {
  const parent = tensorBoardBody();
  if (parent) {
    const sync = () => applyTheme(body, parent.classList.contains('dark-mode'));
    new MutationObserver(sync).observe(parent, { attributes: true, attributeFilter: ['class'] });
    sync();
    return;
  }
  const query = window.matchMedia?.('(prefers-color-scheme: dark)');
  applyTheme(body, Boolean(query?.matches));
  query?.addEventListener?.('change', (e) => applyTheme(body, e.matches));
}
