// @ts-check
/**
 * Keeps the view state (run, worker, span, window, selection) in the shareable URL. Inside
 * TensorBoard that is the top window's hash (`#kinetoscope&ks=...`, same origin, so reachable from
 * the plugin iframe); standalone, or if the top window is out of reach, the page's own hash.
 * `history.replaceState` updates it without a hashchange event, so TensorBoard does not re-route
 * and the back button does not fill with every zoom step.
 */
import { readHash, writeHash } from '../model/urlstate.js';

/** TensorBoard's id of this plugin's tab: the hash part before the first `&`. */
export const TAB = 'kinetoscope';
const WRITE_DELAY_MS = 300;

/** The window whose URL is shared, and whether it is TensorBoard's top window. */
export function urlHost() {
  try {
    const top = window.top;
    if (top && top !== window && top.location.href) return { host: top, inTensorBoard: true };
  } catch {
    // cross-origin top: fall back to the iframe's own URL
  }
  return { host: window, inTensorBoard: false };
}

/** @returns {import('../model/urlstate.js').ViewState} */
export function readInitialState() {
  const { host } = urlHost();
  return readHash(host.location.hash) ?? readHash(window.location.hash) ?? {};
}

/**
 * The shareable state of the store.
 * @param {import('./store.js').State} s
 * @returns {import('../model/urlstate.js').ViewState}
 */
export function viewState(s) {
  if (!s.span) return {};
  const whole = s.win.t0Us <= s.bounds.t0Us && s.win.t1Us >= s.bounds.t1Us;
  return { run: s.span.run, worker: s.span.worker, span: s.span.id, ...((s.summary || s.lanesReady) && !whole ? { t0Us: s.win.t0Us, t1Us: s.win.t1Us } : {}),
    sel: s.sel?.row ?? s.selRow ?? undefined, ...(s.compare ? { base: s.compare.base, candRun: s.compare.candRun || undefined, step: s.compare.step,
      cw0Us: s.compare.win?.t0Us, cw1Us: s.compare.win?.t1Us } : {}),
    ...(s.area ? { a0Us: s.area.t0Us, a1Us: s.area.t1Us } : {}) };
}

/** Writes the state into the URL now. @param {import('./store.js').State} s */
export function writeUrl(s) {
  const { host, inTensorBoard } = urlHost();
  const hash = writeHash(host.location.hash, viewState(s), inTensorBoard ? TAB : undefined);
  if (hash === host.location.hash || (hash === '#' && !host.location.hash)) return;
  const url = `${host.location.pathname}${host.location.search}${hash}`;
  host.history.replaceState(host.history.state, '', url);
}

/** @param {import('./store.js').Store} store */
export function startUrlSync(store) {
  let timer = 0;
  store.subscribe((changed) => {
    if (!['span', 'win', 'sel', 'summary', 'compare', 'area'].some((k) => changed.has(k))) return;
    clearTimeout(timer);
    timer = window.setTimeout(() => writeUrl(store.state), WRITE_DELAY_MS);
  });
}

/**
 * Follows links pasted into the address bar of an open tab: on a `hashchange` of the shared URL whose
 * state differs from the view on screen, calls `open` with it. The page's own writes use replaceState and
 * fire no `hashchange`, so only the user's (or another page's) changes arrive here.
 * @param {import('./store.js').Store} store
 * @param {(link: import('../model/urlstate.js').ViewState) => void} open
 */
export function followHash(store, open) {
  const { host } = urlHost();
  const onChange = () => {
    const link = readHash(host.location.hash);
    if (!link) return;
    if (JSON.stringify(link) === JSON.stringify(readHash(writeHash('', viewState(store.state))))) return;
    open(link);
  };
  host.addEventListener('hashchange', onChange);
  if (host !== window) window.addEventListener('hashchange', onChange);
}
