import assert from 'node:assert/strict';
import test from 'node:test';

import { GROUP_H, LANE_PAD, ROW_H, clampScroll, defaultPins, depthAtY, groupAtY, layoutLanes } from '../model/layout.js';

const LANES = [
  { id: 7, kind: 'gpu', label: 'GPU 0 stream 7', maxDepth: 0 },
  { id: 1, kind: 'cpu', label: 'thread 1', maxDepth: 3 },
  { id: 2, kind: 'cpu', label: 'thread 2', maxDepth: 0 },
];

test('CPU lanes stack above GPU lanes, each as tall as its depth', () => {
  const { blocks, heightCss } = layoutLanes(LANES, new Set());
  assert.deepEqual(blocks.map((b) => b.laneId), [1, 2, 7]);
  assert.equal(blocks[0].hCss, 4 * ROW_H + LANE_PAD);
  assert.equal(blocks[1].yCss, blocks[0].hCss);
  assert.equal(heightCss, 6 * ROW_H + 3 * LANE_PAD);
  assert.ok(blocks[0].collapsible && !blocks[1].collapsible);
});

test('lanes without complete events take no room', () => {
  const { blocks } = layoutLanes([...LANES, { id: 9, kind: 'marker', label: 'Traces', maxDepth: -1 }], new Set());
  assert.deepEqual(blocks.map((b) => b.laneId), [1, 2, 7]);
});

test('a collapsed lane shows one row; a lane without depth cannot collapse', () => {
  const { blocks } = layoutLanes(LANES, new Set([1, 2]));
  assert.equal(blocks[0].depths, 1);
  assert.ok(blocks[0].collapsed);
  assert.ok(!blocks[1].collapsed);
});

test('depthAtY maps y to the depth row and the padding to -1', () => {
  const { blocks } = layoutLanes(LANES, new Set());
  const b = blocks[0];
  assert.equal(depthAtY(b, b.yCss + LANE_PAD / 2), 0);
  assert.equal(depthAtY(b, b.yCss + LANE_PAD / 2 + ROW_H * 2.5), 2);
  assert.equal(depthAtY(b, b.yCss + 1), -1);
  assert.equal(depthAtY(b, b.yCss + b.hCss - 1), -1);
});

test('clampScroll keeps the content on screen', () => {
  assert.equal(clampScroll(-5, 500, 200), 0);
  assert.equal(clampScroll(1000, 500, 200), 300);
  assert.equal(clampScroll(50, 100, 200), 0);
});

import { hitTestLanes, intervalAt } from '../model/lanes_hit.js';
import { prepareLanes } from '../model/lanes.js';
import { AXIS_H, GUTTER_W, HEADER_H, STEP_H } from '../model/layout.js';
import { TimeScale } from '../model/scale.js';

//  t(µs):   0        40   60        100
//  steps:   [ProfilerStep#1 ...)[#2 ...)
//  cpu d0:  [op a .............)
//  cpu d1:       [launch)
//  gpu:                [kernel)   gap 60..90 (host)
const DATA = prepareLanes({
  start_us: 0, end_us: 100, us_per_px: 0.1, names: ['op a', 'launch', 'kernel'],
  lanes: [
    { id: 0, kind: 'cpu', label: 't', max_depth: 1,
      events: { row: [1, 2], start_us: [0, 10], dur_us: [50, 10], depth: [0, 1], name: [0, 1], kind: ['cpu_op', 'runtime'], count: [1, 1] } },
    { id: 1, kind: 'gpu', label: 'g', device: 0, stream: 7, max_depth: 0,
      events: { row: [3], start_us: [40], dur_us: [20], depth: [0], name: [2], kind: ['kernel'], count: [1] } },
  ],
  gaps: { device: [0], start_us: [60], end_us: [90], cause: ['host'] },
  steps: { name: ['ProfilerStep#1', 'ProfilerStep#2'], start_us: [0, 50], end_us: [50, 100], stalled: [true, false],
    dataloader: { start_us: [0], end_us: [5] } },
});
const SCALE = new TimeScale(0, 100, GUTTER_W, GUTTER_W + 1000);
const X = (t) => SCALE.tToX(t);

