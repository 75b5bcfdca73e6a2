// @ts-check
/**
 * Time <-> pixel mapping and view-window arithmetic. Pure: no DOM.
 *
 * Spaces: `tUs` is trace time in microseconds (relative to the trace start, as the HTTP API sends it);
 * `xCss` is a CSS-pixel x inside a canvas; `xPx` (device pixels) only appears in render/.
 */

/** @typedef {{t0Us: number, t1Us: number}} Window A visible time window, t0Us < t1Us. */

/**
 * The narrowest window we zoom to. Traces carry nanosecond timestamps, so 10 ns across a plot is
 * already 100+ px per nanosecond: zooming further only shows one stretched rectangle.
 */
export const MIN_SPAN_US = 0.01;

/** A linear map from a time window onto the CSS-pixel span [x0Css, x1Css]. */
export class TimeScale {
  /**
   * @param {number} t0Us
   * @param {number} t1Us
   * @param {number} x0Css
   * @param {number} x1Css
   */
  constructor(t0Us, t1Us, x0Css, x1Css) {
    this.t0Us = t0Us;
    this.t1Us = t1Us;
    this.x0Css = x0Css;
    this.x1Css = x1Css;
    const spanUs = t1Us - t0Us;
    /** CSS pixels per microsecond (0 when the plot or the window is empty). */
    this.pxPerUs = spanUs > 0 ? (x1Css - x0Css) / spanUs : 0;
  }

  /** @param {number} tUs @returns {number} xCss */
  tToX(tUs) {
    return this.x0Css + (tUs - this.t0Us) * this.pxPerUs;
  }

  /** @param {number} xCss @returns {number} tUs */
  xToT(xCss) {
    return this.pxPerUs > 0 ? this.t0Us + (xCss - this.x0Css) / this.pxPerUs : this.t0Us;
  }

  /** Microseconds covered by one CSS pixel. */
  get usPerPx() {
    return this.pxPerUs > 0 ? 1 / this.pxPerUs : Infinity;
  }
}

/**
 * Fits a window inside `bounds`: never narrower than MIN_SPAN_US, never wider than the bounds, and
 * shifted (not shrunk) when it sticks out on one side, so a pan stops at the trace edge.
 * @param {Window} win
 * @param {Window} bounds
 * @returns {Window}
 */
export function clampWindow(win, bounds) {
  const maxSpan = Math.max(bounds.t1Us - bounds.t0Us, MIN_SPAN_US);
  let span = Math.min(Math.max(win.t1Us - win.t0Us, MIN_SPAN_US), maxSpan);
  if (!Number.isFinite(span)) span = maxSpan;
  let t0Us = Number.isFinite(win.t0Us) ? win.t0Us : bounds.t0Us;
  t0Us = Math.min(Math.max(t0Us, bounds.t0Us), bounds.t0Us + maxSpan - span);
  return { t0Us, t1Us: t0Us + span };
}

/**
 * Zooms by `factor` (< 1 zooms in) keeping `tUs` at the same place on screen.
 * @param {Window} win
 * @param {number} tUs the time under the cursor
 * @param {number} factor new span / old span
 * @param {Window} bounds
 * @returns {Window}
 */
export function zoomAround(win, tUs, factor, bounds) {
  const span = win.t1Us - win.t0Us;
  const frac = span > 0 ? (tUs - win.t0Us) / span : 0.5;
  const newSpan = Math.max(span * factor, MIN_SPAN_US);
  const t0Us = tUs - frac * newSpan;
  return clampWindow({ t0Us, t1Us: t0Us + newSpan }, bounds);
}

/**
 * Shifts the window by `dUs` (positive moves towards later times).
 * @param {Window} win @param {number} dUs @param {Window} bounds @returns {Window}
 */
export function panBy(win, dUs, bounds) {
  return clampWindow({ t0Us: win.t0Us + dUs, t1Us: win.t1Us + dUs }, bounds);
}

