import assert from 'node:assert/strict';
import test from 'node:test';

import { ELLIPSIS, TextWidthCache, fetchWindow, fitLabel, forEachDrawRect, payloadServes } from '../model/lod.js';
import { TimeScale } from '../model/scale.js';

const collect = (start, dur, scale, minPx) => {
  const out = [];
  forEachDrawRect(start, dur, 0, start.length, scale, minPx, (x0, x1, i, n) => out.push([x0, x1, i, n]));
  return out;
};

test('wide events are drawn as themselves', () => {
  const s = new TimeScale(0, 100, 0, 100);
  assert.deepEqual(collect([0, 50], [10, 20], s, 2), [[0, 10, 0, 1], [50, 70, 1, 1]]);
});

test('sub-pixel neighbours merge into one coverage block at least a pixel wide', () => {
  const s = new TimeScale(0, 100, 0, 100);
  //  x:  10 10.3 10.6 11.2 | 40
  const out = collect([10, 10.3, 10.6, 11.2, 40], [0.1, 0.1, 0.1, 0.1, 0.2], s, 1);
  assert.equal(out.length, 2);
  assert.deepEqual(out[0].slice(2), [0, 4]);
  assert.equal(out[0][0], 10);
  assert.ok(Math.abs(out[0][1] - 11.3) < 1e-9);
  assert.deepEqual(out[1], [40, 41, 4, 1]);
});

test('a wide event between narrow ones ends the run', () => {
  const s = new TimeScale(0, 100, 0, 100);
  const out = collect([1, 1.2, 2, 30], [0.1, 0.1, 20, 0.1], s, 1);
  assert.deepEqual(out.map((r) => [r[2], r[3]]), [[0, 2], [2, 1], [3, 1]]);
});

test('a million sub-pixel events yield at most about one rect per pixel', () => {
  const n = 1_000_000;
  const start = new Float64Array(n).map((_, i) => i);
  const dur = new Float64Array(n).fill(0.5);
  const s = new TimeScale(0, n, 0, 1000);
  let rects = 0;
  forEachDrawRect(start, dur, 0, n, s, 1, () => rects++);
  assert.ok(rects <= 1000, `${rects} rects`);
});

test('fitLabel keeps whole labels, truncates with an ellipsis, or gives up', () => {
  const widths = new TextWidthCache((t) => t.length * 6);
  assert.equal(fitLabel('aten::conv2d', 100, widths), 'aten::conv2d');
  assert.equal(fitLabel('aten::conv2d', 40, widths), `aten:${ELLIPSIS}`);
  assert.equal(fitLabel('aten::conv2d', 8, widths), '');
  assert.equal(fitLabel('', 100, widths), '');
});

test('TextWidthCache measures each string once', () => {
  let calls = 0;
  const widths = new TextWidthCache((t) => {
    calls++;
    return t.length;
  });
  widths.width('abc');
  widths.width('abc');
  assert.equal(calls, 1);
});

test('fetchWindow adds margins, clips them to the trace and scales the width', () => {
  const bounds = { t0Us: 0, t1Us: 10000 };
  assert.deepEqual(fetchWindow({ t0Us: 1000, t1Us: 2000 }, 800, 1, bounds), { startUs: 0, endUs: 3000, widthPx: 2400 });
  assert.deepEqual(fetchWindow({ t0Us: 0, t1Us: 10000 }, 800, 1, bounds), { startUs: 0, endUs: 10000, widthPx: 800 });
  assert.equal(fetchWindow({ t0Us: 0, t1Us: 1 }, 8000, 1, bounds).widthPx, 10000);
});

test('payloadServes wants coverage and a resolution close to the view', () => {
  const fetched = { startUs: 0, endUs: 3000, usPerPx: 1.25 };
  assert.ok(payloadServes(fetched, { t0Us: 1000, t1Us: 2000 }, 1.25, 1.5));
  assert.ok(!payloadServes(fetched, { t0Us: 2500, t1Us: 3500 }, 1.25, 1.5));
  assert.ok(!payloadServes(fetched, { t0Us: 1000, t1Us: 1100 }, 0.125, 1.5));
  assert.ok(!payloadServes(fetched, { t0Us: 0, t1Us: 3000 }, 10, 1.5));
});
