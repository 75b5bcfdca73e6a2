// @ts-check
/**
 * Where a span opens: its bounds from its duration, and the window and area a link asked for, clamped
 * to them. The page places a span as soon as its lanes can be asked (the `status` entry's
 * `duration_us`), and again with the summary only if that disagrees.
 */
import { clampWindow } from './scale.js';

/**
 * @param {{t0Us?: number, t1Us?: number, a0Us?: number, a1Us?: number}} link the link's window and area, if any
 * @param {unknown} durationUs the trace's extent (`summary.duration_us`, or the `status` entry's)
 * @returns {{bounds: import('./scale.js').Window, win: import('./scale.js').Window, area: import('./scale.js').Window | null}}
 */
export function spanPlacement(link, durationUs) {
  const bounds = { t0Us: 0, t1Us: Math.max(Number(durationUs) || 0, 1e-3) };
  const win = link.t0Us !== undefined && link.t1Us !== undefined
    ? clampWindow({ t0Us: link.t0Us, t1Us: link.t1Us }, bounds) : bounds;
  const area = link.a0Us !== undefined && link.a1Us !== undefined && link.a0Us < bounds.t1Us
    ? { t0Us: Math.max(bounds.t0Us, link.a0Us), t1Us: Math.min(bounds.t1Us, link.a1Us) } : null;
  return { bounds, win, area };
}

/**
 * Whether a span placed from its `status` entry keeps its place when the summary arrives (same bounds).
 * @param {import('./scale.js').Window} bounds @param {unknown} durationUs
 */
export function samePlacement(bounds, durationUs) {
  return bounds.t1Us === Math.max(Number(durationUs) || 0, 1e-3) && bounds.t0Us === 0;
}
