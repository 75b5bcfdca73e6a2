import assert from 'node:assert/strict';
import test from 'node:test';

import {
  MAX_CPU_LANES, MAX_DEPTH_ROWS, MAX_GPU_LANES, PAD_FRAC, SIDE_H, SIDE_STEPS_H, anchorAt, busiestThreads, clampStep, defaultWindow, foldToFit, hitStack, laneSides,
  ownWindow, pickLanes, relativeBounds, sideRequest, sideServes, spanSteps, stackLayout,
} from '../model/compare_lanes.js';
import { prepareLanes } from '../model/lanes.js';
import { LANE_PAD, ROW_H } from '../model/layout.js';
import { TimeScale } from '../model/scale.js';

const span = (id, n) => ({ id, index: n, span: String(1000 + n), file: `w.${1000 + n}.pt.trace.json`, state: 'ready' });
const RUNS = [
  { name: 'before', workers: [{ name: 'worker0', spans: [span('aaaaaaaaaaa1', 1), span('aaaaaaaaaaa2', 2)] },
    { name: 'worker1', spans: [span('aaaaaaaaaab1', 1)] }] },
  { name: 'after', workers: [{ name: 'worker1', spans: [span('bbbbbbbbbbb1', 1), span('bbbbbbbbbbb2', 2)] }] },
];
const ON_SCREEN = { id: 'bbbbbbbbbbb2', run: 'after', worker: 'worker1' };

test('laneSides: a span baseline draws that span, the candidate the span on screen', () => {
  const sides = laneSides({ base: 'span:aaaaaaaaaaa2' }, ON_SCREEN, RUNS);
  assert.deepEqual(sides?.map((s) => [s.side, s.title, s.spans]), [['base', 'baseline', ['aaaaaaaaaaa2']], ['cand', 'candidate', ['bbbbbbbbbbb2']]]);
  assert.equal(sides?.[0].label, 'before / worker0 / span 1002');
});

test('laneSides: run sides draw one worker, its spans in order (the same worker name on the baseline when it has it)', () => {
  const sides = laneSides({ base: 'run:before', candRun: true }, ON_SCREEN, RUNS);
  assert.deepEqual(sides?.map((s) => s.spans), [['aaaaaaaaaab1'], ['bbbbbbbbbbb1', 'bbbbbbbbbbb2']]);
  assert.equal(sides?.[0].label, 'run before / worker1');
  assert.deepEqual(sides?.[1].names, ['span 1001', 'span 1002'], 'the name row says which span holds the step');
  const other = laneSides({ base: 'run:before' }, { id: 'x', run: 'after', worker: 'worker9' }, RUNS);
  assert.deepEqual(other?.[0].spans, ['aaaaaaaaaaa1', 'aaaaaaaaaaa2'], 'no worker of that name: the first');
  assert.deepEqual(other?.[1].spans, ['x']);
});

test('laneSides: nothing to stack without a comparison, a span on screen, or a listed baseline run', () => {
  assert.equal(laneSides(null, ON_SCREEN, RUNS), null);
  assert.equal(laneSides({ base: 'span:aaaaaaaaaaa1' }, null, RUNS), null);
  assert.equal(laneSides({ base: 'run:gone' }, ON_SCREEN, RUNS), null);
});

const SUMMARY_A = { duration_us: 1000, steps: [{ name: 'ProfilerStep#1', start_us: 100, dur_us: 300 }, { name: 'ProfilerStep#2', start_us: 400, dur_us: 350 }] };
const SUMMARY_B = { duration_us: 500, steps: [{ name: 'ProfilerStep#3', start_us: 20, dur_us: 200 }] };

test('anchorAt counts steps over a side\'s spans in order and gives that span\'s clock and bounds', () => {
  const spans = [spanSteps(SUMMARY_A), spanSteps(SUMMARY_B)];
  assert.deepEqual(anchorAt(spans, 0), { spanIndex: 0, anchorUs: 100, stepUs: 300, stepName: 'ProfilerStep#1', bounds: { t0Us: 0, t1Us: 1000 }, fromSteps: true });
  assert.deepEqual(anchorAt(spans, 2), { spanIndex: 1, anchorUs: 20, stepUs: 200, stepName: 'ProfilerStep#3', bounds: { t0Us: 0, t1Us: 500 }, fromSteps: true });
  assert.equal(anchorAt(spans, 9)?.stepName, 'ProfilerStep#3', 'beyond the last step: the last');
  assert.equal(anchorAt(spans, -4)?.stepName, 'ProfilerStep#1');
  assert.equal(anchorAt([], 0), null);
});

