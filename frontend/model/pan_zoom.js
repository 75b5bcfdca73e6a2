// @ts-check
/**
 * Pan and zoom of a time window by wheel, drag and keys, shared by the main lanes and the Compare panel's
 * stacked lanes: what each gesture makes of the window. Pure: the DOM part is `ui/pan_zoom_input.js`.
 */
import { panBy, zoomAround } from './scale.js';

/** Wheel delta (pixels) that zooms by e: trackpads send many small deltas, mice ~100 per notch. */
export const WHEEL_PX_PER_E = 500;
/** A press moving less than this (CSS pixels) is a click, not a drag. */
export const DRAG_SLOP_PX = 3;
/** W zooms the span by this factor (S by its inverse). */
export const KEY_ZOOM = 0.8;
/** A and D pan by this share of the span. */
export const KEY_PAN_FRAC = 0.15;

/** @typedef {import('./scale.js').Window} Window */

/**
 * @typedef {object} Wheel a wheel event's deltas
 * @property {number} deltaX
 * @property {number} deltaY
 * @property {number} deltaMode 0 pixels, 1 lines, 2 pages
 * @property {number} xCss the pointer, from the canvas's left edge
 */

/** Pixels per wheel delta unit. @param {number} deltaMode */
export function wheelPx(deltaMode) {
  return deltaMode === 1 ? 16 : deltaMode === 2 ? 400 : 1;
}

/**
 * The window after a wheel step: a mostly horizontal wheel pans, a vertical one zooms around the time
 * under the pointer (the window's middle when the pointer is left of the plot).
 * @param {Window} win @param {Window} bounds @param {import('./scale.js').TimeScale} scale the view's
 * @param {Wheel} wheel
 * @returns {Window}
 */
export function wheelWindow(win, bounds, scale, wheel) {
  const px = wheelPx(wheel.deltaMode);
  if (Math.abs(wheel.deltaX) > Math.abs(wheel.deltaY)) return panBy(win, wheel.deltaX * px * scale.usPerPx, bounds);
  const tUs = wheel.xCss >= scale.x0Css ? scale.xToT(wheel.xCss) : (win.t0Us + win.t1Us) / 2;
  return zoomAround(win, tUs, Math.exp((wheel.deltaY * px) / WHEEL_PX_PER_E), bounds);
}

/** Whether a press moved by (dxCss, dyCss) from where it started is a drag. @param {number} dxCss @param {number} dyCss */
export function pastSlop(dxCss, dyCss) {
  return Math.hypot(dxCss, dyCss) >= DRAG_SLOP_PX;
}

/**
 * The window of a drag `dxCss` from its start: the content follows the pointer.
 * @param {Window} startWin the window when the press began @param {number} usPerPx at the press
 * @param {number} dxCss @param {Window} bounds
 * @returns {Window}
 */
export function dragWindow(startWin, usPerPx, dxCss, bounds) {
  return panBy(startWin, -dxCss * usPerPx, bounds);
}

/**
 * The window after a key: W/S zoom around `centerUs`, A/D pan, 0 shows `home`; null for any other key
 * (Escape included: what it clears is the view's business).
 * @param {string} key KeyboardEvent.key, any case
 * @param {Window} win @param {Window} bounds @param {number} centerUs @param {Window} home
 * @returns {Window | null}
 */
export function keyWindow(key, win, bounds, centerUs, home) {
  const span = win.t1Us - win.t0Us;
  switch (key.toLowerCase()) {
    case 'w': return zoomAround(win, centerUs, KEY_ZOOM, bounds);
    case 's': return zoomAround(win, centerUs, 1 / KEY_ZOOM, bounds);
    case 'a': return panBy(win, -span * KEY_PAN_FRAC, bounds);
    case 'd': return panBy(win, span * KEY_PAN_FRAC, bounds);
    case '0': return home;
    default: return null;
  }
}
