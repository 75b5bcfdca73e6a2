import assert from 'node:assert/strict';
import test from 'node:test';

import { MIN_SPAN_US, TimeScale, clampWindow, logTicks125, niceTicks, panBy, windowAround, windowShowing, zoomAround } from '../model/scale.js';

const BOUNDS = { t0Us: 0, t1Us: 1000 };

test('tToX and xToT are inverse and map the window onto the plot', () => {
  const s = new TimeScale(100, 300, 10, 410);
  assert.equal(s.pxPerUs, 2);
  assert.equal(s.tToX(100), 10);
  assert.equal(s.tToX(300), 410);
  assert.equal(s.xToT(210), 200);
  for (const t of [100, 137.25, 299.5]) assert.ok(Math.abs(s.xToT(s.tToX(t)) - t) < 1e-9);
  assert.equal(s.usPerPx, 0.5);
});

test('an empty window gives a degenerate but finite scale', () => {
  const s = new TimeScale(5, 5, 0, 100);
  assert.equal(s.pxPerUs, 0);
  assert.equal(s.xToT(50), 5);
  assert.equal(s.usPerPx, Infinity);
});

test('zoomAround keeps the time under the cursor in place', () => {
  const win = { t0Us: 200, t1Us: 600 };
  const z = zoomAround(win, 300, 0.5, BOUNDS);
  assert.deepEqual(z, { t0Us: 250, t1Us: 450 });
  const frac = (t, w) => (t - w.t0Us) / (w.t1Us - w.t0Us);
  assert.equal(frac(300, win), frac(300, z));
});

test('zooming out stops at the trace and zooming in at MIN_SPAN_US', () => {
  assert.deepEqual(zoomAround({ t0Us: 200, t1Us: 600 }, 400, 10, BOUNDS), BOUNDS);
  const tiny = zoomAround({ t0Us: 10, t1Us: 10.02 }, 10.01, 0.001, BOUNDS);
  assert.ok(Math.abs(tiny.t1Us - tiny.t0Us - MIN_SPAN_US) < 1e-12);
});

test('panBy shifts the window and stops at either edge without shrinking it', () => {
  assert.deepEqual(panBy({ t0Us: 100, t1Us: 200 }, 50, BOUNDS), { t0Us: 150, t1Us: 250 });
  assert.deepEqual(panBy({ t0Us: 100, t1Us: 200 }, -500, BOUNDS), { t0Us: 0, t1Us: 100 });
  assert.deepEqual(panBy({ t0Us: 800, t1Us: 900 }, 500, BOUNDS), { t0Us: 900, t1Us: 1000 });
});

test('clampWindow repairs non-finite and inverted windows', () => {
  assert.deepEqual(clampWindow({ t0Us: NaN, t1Us: NaN }, BOUNDS), BOUNDS);
  const w = clampWindow({ t0Us: 500, t1Us: 400 }, BOUNDS);
  assert.equal(w.t0Us, 500);
  assert.ok(Math.abs(w.t1Us - w.t0Us - MIN_SPAN_US) < 1e-9);
});

test('windowAround pads an interval on both sides', () => {
  assert.deepEqual(windowAround(400, 500, 0.5, BOUNDS), { t0Us: 350, t1Us: 550 });
  assert.deepEqual(windowAround(0, 100, 0.5, BOUNDS), { t0Us: 0, t1Us: 200 });
});

test('niceTicks uses 1-2-5 steps aligned to multiples of the step', () => {
  const { stepUs, valuesUs } = niceTicks({ t0Us: 3, t1Us: 97 }, 5);
  assert.equal(stepUs, 20);
  assert.deepEqual(valuesUs, [20, 40, 60, 80]);
  assert.equal(niceTicks({ t0Us: 0, t1Us: 1 }, 10).stepUs, 0.1);
  assert.equal(niceTicks({ t0Us: 0, t1Us: 7000 }, 3).stepUs, 5000);
  assert.deepEqual(niceTicks({ t0Us: 5, t1Us: 5 }, 5).valuesUs, []);
});

test('logTicks125 labels a log axis at 1-2-5 values, thinned to fit', () => {
  assert.deepEqual(logTicks125(3.99, 31.7, 10), [5, 10, 20]);
  assert.deepEqual(logTicks125(0.5, 2000, 20), [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]);
  assert.deepEqual(logTicks125(0.5, 2000, 8), [0.5, 1, 5, 10, 50, 100, 500, 1000]);
  assert.deepEqual(logTicks125(0.5, 2000, 4), [1, 10, 100, 1000]);
  assert.deepEqual(logTicks125(1, 1e9, 4), [1, 1000, 1e6, 1e9]);
  assert.deepEqual(logTicks125(0, 10, 4), []);
  assert.deepEqual(logTicks125(10, 10, 4), []);
});

test('windowShowing zooms so an event is at least 40 px wide, centred, and never zooms out', () => {
  const bounds = { t0Us: 0, t1Us: 1e6 };
  const plot = 1000;
  const pxOf = (w, a, b) => (b - a) * plot / (w.t1Us - w.t0Us);
  // from the whole trace a 50 µs kernel is 0.05 px: the window narrows to 50 * 1000 / 40 = 1250 µs
  const w = windowShowing(bounds, bounds, 500000, 500050, plot, 40);
  assert.ok(Math.abs(pxOf(w, 500000, 500050) - 40) < 1e-6);
  assert.ok(Math.abs((w.t0Us + w.t1Us) / 2 - 500025) < 1e-6);
  // in view and wide enough: the window stays
  const zoomed = { t0Us: 499990, t1Us: 500100 };
  assert.deepEqual(windowShowing(zoomed, bounds, 500000, 500050, plot, 40), zoomed);
  // out of view while zoomed in: the same width, moved to the event
  const moved = windowShowing(zoomed, bounds, 700000, 700050, plot, 40);
  assert.ok(Math.abs((moved.t1Us - moved.t0Us) - 110) < 1e-6 && moved.t0Us <= 700000 && moved.t1Us >= 700050);
  // near the end of the trace: clamped inside the bounds, the event still in view and wide
  const end = windowShowing(bounds, bounds, 999990, 1e6, plot, 40);
  assert.ok(end.t1Us <= 1e6 && end.t0Us <= 999990 && pxOf(end, 999990, 1e6) >= 40 - 1e-6);
  // an instant (0 µs) gets the narrowest window the view allows
  const instant = windowShowing(bounds, bounds, 10, 10, plot, 40);
  assert.ok(Math.abs((instant.t1Us - instant.t0Us) - MIN_SPAN_US) < 1e-9);
});
