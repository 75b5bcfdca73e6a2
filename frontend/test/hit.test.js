import assert from 'node:assert/strict';
import test from 'node:test';

import { bisectLeft, bisectRight, blockAtY, hitInterval, visibleRange } from '../model/hit.js';

test('bisectLeft and bisectRight bracket equal values', () => {
  const a = [1, 2, 2, 2, 5];
  assert.equal(bisectLeft(a, 2), 1);
  assert.equal(bisectRight(a, 2), 4);
  assert.equal(bisectLeft(a, 0), 0);
  assert.equal(bisectRight(a, 9), 5);
  assert.equal(bisectLeft(new Float64Array([]), 3), 0);
});

//  t:    0    10   20   30   40   50
//  row:  [a---)    [b-)      [c------)
const START = new Float64Array([0, 20, 40]);
const DUR = new Float64Array([10, 5, 15]);

test('visibleRange returns only intervals that may overlap the window', () => {
  // A superset: every overlapping interval, plus at most those starting within maxDur before t0.
  for (const [t0, t1] of [[12, 18], [22, 41], [-100, -50], [5, 21], [44, 60], [56, 90]]) {
    const [i0, i1] = visibleRange(START, 15, t0, t1);
    for (let i = 0; i < START.length; i++) {
      const overlaps = START[i] <= t1 && START[i] + DUR[i] >= t0;
      if (overlaps) assert.ok(i >= i0 && i < i1, `${i} in [${t0}, ${t1}]`);
      if (i >= i0 && i < i1) assert.ok(START[i] >= t0 - 15 && START[i] <= t1);
    }
  }
  assert.deepEqual(visibleRange(START, 15, 56, 90), [3, 3]);
});

test('hitInterval finds the containing interval, or the nearest one within the tolerance', () => {
  assert.equal(hitInterval(START, DUR, 15, 3, 0), 0);
  assert.equal(hitInterval(START, DUR, 15, 45, 0), 2);
  assert.equal(hitInterval(START, DUR, 15, 15, 0), -1);
  assert.equal(hitInterval(START, DUR, 15, 18.5, 2), 1);
  assert.equal(hitInterval(START, DUR, 15, 15, 4), -1);
  assert.equal(hitInterval(START, DUR, 15, 14, 4), 0);
});

test('hitInterval prefers the shortest of overlapping intervals (drawn last, on top)', () => {
  const s = new Float64Array([0, 4]);
  const d = new Float64Array([100, 2]);
  assert.equal(hitInterval(s, d, 100, 5, 0), 1);
  assert.equal(hitInterval(s, d, 100, 50, 0), 0);
});

test('blockAtY finds stacked blocks and misses outside them', () => {
  const blocks = [{ yCss: 0, hCss: 10 }, { yCss: 10, hCss: 30 }, { yCss: 50, hCss: 5 }];
  assert.equal(blockAtY(blocks, 0), 0);
  assert.equal(blockAtY(blocks, 9.9), 0);
  assert.equal(blockAtY(blocks, 10), 1);
  assert.equal(blockAtY(blocks, 45), -1);
  assert.equal(blockAtY(blocks, 52), 2);
  assert.equal(blockAtY(blocks, 60), -1);
  assert.equal(blockAtY(blocks, -1), -1);
});
