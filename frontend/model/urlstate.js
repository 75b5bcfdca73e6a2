// @ts-check
/**
 * The shareable view state (run, worker, span, time window, selection) and its place in a URL hash.
 *
 * Inside TensorBoard the page is an iframe and the top window's hash is `#kinetoscope`: TensorBoard
 * picks the tab from the part before the first `&`, so the state rides behind it as
 * `#kinetoscope&ks=<encoded state>` and a copied link opens the same view. Pure: no DOM.
 */

/** Key of the state inside the hash. */
export const HASH_KEY = 'ks';

/**
 * @typedef {object} ViewState
 * @property {string} [run]
 * @property {string} [worker]
 * @property {string} [span] span id issued by the `runs` route
 * @property {number} [t0Us] window start
 * @property {number} [t1Us] window end
 * @property {number} [sel] selected event row
 * @property {string} [base] the Compare panel's baseline: `run:NAME` or `span:ID`
 * @property {boolean} [candRun] the candidate is the whole run on screen, not its span
 * @property {number} [a0Us] area selection start (the Tables panel shows only [a0Us, a1Us])
 * @property {number} [a1Us] area selection end
 * @property {number} [step] the Compare panel's aligned step (1-based; with `base`)
 * @property {number} [cw0Us] the Compare panel's stacked lanes window, µs from the aligned step's start (with `base`)
 * @property {number} [cw1Us]
 */

/** Keeps 3 decimals (nanoseconds): enough to restore a window exactly, short enough for a link. */
const round3 = (/** @type {number} */ v) => Math.round(v * 1000) / 1000;

/**
 * @param {ViewState} state
 * @returns {string} a query string, e.g. `run=r&worker=w&span=abc&t=0,1000&sel=12`
 */
export function encodeState(state) {
  const q = new URLSearchParams();
  if (state.run) q.set('run', state.run);
  if (state.worker) q.set('worker', state.worker);
  if (state.span) q.set('span', state.span);
  const { t0Us, t1Us } = state;
  if (t0Us !== undefined && t1Us !== undefined && Number.isFinite(t0Us) && Number.isFinite(t1Us)) {
    q.set('t', `${round3(t0Us)},${round3(t1Us)}`);
  }
  if (state.sel !== undefined && Number.isInteger(state.sel) && state.sel >= 0) q.set('sel', String(state.sel));
  if (state.base && /^(run|span):./.test(state.base)) {
    q.set('base', state.base);
    if (state.candRun) q.set('cand', 'run');
    if (state.step !== undefined && Number.isInteger(state.step) && state.step >= 1) q.set('step', String(state.step));
    const { cw0Us, cw1Us } = state;
    if (cw0Us !== undefined && cw1Us !== undefined && Number.isFinite(cw0Us) && Number.isFinite(cw1Us) && cw0Us < cw1Us) {
      q.set('cw', `${round3(cw0Us)},${round3(cw1Us)}`);
    }
  }
  const { a0Us, a1Us } = state;
  if (a0Us !== undefined && a1Us !== undefined && Number.isFinite(a0Us) && Number.isFinite(a1Us) && a0Us < a1Us) {
    q.set('a', `${round3(a0Us)},${round3(a1Us)}`);
  }
  return q.toString();
}

/**
 * Parses `encodeState` output; anything malformed is dropped, never thrown.
 * @param {string} text
 * @returns {ViewState}
 */
export function decodeState(text) {
  /** @type {ViewState} */
  const state = {};
  const q = new URLSearchParams(text);
  for (const key of /** @type {const} */ (['run', 'worker', 'span'])) {
    const v = q.get(key);
    if (v) state[key] = v;
  }
  const t = (q.get('t') || '').split(',').map(Number);
  if (t.length === 2 && t.every(Number.isFinite) && t[0] < t[1]) [state.t0Us, state.t1Us] = t;
  const sel = Number(q.get('sel'));
  if (q.get('sel') && Number.isInteger(sel) && sel >= 0) state.sel = sel;
  const base = q.get('base');
  if (base && /^(run|span):./.test(base)) {
    state.base = base;
    if (q.get('cand') === 'run') state.candRun = true;
    const step = Number(q.get('step'));
    if (q.get('step') && Number.isInteger(step) && step >= 1) state.step = step;
    const cw = (q.get('cw') || '').split(',').map(Number);
    if (cw.length === 2 && cw.every(Number.isFinite) && cw[0] < cw[1]) [state.cw0Us, state.cw1Us] = cw;
  }
  const a = (q.get('a') || '').split(',').map(Number);
  if (a.length === 2 && a.every(Number.isFinite) && a[0] < a[1]) [state.a0Us, state.a1Us] = a;
  return state;
}

/**
 * The state stored in a hash such as `#kinetoscope&ks=run%3Dr` (null when there is none).
 * @param {string} hash
 * @returns {ViewState | null}
 */
export function readHash(hash) {
  for (const part of hash.replace(/^#/, '').split('&')) {
    if (part.startsWith(`${HASH_KEY}=`)) {
      try {
        return decodeState(decodeURIComponent(part.slice(HASH_KEY.length + 1)));
      } catch {
        return null;
      }
    }
  }
  return null;
}

/**
 * `hash` with its state part replaced by `state` (other parts, such as TensorBoard's tab id, kept).
 * @param {string} hash
 * @param {ViewState} state
 * @param {string} [tab] put first when the hash has no tab yet (a link to the plugin tab)
 * @returns {string} the new hash, starting with '#'
 */
export function writeHash(hash, state, tab) {
  const parts = hash.replace(/^#/, '').split('&').filter((p) => p && !p.startsWith(`${HASH_KEY}=`));
  if (parts.length === 0 && tab) parts.push(tab);
  const encoded = encodeState(state);
  if (encoded) parts.push(`${HASH_KEY}=${encodeURIComponent(encoded)}`);
  return `#${parts.join('&')}`;
}
