import assert from 'node:assert/strict';
import test from 'node:test';

import { POPUP_MARGIN, POPUP_OFFSET_X, POPUP_OFFSET_Y, placePopup } from '../model/popup.js';

/** Whether a placed box lies inside the window, margins kept. */
const inside = (p, w, h, vw, vh) => p.left >= POPUP_MARGIN && p.top >= POPUP_MARGIN && p.left + w <= vw - POPUP_MARGIN && p.top + h <= vh - POPUP_MARGIN;

test('below and right of the pointer where it fits', () => {
  assert.deepEqual(placePopup(100, 100, 200, 80, 1280, 736), { left: 100 + POPUP_OFFSET_X, top: 100 + POPUP_OFFSET_Y, flippedX: false, flippedY: false });
});

test('near the bottom (the GPU lane at the fold) it opens above the pointer', () => {
  const p = placePopup(300, 700, 200, 120, 1280, 736);
  assert.equal(p.top, 700 - POPUP_OFFSET_Y - 120);
  assert.ok(p.flippedY && !p.flippedX);
});

test('near the right edge it opens left of the pointer', () => {
  const p = placePopup(1200, 100, 300, 80, 1280, 736);
  assert.equal(p.left, 1200 - POPUP_OFFSET_X - 300);
  assert.ok(p.flippedX);
});

test('a box taller than either side is clamped inside the window, its top first', () => {
  const p = placePopup(50, 300, 200, 600, 1280, 736);
  assert.ok(inside(p, 200, 600, 1280, 736));
  const huge = placePopup(50, 300, 200, 900, 1280, 736);
  assert.equal(huge.top, POPUP_MARGIN);
});

test('every pointer position on a grid of a 1280x800 frame keeps a 460x200 box inside', () => {
  for (let x = 0; x <= 1280; x += 40) {
    for (let y = 0; y <= 736; y += 23) assert.ok(inside(placePopup(x, y, 460, 200, 1280, 736), 460, 200, 1280, 736), `${x},${y}`);
  }
});
