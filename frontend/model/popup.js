// @ts-check
/**
 * Where a hover box goes: beside the pointer, flipped to its other side where it would leave the
 * window, and kept inside it. Pure; every figure is in the window's CSS pixels.
 *
 *   pointer +--------+        below-right by default; past the right edge it opens to the left of
 *           |  box   |        the pointer, past the bottom above it; a box larger than the window
 *           +--------+        is pinned to its top-left margin (its top stays readable)
 */

/** Gap between the pointer and the box: the box never covers what it describes. */
export const POPUP_OFFSET_X = 14;
export const POPUP_OFFSET_Y = 16;
/** Distance kept from the window's edges. */
export const POPUP_MARGIN = 4;

/**
 * @param {number} xCss pointer, in the window
 * @param {number} yCss
 * @param {number} wCss the box's size
 * @param {number} hCss
 * @param {number} viewWCss the window's size
 * @param {number} viewHCss
 * @returns {{left: number, top: number, flippedX: boolean, flippedY: boolean}} the box's top-left corner
 */
export function placePopup(xCss, yCss, wCss, hCss, viewWCss, viewHCss) {
  const axis = (/** @type {number} */ at, /** @type {number} */ size, /** @type {number} */ room, /** @type {number} */ offset) => {
    const after = at + offset;
    if (after + size <= room - POPUP_MARGIN) return { pos: after, flipped: false };
    const before = at - offset - size;
    if (before >= POPUP_MARGIN) return { pos: before, flipped: true };
    // fits on neither side: as far from the far edge as the window allows, never past its start
    return { pos: Math.max(POPUP_MARGIN, Math.min(after, room - POPUP_MARGIN - size)), flipped: false };
  };
  const x = axis(xCss, wCss, viewWCss, POPUP_OFFSET_X);
  const y = axis(yCss, hCss, viewHCss, POPUP_OFFSET_Y);
  return { left: x.pos, top: y.pos, flippedX: x.flipped, flippedY: y.flipped };
}