test('anchorAt: a side without steps is aligned at its trace start, over the whole trace', () => {
  const a = anchorAt([spanSteps({ duration_us: 800, steps: [] })], 3);
  assert.deepEqual(a, { spanIndex: 0, anchorUs: 0, stepUs: 800, stepName: 'trace start', bounds: { t0Us: 0, t1Us: 800 }, fromSteps: false });
});

test('the first view shows the longer aligned step from just before 0; bounds cover both traces, relative to their steps', () => {
  const a = anchorAt([spanSteps(SUMMARY_A)], 1); // starts at 400 of 1000, 350 long
  const b = anchorAt([spanSteps(SUMMARY_B)], 0); // starts at 20 of 500, 200 long
  assert.ok(a && b);
  assert.deepEqual(defaultWindow([a, b]), { t0Us: -PAD_FRAC * 350, t1Us: (1 + PAD_FRAC) * 350 });
  assert.deepEqual(relativeBounds([a, b]), { t0Us: -400, t1Us: 600 });
  assert.deepEqual(ownWindow({ t0Us: -10, t1Us: 90 }, a), { t0Us: 390, t1Us: 490 });
  assert.deepEqual(ownWindow({ t0Us: -10, t1Us: 90 }, b), { t0Us: 10, t1Us: 110 });
});

test('sideRequest asks each side its own clock\'s window, widened, cut to its trace, at the view\'s resolution', () => {
  const a = /** @type {any} */ (anchorAt([spanSteps(SUMMARY_A)], 1));
  const b = /** @type {any} */ (anchorAt([spanSteps(SUMMARY_B)], 0));
  const win = { t0Us: 0, t1Us: 100 }; // 100 µs over 200 px: 0.5 µs/px
  assert.deepEqual(sideRequest(win, a, 200, 0.5), { startUs: 350, endUs: 550, widthPx: 400 });
  assert.deepEqual(sideRequest(win, b, 200, 0.5), { startUs: 0, endUs: 170, widthPx: 340 }, 'cut at the trace start');
  // A view wholly past the end of a side's trace: the view's width at its end.
  assert.deepEqual(sideRequest({ t0Us: 900, t1Us: 1000 }, b, 200, 0.5), { startUs: 400, endUs: 500, widthPx: 200 });
});

test('sideServes: a payload serves while it covers the view inside the trace at about its resolution', () => {
  const a = /** @type {any} */ (anchorAt([spanSteps(SUMMARY_A)], 1));
  const win = { t0Us: 0, t1Us: 100 };
  const payload = { startUs: 350, endUs: 550, usPerPx: 0.5 };
  assert.equal(sideServes(payload, win, a, 200, 1.5), true);
  assert.equal(sideServes(payload, { t0Us: 100, t1Us: 200 }, a, 200, 1.5), false, 'panned out of it');
  assert.equal(sideServes(payload, { t0Us: 0, t1Us: 20 }, a, 200, 1.5), false, 'zoomed in: too coarse');
  assert.equal(sideServes(payload, { t0Us: -1000, t1Us: -900 }, a, 200, 1.5), true, 'nothing of the trace in view');
  assert.equal(sideServes({ startUs: 0, endUs: 1000, usPerPx: 0.5 }, { t0Us: -500, t1Us: -300 }, a, 400, 1.5), true,
    'the view sticks out before the trace: only its part inside counts');
});

