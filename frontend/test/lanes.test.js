import assert from 'node:assert/strict';
import test from 'node:test';

import { eventName, prepareLanes, splitByDepth } from '../model/lanes.js';

const BODY = {
  start_us: 0, end_us: 100, width_px: 100, us_per_px: 1, names: ['aten::conv2d', 'cudaLaunchKernel', 'sgemm'],
  lanes: [
    { id: 0, kind: 'cpu', label: 'thread 1', max_depth: 1,
      events: { row: [5, 6, 7], start_us: [10, 0, 12], dur_us: [5, 50, 2], depth: [1, 0, 1], name: [1, 0, -1],
        kind: ['runtime', 'cpu_op', 'runtime'], count: [1, 1, 3] } },
    { id: 3, kind: 'gpu', label: 'GPU 0 stream 7', device: 0, stream: 7, max_depth: 0, events: {} },
  ],
  gaps: { device: [0], start_us: [20], end_us: [30], cause: ['host'] },
  steps: { name: ['ProfilerStep#2'], start_us: [0], end_us: [60], stalled: [true], dataloader: { start_us: [1], end_us: [9] } },
  flows: { launch_row: [5], gpu_row: [9], launch_us: [10], gpu_us: [16], launch_lane: [0], gpu_lane: [3] },
  merged: true,
};

test('splitByDepth sorts each depth by start and keeps the longest duration', () => {
  const rows = splitByDepth(new Float64Array([10, 0, 12, 5]), new Float64Array([5, 50, 2, 1]), new Int32Array([1, 0, 1, 1]));
  assert.equal(rows.length, 2);
  assert.deepEqual([...rows[0].idx], [1]);
  assert.deepEqual([...rows[1].idx], [3, 0, 2]);
  assert.deepEqual([...rows[1].startUs], [5, 10, 12]);
  assert.equal(rows[1].maxDurUs, 5);
});

test('prepareLanes converts the columnar payload into typed rows', () => {
  const data = prepareLanes(BODY);
  assert.equal(data.lanes.length, 2);
  const [cpu, gpu] = data.lanes;
  assert.equal(cpu.rows.length, 2);
  assert.ok(cpu.ev.startUs instanceof Float64Array);
  assert.equal(gpu.rows.length, 0);
  assert.equal(gpu.device, 0);
  assert.deepEqual(data.flows.gpuLane, [3]);
  assert.deepEqual(data.steps.dataloader.endUs, [9]);
  assert.equal(eventName(data, cpu, 1), 'aten::conv2d');
  assert.equal(eventName(data, cpu, 2), '3 events');
});

test('prepareLanes tolerates missing and ragged columns', () => {
  const data = prepareLanes({ lanes: [{ id: 1, events: { start_us: [1, 2], dur_us: [1, -4], depth: [0] } }] });
  const lane = data.lanes[0];
  assert.equal(lane.kind, 'cpu');
  assert.deepEqual([...lane.ev.depth], [0, 0]);
  assert.deepEqual([...lane.ev.durUs], [1, 0]);
  assert.deepEqual([...lane.ev.count], [1, 1]);
  assert.deepEqual(data.gaps.startUs, []);
  assert.deepEqual(data.steps.name, []);
});

test('prepareLanes carries how many lanes the answer leaves out', () => {
  const data = prepareLanes({ start_us: 0, end_us: 1, us_per_px: 1, names: [], lanes: [], lanes_hidden: 3, lanes_total: 5 });
  assert.equal(data.lanesHidden, 3);
  assert.equal(data.lanesTotal, 5);
  assert.equal(prepareLanes({ lanes: [] }).lanesHidden, 0);
});

test('an answer given before the analyses ended says so; older servers count as analysed', () => {
  assert.equal(prepareLanes({ ...BODY, analysed: false }).analysed, false);
  assert.equal(prepareLanes({ ...BODY, analysed: true }).analysed, true);
  assert.equal(prepareLanes(BODY).analysed, true);
});
