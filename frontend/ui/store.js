// @ts-check
/**
 * The page state and its subscribers. Views read `store.state` when they draw; changes notify
 * subscribers with the set of keys that changed, so a window change costs a redraw request, not a
 * rebuild.
 */

/**
 * @typedef {object} SpanRef
 * @property {string} id
 * @property {string} run
 * @property {string} worker
 * @property {string | null} span
 * @property {number} index
 */

/**
 * @typedef {object} State
 * @property {SpanRef | null} span
 * @property {any} summary the `summary` route's answer for the span, once loaded
 * @property {import('../model/scale.js').Window} bounds the whole trace
 * @property {import('../model/scale.js').Window} win the visible window
 * @property {(import('../model/flows.js').Selection & {depth: number, name: string}) | null} sel
 * @property {number | null} selRow a selection restored from a link, before its details arrive
 * @property {string | null} spanError why the span cannot be shown (its trace failed to load)
 * @property {any} runVerdict the `verdict?run=` answer of the span's run (null: none, or a one-span run)
 * @property {{base: string, candRun: boolean, step?: number, win?: import('../model/scale.js').Window} | null} compare the Compare panel's baseline (`run:NAME` or `span:ID`) and
 *   whether the candidate is the run on screen rather than its span; `step` (1-based) and `win` (µs from that step's start) are its stacked
 *   lanes' aligned step and window
 * @property {import('../model/scale.js').Window | null} [area] the area selected in the lanes (Shift+drag): the tables show only it
 * @property {boolean} [lanesReady] the span's lanes can be asked and `bounds` is its extent (before the summary, while it analyses)
 */

export class Store {
  constructor() {
    /** @type {State} */
    this.state = { span: null, summary: null, bounds: { t0Us: 0, t1Us: 1 }, win: { t0Us: 0, t1Us: 1 }, sel: null, selRow: null,
      spanError: null, runVerdict: null, compare: null, area: null, lanesReady: false };
    /** @type {Set<(changed: Set<string>) => void>} */
    this.listeners = new Set();
  }

  /**
   * @param {Partial<State>} patch
   */
  set(patch) {
    const changed = new Set();
    for (const [key, value] of Object.entries(patch)) {
      if (/** @type {any} */ (this.state)[key] !== value) changed.add(key);
    }
    if (changed.size === 0) return;
    this.state = { ...this.state, ...patch };
    for (const fn of this.listeners) {
      try {
        fn(changed);
      } catch (err) {
        console.error('kinetoscope: a view failed to update', err); // one broken view must not stop the others
      }
    }
  }

  /** @param {(changed: Set<string>) => void} fn */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
