// @ts-check
/**
 * Level of detail at draw time. The `lanes` route already merges sub-pixel events at the width it was
 * asked for; between a zoom and the next response the client draws that payload at another scale, so
 * it merges again here: nothing narrower than a pixel is drawn on its own. Pure: no DOM.
 */

/**
 * Callback receiving one rectangle to draw, in CSS pixels.
 * @callback EmitRect
 * @param {number} x0Css
 * @param {number} x1Css
 * @param {number} index first event of the rectangle
 * @param {number} count events merged into it (1: a single event, its label may be drawn)
 * @returns {void}
 */

/**
 * Walks events [i0, i1) of one row (sorted by start) and emits what to draw: events at least `minPx`
 * wide as themselves, runs of narrower events (consecutive ones less than a pixel apart) as one
 * coverage block at least one pixel wide. At most about one rectangle per pixel leaves this function.
 * @param {ArrayLike<number>} startUs
 * @param {ArrayLike<number>} durUs
 * @param {number} i0
 * @param {number} i1
 * @param {{tToX(tUs: number): number}} scale
 * @param {number} minPx
 * @param {EmitRect} emit
 */
export function forEachDrawRect(startUs, durUs, i0, i1, scale, minPx, emit) {
  let runX0 = 0;
  let runX1 = -Infinity;
  let runFirst = -1;
  let runCount = 0;
  const flush = () => {
    if (runCount > 0) emit(runX0, Math.max(runX1, runX0 + 1), runFirst, runCount);
    runCount = 0;
  };
  for (let i = i0; i < i1; i++) {
    const x0 = scale.tToX(startUs[i]);
    const x1 = scale.tToX(startUs[i] + durUs[i]);
    if (x1 - x0 >= minPx) {
      flush();
      emit(x0, x1, i, 1);
      continue;
    }
    if (runCount > 0 && x0 <= runX1 + 1) {
      if (x1 > runX1) runX1 = x1;
      runCount++;
    } else {
      flush();
      runX0 = x0;
      runX1 = x1;
      runFirst = i;
      runCount = 1;
    }
  }
  flush();
}

/**
 * Caches text widths per string (measureText is the slow part of drawing labels).
 */
export class TextWidthCache {
  /** @param {(text: string) => number} measure */
  constructor(measure) {
    this.measure = measure;
    /** @type {Map<string, number>} */
    this.widths = new Map();
  }

  /** @param {string} text */
  width(text) {
    let w = this.widths.get(text);
    if (w === undefined) {
      // Bounded: labels are names from a trace's string table, but truncations add prefixes.
      if (this.widths.size > 20000) this.widths.clear();
      w = this.measure(text);
      this.widths.set(text, w);
    }
    return w;
  }
}

/** Ellipsis appended to truncated labels. */
export const ELLIPSIS = '\u2026';

/**
 * The longest prefix of `text` (with an ellipsis when cut) whose width fits `maxCss`, or '' when not
 * even the first character and the ellipsis fit. Binary search over the prefix length.
 * @param {string} text
 * @param {number} maxCss
 * @param {TextWidthCache} widths
 */
export function fitLabel(text, maxCss, widths) {
  if (maxCss <= 0 || !text) return '';
  if (widths.width(text) <= maxCss) return text;
  let lo = 1;
  let hi = text.length - 1;
  if (hi < 1 || widths.width(text.slice(0, 1) + ELLIPSIS) > maxCss) return '';
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (widths.width(text.slice(0, mid) + ELLIPSIS) <= maxCss) lo = mid;
    else hi = mid - 1;
  }
  return text.slice(0, lo) + ELLIPSIS;
}

/**
 * The lanes route's parameters for a view window: the window widened by `marginFrac` of its span on
 * each side (so a pan draws real data before the next response) at the matching pixel width.
 * @param {{t0Us: number, t1Us: number}} win
 * @param {number} widthCss plot width
 * @param {number} marginFrac
 * @param {{t0Us: number, t1Us: number}} bounds the trace
 * @returns {{startUs: number, endUs: number, widthPx: number}}
 */
export function fetchWindow(win, widthCss, marginFrac, bounds) {
  const span = win.t1Us - win.t0Us;
  const startUs = Math.max(bounds.t0Us, win.t0Us - span * marginFrac);
  const endUs = Math.min(bounds.t1Us, win.t1Us + span * marginFrac);
  const widthPx = Math.max(1, Math.min(10000, Math.round((widthCss * (endUs - startUs)) / span)));
  return { startUs, endUs, widthPx };
}

/**
 * Whether a fetched payload still serves the view: it covers the window and its resolution is at most
 * `tolerance` times coarser than one pixel of the view, and not more than 4 times finer (after a deep
 * zoom-out that payload would cover only a sliver of the view anyway).
 * @param {{startUs: number, endUs: number, usPerPx: number}} fetched
 * @param {{t0Us: number, t1Us: number}} win
 * @param {number} viewUsPerPx
 * @param {number} tolerance
 */
export function payloadServes(fetched, win, viewUsPerPx, tolerance) {
  const covers = fetched.startUs <= win.t0Us + 1e-9 && fetched.endUs >= win.t1Us - 1e-9;
  const ratio = fetched.usPerPx / viewUsPerPx;
  return covers && ratio <= tolerance && ratio >= 0.25;
}