test('hitTestLanes finds steps, DataLoader spans, events, gaps and labels', () => {
  const { blocks } = layoutLanes(DATA.lanes, new Set());
  const yRow = (b, d) => HEADER_H + blocks[b].yCss + LANE_PAD / 2 + d * ROW_H + ROW_H / 2;
  assert.equal(hitTestLanes(DATA, { blocks }, SCALE, 0, X(10), AXIS_H / 2).area, 'axis');
  assert.deepEqual(hitTestLanes(DATA, { blocks }, SCALE, 0, X(70), AXIS_H + STEP_H / 2).step, 1);
  assert.equal(hitTestLanes(DATA, { blocks }, SCALE, 0, X(2), AXIS_H + STEP_H + 3).step, 0);
  assert.equal(hitTestLanes(DATA, { blocks }, SCALE, 0, X(15), yRow(0, 1)).event, 1);
  assert.equal(hitTestLanes(DATA, { blocks }, SCALE, 0, X(30), yRow(0, 0)).event, 0);
  assert.equal(hitTestLanes(DATA, { blocks }, SCALE, 0, X(45), yRow(1, 0)).event, 0);
  const gap = hitTestLanes(DATA, { blocks }, SCALE, 0, X(75), yRow(1, 0));
  assert.deepEqual([gap.event, gap.gap], [-1, 0]);
  assert.equal(hitTestLanes(DATA, { blocks }, SCALE, 0, 5, yRow(1, 0)).area, 'gutter');
  const scrolled = hitTestLanes(DATA, { blocks }, SCALE, blocks[1].yCss, X(45), yRow(0, 0));
  assert.equal(scrolled.block, 1, 'scrolling moves the gpu lane up');
});

test('intervalAt bisects sorted intervals and misses the holes', () => {
  assert.equal(intervalAt([0, 10, 30], [5, 20, 40], 12), 1);
  assert.equal(intervalAt([0, 10, 30], [5, 20, 40], 25), -1);
  assert.equal(intervalAt([0, 10, 30], [5, 20, 40], -1), -1);
  assert.equal(intervalAt([], [], 1), -1);
});

test('with groups: a header per group, pinned lanes on top in pin order, closed groups show their header only', () => {
  const lanes = [...LANES, { id: 3, kind: 'cpu', label: 'thread 3', maxDepth: 1 }];
  const open = layoutLanes(lanes, new Set(), { groups: true });
  assert.deepEqual(open.groups.map((g) => [g.key, g.lanes, g.yCss]), [['cpu', 3, 0], ['gpu', 1, GROUP_H + 4 * ROW_H + LANE_PAD + ROW_H + LANE_PAD + 2 * ROW_H + LANE_PAD]]);
  assert.equal(open.blocks[0].yCss, GROUP_H);
  const pinned = layoutLanes(lanes, new Set(), { groups: true, pinned: [7, 3] });
  assert.deepEqual(pinned.blocks.map((b) => b.laneId), [7, 3, 1, 2]);
  assert.deepEqual(pinned.groups.map((g) => g.key), ['pinned', 'cpu']);
  const closed = layoutLanes(lanes, new Set(), { groups: true, closedGroups: new Set(['cpu']) });
  assert.deepEqual(closed.blocks.map((b) => b.laneId), [7]);
  assert.equal(closed.blocks[0].yCss, 2 * GROUP_H);
  assert.equal(closed.heightCss, 2 * GROUP_H + ROW_H + LANE_PAD);
  assert.equal(groupAtY(closed.groups, GROUP_H + 2), 1);
  assert.equal(groupAtY(closed.groups, 2 * GROUP_H + 2), -1);
});

test('GPU lanes pinned by default only when the first would not show in full in the room on screen', () => {
  // grouped: "CPU threads" header, thread 1 (4 rows), thread 2 (1 row), "GPU" header, stream 7 (1 row)
  const gpuBottom = GROUP_H + (4 * ROW_H + LANE_PAD) + (ROW_H + LANE_PAD) + GROUP_H + (ROW_H + LANE_PAD);
  assert.deepEqual(defaultPins(LANES, new Set(), gpuBottom, 8), []);
  assert.deepEqual(defaultPins(LANES, new Set(), gpuBottom - 1, 8), [7]);
  // collapsing thread 1 to one row lifts the GPU lane by 3 rows
  assert.deepEqual(defaultPins(LANES, new Set([1]), gpuBottom - 3 * ROW_H, 8), []);
  // a short window (room below zero) pins too; a trace without GPU lanes pins nothing
  assert.deepEqual(defaultPins(LANES, new Set(), -50, 8), [7]);
  assert.deepEqual(defaultPins(LANES.filter((l) => l.kind !== 'gpu'), new Set(), 0, 8), []);
  const many = [...LANES, ...[8, 9, 10].map((id) => ({ id, kind: 'gpu', label: `s${id}`, maxDepth: 0 }))];
  assert.deepEqual(defaultPins(many, new Set(), 10, 2), [7, 8]);
});