/** A lanes answer: a busy and an idle CPU thread, a marker row, GPU streams. */
function lanesBody(gpuStreams = 2) {
  const ev = (start, dur, depth = 0) => ({ row: [1], start_us: [start], dur_us: [dur], depth: [depth], name: [0], kind: ['cpu_op'], count: [1], fill: [1] });
  const lanes = [
    { id: 0, kind: 'cpu', label: 'thread 1', max_depth: 9, events: { row: [1, 2, 3], start_us: [0, 10, 50], dur_us: [5, 20, 1], depth: [0, 0, 1],
      name: [0, 0, 0], kind: ['cpu_op', 'cpu_op', 'cpu_op'], count: [1, 1, 1], fill: [1, 1, 1] } },
    { id: 1, kind: 'cpu', label: 'thread 2', max_depth: 3, events: ev(0, 100) },
    { id: 2, kind: 'cpu', label: 'thread 3', max_depth: 0, events: ev(0, 2) },
    { id: 3, kind: 'marker', label: 'Traces', max_depth: 0, events: ev(0, 1000) },
    { id: 4, kind: 'cpu', label: 'no events', max_depth: -1, events: {} },
  ];
  for (let s = 0; s < gpuStreams; s++) lanes.push({ id: 5 + s, kind: 'gpu', label: `GPU 0 stream ${s}`, device: 0, stream: s, max_depth: 0, events: ev(20, 10) });
  return { start_us: 0, end_us: 200, us_per_px: 1, names: ['op'], lanes };
}

test('pickLanes keeps the busiest CPU threads and the first GPU streams, in the model\'s order; markers left out', () => {
  const data = prepareLanes(lanesBody());
  assert.equal(MAX_CPU_LANES, 2);
  assert.deepEqual(pickLanes(data.lanes), [0, 1, 5, 6], 'thread 2 (100 µs) and thread 1 (25 µs) beat thread 3 (2 µs)');
  assert.deepEqual(busiestThreads(data.lanes), [1, 0, 2]);
  assert.deepEqual(pickLanes(data.lanes, 16), [0, 1, 2, 5, 6], 'every thread with events');
  assert.deepEqual(pickLanes(data.lanes, 2, [2, 1, 0]), [1, 2, 5, 6], 'a ranking made earlier');
  // A thread idle in this window still ranks (last): "every thread" shows it.
  const idle = prepareLanes({ ...lanesBody(), lanes: lanesBody().lanes.map((l) => (l.id === 2 ? { ...l, events: {} } : l)) });
  assert.deepEqual(busiestThreads(idle.lanes), [1, 0, 2]);
  const many = prepareLanes(lanesBody(MAX_GPU_LANES + 3));
  assert.equal(pickLanes(many.lanes).filter((id) => id >= 5).length, MAX_GPU_LANES);
});

test('stackLayout stacks a name row, a step bar and the chosen lanes per side; nesting capped, folded threads one row', () => {
  const data = prepareLanes(lanesBody());
  const shown = pickLanes(data.lanes);
  const top = 20;
  const { sides, heightCss } = stackLayout([{ side: 'base', lanes: data.lanes, shown }, { side: 'cand', lanes: data.lanes, shown }],
    new Set(['cand:0']), top);
  const deep = MAX_DEPTH_ROWS * ROW_H + LANE_PAD; // thread 1: max_depth 9, capped
  const lanesBase = deep + (4 * ROW_H + LANE_PAD) + 2 * (ROW_H + LANE_PAD);
  assert.deepEqual(sides[0].blocks.map((b) => [b.laneId, b.depths, b.yCss]),
    [[0, MAX_DEPTH_ROWS, 0], [1, 4, deep], [5, 1, deep + 4 * ROW_H + LANE_PAD], [6, 1, deep + 5 * ROW_H + 2 * LANE_PAD]]);
  assert.equal(sides[0].yCss, top);
  assert.equal(sides[0].lanesYCss, top + SIDE_H + SIDE_STEPS_H);
  assert.equal(sides[1].yCss, top + SIDE_H + SIDE_STEPS_H + lanesBase);
  assert.equal(sides[1].blocks[0].depths, 1, 'folded on the candidate only');
  assert.equal(heightCss, sides[1].yCss + sides[1].hCss);
  // A side whose lanes have not arrived keeps one row of room.
  const empty = stackLayout([{ side: 'base', lanes: null, shown: [] }], new Set(), 0);
  assert.equal(empty.sides[0].hCss, SIDE_H + SIDE_STEPS_H + ROW_H + LANE_PAD);
});

