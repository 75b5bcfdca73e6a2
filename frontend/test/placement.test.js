import assert from 'node:assert/strict';
import test from 'node:test';

import { samePlacement, spanPlacement } from '../model/placement.js';

test('a span opens on its whole extent, or on the link window and area clamped to it', () => {
  assert.deepEqual(spanPlacement({}, 2000), { bounds: { t0Us: 0, t1Us: 2000 }, win: { t0Us: 0, t1Us: 2000 }, area: null });
  const linked = spanPlacement({ t0Us: 100, t1Us: 300, a0Us: 150, a1Us: 5000 }, 2000);
  assert.deepEqual(linked.win, { t0Us: 100, t1Us: 300 });
  assert.deepEqual(linked.area, { t0Us: 150, t1Us: 2000 });
  assert.equal(spanPlacement({ a0Us: 3000, a1Us: 4000 }, 2000).area, null); // the area lies beyond the trace
  assert.deepEqual(spanPlacement({}, undefined).bounds, { t0Us: 0, t1Us: 1e-3 });
});

test('the summary keeps a placement from the status entry when the extents agree', () => {
  const { bounds } = spanPlacement({}, 2000);
  assert.ok(samePlacement(bounds, 2000));
  assert.ok(!samePlacement(bounds, 2500));
});