/**
 * A window showing [t0Us, t1Us] with `padFrac` of its span added on each side (for "zoom to gap").
 * @param {number} t0Us @param {number} t1Us @param {number} padFrac @param {Window} bounds
 * @returns {Window}
 */
export function windowAround(t0Us, t1Us, padFrac, bounds) {
  const span = Math.max(t1Us - t0Us, MIN_SPAN_US);
  const pad = span * padFrac;
  return clampWindow({ t0Us: t0Us - pad, t1Us: t0Us + span + pad }, bounds);
}

/**
 * Tick positions at a "nice" step (1, 2 or 5 times a power of ten) giving about `target` ticks.
 * @param {Window} win
 * @param {number} target wanted number of ticks (>= 1)
 * @returns {{stepUs: number, valuesUs: number[]}}
 */
export function niceTicks(win, target) {
  const span = win.t1Us - win.t0Us;
  if (!(span > 0) || !(target >= 1)) return { stepUs: 0, valuesUs: [] };
  const raw = span / target;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const mult = [1, 2, 5, 10].find((m) => m * pow >= raw) ?? 10;
  const stepUs = mult * pow;
  const valuesUs = [];
  for (let k = Math.ceil(win.t0Us / stepUs); k * stepUs <= win.t1Us; k++) valuesUs.push(k * stepUs);
  return { stepUs, valuesUs };
}

/**
 * Ticks for a log axis from `lo` to `hi` (> 0) at 1-2-5 values (1, 2, 5, 10, 20 ...), thinned to at most
 * `maxTicks`: first to the 1s and 5s, then to the powers of ten, then to every other power.
 * @param {number} lo @param {number} hi @param {number} maxTicks
 * @returns {number[]} ascending values within [lo, hi]
 */
export function logTicks125(lo, hi, maxTicks) {
  if (!(lo > 0) || !(hi > lo) || !(maxTicks >= 1)) return [];
  const first = Math.floor(Math.log10(lo));
  const last = Math.ceil(Math.log10(hi));
  const eps = 1e-9;
  for (const mults of [[1, 2, 5], [1, 5], [1]]) {
    const values = [];
    for (let p = first; p <= last; p++) {
      for (const m of mults) {
        const v = Number((m * 10 ** p).toPrecision(12));
        if (v >= lo * (1 - eps) && v <= hi * (1 + eps)) values.push(v);
      }
    }
    if (values.length <= maxTicks) return values;
  }
  const decades = [];
  for (let p = first; p <= last; p++) if (10 ** p >= lo * (1 - eps) && 10 ** p <= hi * (1 + eps)) decades.push(Number((10 ** p).toPrecision(12)));
  const stride = Math.ceil(decades.length / maxTicks);
  return decades.filter((_, i) => i % stride === 0);
}

/**
 * The window that shows an event at least `minPx` wide: the window kept when the event is in it and wide
 * enough already, else one centred on the event, as wide as the current window allows (never wider, so
 * a search from a zoomed-in view does not zoom out), with the event taking `minPx` at most. An event
 * shorter than MIN_SPAN_US takes what the narrowest window gives it.
 * @param {Window} win @param {Window} bounds
 * @param {number} startUs @param {number} endUs the event
 * @param {number} plotWCss the plot's width
 * @param {number} minPx
 * @returns {Window}
 */
export function windowShowing(win, bounds, startUs, endUs, plotWCss, minPx) {
  const durUs = Math.max(endUs - startUs, 0);
  const winUs = win.t1Us - win.t0Us;
  const widest = plotWCss > minPx ? durUs * plotWCss / minPx : durUs;
  if (startUs >= win.t0Us && endUs <= win.t1Us && winUs <= widest) return win;
  const spanUs = Math.max(Math.min(winUs, widest), durUs, MIN_SPAN_US);
  const midUs = (startUs + endUs) / 2;
  return clampWindow({ t0Us: midUs - spanUs / 2, t1Us: midUs + spanUs / 2 }, bounds);
}