test('hitStack finds the side, the lane and the event in that side\'s own clock', () => {
  const data = prepareLanes(lanesBody());
  const shown = pickLanes(data.lanes);
  const layout = stackLayout([{ side: 'base', lanes: data.lanes, shown }, { side: 'cand', lanes: data.lanes, shown }], new Set(), 20);
  const scale = new TimeScale(-100, 100, 190, 390); // relative, 1 µs per px
  const anchors = /** @type {any[]} */ ([{ anchorUs: 0 }, { anchorUs: 15 }]);
  const yOf = (side, block) => layout.sides[side].lanesYCss + layout.sides[side].blocks[block].yCss + LANE_PAD / 2 + 2;
  // Base side, thread 1 depth 0 at relative 12: own time 12, inside the event [10, 30).
  let hit = hitStack(layout, [data, data], scale, anchors, scale.tToX(12), yOf(0, 0));
  assert.deepEqual([hit.side, hit.area, hit.block, hit.depth, hit.event, hit.tUs], [0, 'lane', 0, 0, 1, 12]);
  // Candidate side at relative 12: own time 27, still that event; at relative 20: own 35, nothing there.
  hit = hitStack(layout, [data, data], scale, anchors, scale.tToX(12), yOf(1, 0));
  assert.deepEqual([hit.side, hit.event, hit.tUs], [1, 1, 27]);
  assert.equal(hitStack(layout, [data, data], scale, anchors, scale.tToX(20), yOf(1, 0)).event, -1);
  assert.equal(hitStack(layout, [data, data], scale, anchors, 50, yOf(1, 0)).area, 'gutter');
  assert.equal(hitStack(layout, [data, data], scale, anchors, 300, layout.sides[1].yCss + 2).area, 'name');
  assert.equal(hitStack(layout, [data, data], scale, anchors, 300, layout.sides[1].stepsYCss + 2).area, 'steps');
  assert.equal(hitStack(layout, [data, data], scale, anchors, 300, 5).side, -1, 'the axis');
});

test('clampStep keeps the aligned step within the steps both sides have', () => {
  assert.equal(clampStep(3, 6), 3);
  assert.equal(clampStep('4', 6), 4);
  assert.equal(clampStep(9, 6), 6);
  assert.equal(clampStep(0, 6), 1);
  assert.equal(clampStep('x', 6), 1);
  assert.equal(clampStep(2, 0), 1);
});

test('foldToFit folds a tall side\'s threads, the last shown first, until it fits; GPU streams never', () => {
  const data = prepareLanes(lanesBody());
  const shown = pickLanes(data.lanes); // threads 0 (6 rows, capped) and 1 (4 rows), streams 5 and 6
  const side = (key) => ({ side: key, lanes: data.lanes, shown });
  const head = SIDE_H + SIDE_STEPS_H;
  const full = head + (MAX_DEPTH_ROWS * ROW_H + LANE_PAD) + (4 * ROW_H + LANE_PAD) + 2 * (ROW_H + LANE_PAD);
  assert.deepEqual([...foldToFit([side('base')], new Set(), full)], [], 'fits: nothing folded');
  assert.deepEqual([...foldToFit([side('base')], new Set(), full - 1)], ['base:1'], 'thread 1 (shown last) folds first: 3 rows less');
  assert.deepEqual([...foldToFit([side('base')], new Set(), full - 3 * ROW_H - 1)].sort(), ['base:0', 'base:1']);
  // nothing left to fold: it stops (two one-row threads and the streams stay)
  assert.deepEqual([...foldToFit([side('base')], new Set(), 10)].sort(), ['base:0', 'base:1']);
  // each side on its own budget; what was folded stays folded
  const both = foldToFit([side('base'), side('cand')], new Set(['cand:0']), full - 1);
  assert.deepEqual([...both].sort(), ['base:1', 'cand:0']);
  const { heightCss } = stackLayout([side('base'), side('cand')], both, 0);
  assert.ok(heightCss <= 2 * (full - 1));
});
