import assert from 'node:assert/strict';
import test from 'node:test';

import {
  COUNTER_H, COUNTER_HEADER_H, bucketAt, counterReading, counterTop, countersHeight, formatCounter, niceCeil, prepareCounters,
} from '../model/counters.js';
import { prepareLanes } from '../model/lanes.js';
import { hitTestLanes } from '../model/lanes_hit.js';
import { GUTTER_W, HEADER_H, layoutLanes } from '../model/layout.js';
import { TimeScale } from '../model/scale.js';

// Two lanes, four buckets of 25 µs from 100 µs.
const RAW = {
  start_us: 100, bucket_us: 25, buckets: 4, lanes_total: 3, lanes_hidden: 1,
  lanes: [
    { kind: 'utilization', label: 'GPU 0 utilization', device: 0, stream: -1, unit: 'fraction',
      mean: [0, 0.5, 1, 0.25], max: [0, 1, 1, 1] },
    { kind: 'queue_length', label: 'GPU 0 stream 7 queue', device: 0, stream: 7, unit: 'operations',
      mean: [1.5, 'x', null, -3], max: [3, 2, 0, 1e400] },
  ],
};

test('niceCeil rounds up to 1, 2 or 5 times a power of ten', () => {
  assert.deepEqual([0.3, 1, 1.5, 2, 3, 7, 10, 11, 569, 0.07].map(niceCeil), [0.5, 1, 2, 2, 5, 10, 10, 20, 1000, 0.1]);
  assert.deepEqual([0, -1, NaN, Infinity].map(niceCeil), [1, 1, 1, 1]);
});

test('a share reads against 1, a count against the nice ceiling of its largest max', () => {
  assert.equal(counterTop('fraction', Float64Array.from([0.2])), 1);
  assert.equal(counterTop('operations', Float64Array.from([3, 2])), 5);
  assert.equal(counterTop('GB/s', Float64Array.from([0, 0])), 1);
});

test('prepareCounters keeps finite non-negative values and reads anything else as 0', () => {
  const c = prepareCounters(RAW);
  assert.equal(c.lanes.length, 2);
  assert.equal(c.hidden, 1);
  assert.deepEqual([...c.lanes[1].mean], [1.5, 0, 0, 0]);
  assert.deepEqual([...c.lanes[1].max], [3, 2, 0, 0]);
  assert.equal(c.lanes[1].top, 5);
  assert.equal(c.lanes[0].top, 1);
});

test('an answer without counters (an older server) or with a broken bucket width draws none', () => {
  assert.deepEqual(prepareCounters(undefined).lanes, []);
  assert.deepEqual(prepareCounters({ ...RAW, bucket_us: 0 }).lanes, []);
  assert.equal(countersHeight(prepareCounters(null)), 0);
  assert.equal(countersHeight(prepareCounters(RAW)), COUNTER_HEADER_H + 2 * COUNTER_H);
});

test('bucketAt finds the bucket of a time, -1 outside the fetched window', () => {
  const c = prepareCounters(RAW);
  assert.deepEqual([99, 100, 124.9, 125, 199.9, 200].map((t) => bucketAt(c, t)), [-1, 0, 0, 1, 3, -1]);
});

test('counterReading names the lane under y and the bucket under t', () => {
  const c = prepareCounters(RAW);
  const r = counterReading(c, COUNTER_HEADER_H + COUNTER_H + 2, 130);
  assert.equal(r?.title, 'GPU 0 stream 7 queue');
  assert.deepEqual(r?.rows.slice(0, 2), [['mean', '0'], ['max', '2']]);
  assert.deepEqual(counterReading(c, COUNTER_HEADER_H + 1, 160)?.rows.slice(0, 2), [['mean', '100%'], ['max', '100%']]);
  assert.equal(counterReading(c, COUNTER_HEADER_H - 1, 130), null, 'the header row');
  assert.equal(counterReading(c, COUNTER_HEADER_H + 2 * COUNTER_H, 130), null, 'below the last lane');
  assert.equal(counterReading(c, COUNTER_HEADER_H + 1, 50), null, 'before the window');
});

test('formatCounter shows shares in percent and bandwidth with its unit', () => {
  assert.equal(formatCounter(0.5, 'fraction'), '50.0%');
  assert.equal(formatCounter(0.9999, 'fraction'), '100%');
  assert.equal(formatCounter(569, 'operations'), '569');
  assert.equal(formatCounter(20, 'operations'), '20');
  assert.equal(formatCounter(10.72208, 'GB/s'), '10.7 GB/s');
  assert.equal(formatCounter(0.000213, 'GB/s'), '0.000213 GB/s');
});

test('the lanes answer carries its counters, and a hover under the last lane reads them', () => {
  const data = prepareLanes({ start_us: 100, end_us: 200, width_px: 16, us_per_px: 6.25, names: [],
    lanes: [{ id: 3, kind: 'gpu', label: 'GPU 0 stream 7', device: 0, stream: 7, max_depth: 0, events: {} }], counters: RAW });
  assert.equal(data.counters.lanes.length, 2);
  const layout = layoutLanes(data.lanes, new Set());
  const scale = new TimeScale(100, 200, GUTTER_W, GUTTER_W + 100);
  const y = HEADER_H + layout.heightCss + COUNTER_HEADER_H + 5;
  const hit = hitTestLanes(data, layout, scale, 0, scale.tToX(180), y);
  assert.equal(hit.area, 'counter');
  assert.equal(counterReading(data.counters, hit.counterY ?? -1, hit.tUs)?.title, 'GPU 0 utilization');
  assert.equal(hitTestLanes(data, layout, scale, 0, scale.tToX(180), HEADER_H + 2).area, 'lane');
});

test('the counter lanes sit right under the last GPU lane, pinned or not, and push what follows down', () => {
  const lanes = [{ id: 0, kind: 'cpu', label: 't', maxDepth: 2 }, { id: 1, kind: 'gpu', label: 'g', maxDepth: 0 },
    { id: 2, kind: 'gpu', label: 'h', maxDepth: 0 }];
  const plain = layoutLanes(lanes, new Set(), { groups: true });
  const room = layoutLanes(lanes, new Set(), { groups: true, countersHCss: 50 });
  assert.equal(room.countersYCss, plain.heightCss, 'GPU last: the counters close the list');
  assert.equal(room.heightCss, plain.heightCss + 50);
  const pinned = layoutLanes(lanes, new Set(), { groups: true, pinned: [1, 2], countersHCss: 50 });
  const gpu2 = pinned.blocks.find((b) => b.laneId === 2);
  const cpu = pinned.blocks.find((b) => b.laneId === 0);
  assert.equal(pinned.countersYCss, (gpu2?.yCss ?? 0) + (gpu2?.hCss ?? 0));
  assert.ok((cpu?.yCss ?? 0) >= pinned.countersYCss + 50, 'the CPU threads follow the counters');
  assert.ok(pinned.groups[1].yCss >= pinned.countersYCss + 50, 'and so does their group header');
  assert.equal(layoutLanes([lanes[0]], new Set(), { countersHCss: 50 }).countersYCss, layoutLanes([lanes[0]], new Set()).heightCss);
});
