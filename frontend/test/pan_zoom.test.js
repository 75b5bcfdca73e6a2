import assert from 'node:assert/strict';
import test from 'node:test';

import {
  DRAG_SLOP_PX, KEY_PAN_FRAC, KEY_ZOOM, WHEEL_PX_PER_E, dragWindow, keyWindow, pastSlop, wheelPx, wheelWindow,
} from '../model/pan_zoom.js';
import { TimeScale } from '../model/scale.js';

const BOUNDS = { t0Us: 0, t1Us: 10000 };
const WIN = { t0Us: 1000, t1Us: 2000 };
/** 1000 µs over 500 px from x = 100: 2 µs per px. */
const SCALE = new TimeScale(WIN.t0Us, WIN.t1Us, 100, 600);

const close = (a, b) => assert.ok(Math.abs(a - b) < 1e-6, `${a} vs ${b}`);

test('the constants both views share', () => {
  assert.deepEqual([WHEEL_PX_PER_E, DRAG_SLOP_PX, KEY_ZOOM, KEY_PAN_FRAC], [500, 3, 0.8, 0.15]);
  assert.deepEqual([wheelPx(0), wheelPx(1), wheelPx(2)], [1, 16, 400]);
});

test('a vertical wheel zooms around the time under the pointer, by e per WHEEL_PX_PER_E', () => {
  const win = wheelWindow(WIN, BOUNDS, SCALE, { deltaX: 0, deltaY: -WHEEL_PX_PER_E, deltaMode: 0, xCss: 350 });
  close(win.t1Us - win.t0Us, 1000 / Math.E);
  close((1500 - win.t0Us) / (win.t1Us - win.t0Us), 0.5);
  const out = wheelWindow(WIN, BOUNDS, SCALE, { deltaX: 0, deltaY: 3, deltaMode: 1, xCss: 100 });
  close(out.t1Us - out.t0Us, 1000 * Math.exp(48 / WHEEL_PX_PER_E));
  close(out.t0Us, 1000); // the plot's left edge stays
});

test('a wheel left of the plot zooms around the middle; a mostly horizontal one pans', () => {
  const win = wheelWindow(WIN, BOUNDS, SCALE, { deltaX: 0, deltaY: 100, deltaMode: 0, xCss: 40 });
  close((win.t0Us + win.t1Us) / 2, 1500);
  assert.deepEqual(wheelWindow(WIN, BOUNDS, SCALE, { deltaX: 50, deltaY: 10, deltaMode: 0, xCss: 350 }), { t0Us: 1100, t1Us: 2100 });
  assert.deepEqual(wheelWindow(WIN, BOUNDS, SCALE, { deltaX: -1, deltaY: 0, deltaMode: 2, xCss: 350 }), { t0Us: 200, t1Us: 1200 });
});

test('a press is a drag past DRAG_SLOP_PX in either axis; the content follows the pointer, within bounds', () => {
  assert.equal(pastSlop(2, 0), false);
  assert.equal(pastSlop(0, -2.9), false);
  assert.equal(pastSlop(3, 0), true);
  assert.equal(pastSlop(2.2, 2.2), true);
  assert.deepEqual(dragWindow(WIN, 2, 100, BOUNDS), { t0Us: 800, t1Us: 1800 });
  assert.deepEqual(dragWindow(WIN, 2, 1000, BOUNDS), { t0Us: 0, t1Us: 1000 }, 'stops at the trace start');
});

test('keys: W/S zoom around the given time, A/D pan a share of the span, 0 goes home, others are not ours', () => {
  const inWin = keyWindow('w', WIN, BOUNDS, 1000, BOUNDS);
  assert.deepEqual(inWin, { t0Us: 1000, t1Us: 1000 + 1000 * KEY_ZOOM });
  const outWin = keyWindow('S', WIN, BOUNDS, 1500, BOUNDS);
  assert.ok(outWin);
  close(outWin.t0Us, 1500 - 500 / KEY_ZOOM);
  close(outWin.t1Us, 1500 + 500 / KEY_ZOOM);
  assert.deepEqual(keyWindow('a', WIN, BOUNDS, 0, BOUNDS), { t0Us: 850, t1Us: 1850 });
  assert.deepEqual(keyWindow('D', WIN, BOUNDS, 0, BOUNDS), { t0Us: 1150, t1Us: 2150 });
  const home = { t0Us: -30, t1Us: 1030 };
  assert.equal(keyWindow('0', WIN, BOUNDS, 0, home), home, 'home as the view gives it');
  for (const key of ['Escape', 'q', 'ArrowLeft', ' ']) assert.equal(keyWindow(key, WIN, BOUNDS, 0, home), null, key);
});
