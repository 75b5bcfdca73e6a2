import assert from 'node:assert/strict';
import test from 'node:test';

import { CATEGORIES, HIT_MIN_PX, LogScale, R_MAX, R_MIN, chartDomain, chartPoints, chartRoofs, coverageLines, focusStep, formatAxis,
  formatSig, hitPoint, layoutChart, legendCategories, pointRadius, pointTooltip, pointsBelow, roofSegments, Y_DECADES, Y_HEADROOM } from '../model/roofline.js';

// An H200-like device as the route gives it: 4.8 TB/s, 989 bf16 TFLOP/s on the tensor cores, 67 fp32 TFLOP/s on the vector units.
const ROOFS = { bandwidth_tbps: 4.8, compute_tflops: { bf16: 989, 'vector fp32': 67 } };

/** A `tables?by=roofline` row: the contract's fields, the figures given. */
function row(name, category, fields) {
  return { name, input_dims: '[[8944, 1024], [1024, 2816]]', input_types: "['c10::BFloat16', 'c10::BFloat16']", category, calls: 4,
    flops: null, bytes: null, kernel_us: 0, achieved_tflops: null, achieved_tbps: null, intensity: null, bound: null, roof_pct: null,
    roof_us: null, dtype: null, peak_source: 'datasheet', kernels: [], kernel_rows: [], kernel_count: 0, ...fields };
}

const ROWS = [
  row('aten::add', 'elementwise', { kernel_us: 250, achieved_tflops: 1.2, achieved_tbps: 3.6, intensity: 1 / 3, bound: 'memory', dtype: 'bf16',
    roof_pct: 75, roof_us: 187.5, kernels: [{ name: 'vectorized_elementwise_kernel', count: 4, kernel_us: 250 }], kernel_rows: [11, 12, 13, 14], kernel_count: 4 }),
  row('aten::mm', 'gemm', { kernel_us: 1000, achieved_tflops: 600, achieved_tbps: 1.2, intensity: 500, bound: 'compute', dtype: 'bf16', roof_pct: 60.7,
    roof_us: 607, kernels: [{ name: 'sm90_xmma_gemm_bf16', count: 3, kernel_us: 900 }, { name: 'splitK_reduce', count: 2, kernel_us: 60 },
      { name: 'memset', count: 1, kernel_us: 30 }, { name: 'cast', count: 1, kernel_us: 10 }], kernel_rows: [3, 5, 7], kernel_count: 7 }),
  row('aten::nonzero', 'other', { kernel_us: 5000 }), // no work model: not drawn, however long
  row('aten::copy_', 'copy', { kernel_us: 40, achieved_tflops: 0, achieved_tbps: 2, intensity: 0 }), // moves bytes, no FLOPs: off a log axis
];

test('points: the rows with a model and FLOPs, the most kernel time first, coloured by category', () => {
  const points = chartPoints(ROWS);
  assert.deepEqual(points.map((p) => p.index), [1, 0]);
  assert.equal(points[0].color, CATEGORIES.find((c) => c.key === 'gemm').color);
  assert.equal(points[1].color, CATEGORIES.find((c) => c.key === 'elementwise').color);
  assert.equal(chartPoints([row('x', 'made-up', { intensity: 2, achieved_tflops: 1 })])[0].color, CATEGORIES.at(-1).color); // unknown: other
  assert.deepEqual(chartPoints([null, {}, row('y', 'gemm', { intensity: Infinity, achieved_tflops: 1 })]), []);
});

test('roofs: the slope and one flat line per peak the route lists, highest first; none for an unknown device', () => {
  const r = chartRoofs(ROOFS);
  assert.equal(r.bandwidthTbps, 4.8);
  assert.deepEqual(r.compute.map((c) => [c.dtype, c.tflops]), [['bf16', 989], ['vector fp32', 67]]);
  assert.ok(Math.abs(r.compute[0].ridge - 989 / 4.8) < 1e-9); // 206.04 FLOP/B: where 4.8 TB/s × I reaches 989 TFLOP/s
  assert.ok(Math.abs(r.compute[1].ridge - 67 / 4.8) < 1e-9); // 13.96 FLOP/B
  assert.deepEqual(chartRoofs({ bandwidth_tbps: 2, compute_tflops: { fp8: null, fp16: 0 } }).compute, []); // no figure: no line
  // fp32 GEMMs and vector work at the same 67 TFLOP/s: one line, both names
  assert.deepEqual(chartRoofs({ bandwidth_tbps: 4.8, compute_tflops: { 'vector fp32': 67, bf16: 989, fp32: 67 } }).compute.map((c) => c.dtype),
    ['bf16', 'fp32, vector fp32']);
  assert.equal(chartRoofs(null), null);
  assert.equal(chartRoofs({ bandwidth_tbps: null, compute_tflops: { bf16: 989 } }), null);
});

test('the domain: whole decades on x around the points and the ridges; y from a decade up to headroom over the top roof', () => {
  const points = chartPoints(ROWS);
  // x: 1/3, 500 and the ridges 14 and 206 -> [0.1, 1000]; y: 1.2, 600 and the peak 989 -> from 1 to 989 × 1.8
  assert.deepEqual(chartDomain(points, chartRoofs(ROOFS)), { x: [0.1, 1000], y: [1, 989 * Y_HEADROOM] });
  // one point exactly on a decade still gets a decade of room; none at all gets [1, 10]
  assert.deepEqual(chartDomain([{ intensity: 10, tflops: 100 }], null), { x: [10, 100], y: [100, 1000] });
  assert.deepEqual(chartDomain([{ intensity: 10, tflops: 900 }], null).y, [100, 900 * Y_HEADROOM]);
  assert.deepEqual(chartDomain([], null), { x: [1, 10], y: [1, 10] });
  // a one-element fill at 1e-7 TFLOP/s: y stops Y_DECADES under its top (989 × 1.8 = 1,781: 10^(3.25 − 6) -> 0.001)
  const tiny = chartPoints([...ROWS, row('aten::fill_', 'elementwise', { kernel_us: 2, achieved_tflops: 1e-7, intensity: 0.25 })]);
  assert.deepEqual(chartDomain(tiny, chartRoofs(ROOFS)).y, [0.001, 989 * Y_HEADROOM]);
  assert.equal(Y_DECADES, 6);
});

test('a point under the y floor lies on the bottom edge, marked, and the line under the chart counts it', () => {
  const rows = [...ROWS, row('aten::fill_', 'elementwise', { kernel_us: 2, achieved_tflops: 1e-7, intensity: 0.25 })];
  const chart = layoutChart(rows, ROOFS, 484, 348);
  const fill = chart.placed.find((p) => p.index === 4);
  assert.equal(fill.yCss, chart.plot.bottom);
  assert.equal(fill.below, true);
  assert.ok(chart.placed.filter((p) => p.index !== 4).every((p) => !p.below));
  assert.deepEqual(pointsBelow(rows, ROOFS), { count: 1, floorTflops: 0.001 });
  assert.deepEqual(pointsBelow(ROWS, ROOFS), { count: 0, floorTflops: 1 });
  assert.equal(coverageLines({ rows, totals: {} }, 3, pointsBelow(rows, ROOFS))[1], '1 under 0.001 TFLOP/s is drawn hollow on the bottom edge.');
});

test('a log scale maps decades to equal lengths, both ways, and y grows upwards', () => {
  const x = new LogScale(0.1, 1000, 56, 456); // 4 decades on 400 px
  assert.equal(x.toPx(0.1), 56);
  assert.ok(Math.abs(x.toPx(1) - 156) < 1e-9);
  assert.ok(Math.abs(x.fromPx(356) - 100) < 1e-9);
  for (const v of [0.37, 2, 999]) assert.ok(Math.abs(x.fromPx(x.toPx(v)) / v - 1) < 1e-12);
  const y = new LogScale(1, 1000, 312, 12);
  assert.ok(y.toPx(100) < y.toPx(10));
  assert.ok(Math.abs(y.toPx(10) - 212) < 1e-9);
});

test('point placement and size: area in proportion to kernel time, R_MAX for the largest, never under R_MIN', () => {
  // canvas 484 × 348: plot x 56..456 (4 decades, 100 px each), y 312..12 (1 to 1,780 TFLOP/s: 300 px over 3.25 decades)
  const chart = layoutChart(ROWS, ROOFS, 484, 348);
  assert.deepEqual(chart.plot, { left: 56, right: 456, top: 12, bottom: 312 });
  const [mm, add] = chart.placed;
  const pxPerDecadeY = 300 / Math.log10(989 * Y_HEADROOM);
  assert.ok(Math.abs(mm.xCss - (56 + 100 * (Math.log10(500) + 1))) < 1e-9); // 425.9
  assert.ok(Math.abs(mm.yCss - (312 - pxPerDecadeY * Math.log10(600))) < 1e-9); // 115.1
  assert.ok(Math.abs(add.xCss - (56 + 100 * (1 - Math.log10(3)))) < 1e-9); // 1/3 FLOP/B: 108.3
  assert.equal(mm.rCss, R_MAX);
  assert.ok(Math.abs(add.rCss - R_MAX / 2) < 1e-9); // a quarter of the time, a quarter of the area
  assert.equal(pointRadius(1, 1e6), R_MIN);
  assert.equal(pointRadius(0, 0), R_MIN);
});

test('roof segments: the slope from the left edge to the highest ridge, each flat line from its ridge to the right edge', () => {
  const chart = layoutChart(ROWS, ROOFS, 484, 348);
  const [slope, bf16] = roofSegments(chart);
  const ridge = 989 / 4.8;
  assert.equal(slope.kind, 'bandwidth');
  assert.deepEqual(slope.from, [0.1, 4.8 * 0.1]);
  assert.ok(Math.abs(slope.to[0] - ridge) < 1e-9 && Math.abs(slope.to[1] - 989) < 1e-9);
  assert.deepEqual([bf16.kind, bf16.dtype, bf16.to], ['compute', 'bf16', [1000, 989]]);
  assert.ok(Math.abs(bf16.from[0] - ridge) < 1e-9);
  const vector = roofSegments(chart)[2]; // under bf16's, from its own ridge on the slope
  assert.deepEqual([vector.dtype, vector.to], ['vector fp32', [1000, 67]]);
  assert.ok(Math.abs(vector.from[0] - 67 / 4.8) < 1e-9);
  assert.deepEqual(roofSegments(layoutChart(ROWS, null, 484, 348)), []); // unknown device: the points alone
  assert.equal(layoutChart(ROWS, null, 484, 348).placed.length, 2);
});

test('hit test: the disc under the pointer, the smaller on top where they overlap, a small dot hit from HIT_MIN_PX', () => {
  const chart = layoutChart(ROWS, ROOFS, 484, 348);
  const [mm, add] = chart.placed;
  assert.equal(hitPoint(chart, add.xCss, add.yCss), 1);
  assert.equal(hitPoint(chart, mm.xCss + R_MAX - 1, mm.yCss), 0);
  assert.equal(hitPoint(chart, mm.xCss + R_MAX + 1, mm.yCss), -1);
  assert.equal(hitPoint(chart, 60, 300), -1);
  // two shapes at the same place: the small one (drawn last) is what the pointer gets
  const twin = [ROWS[1], { ...ROWS[1], name: 'aten::matmul', kernel_us: 10 }];
  const both = layoutChart(twin, ROOFS, 484, 348);
  assert.equal(both.placed[hitPoint(both, both.placed[0].xCss, both.placed[0].yCss)].index, 1);
  // a dot of R_MIN is still hit 4 px from its centre
  const tiny = both.placed[1];
  assert.equal(tiny.rCss, R_MIN);
  assert.equal(hitPoint(both, tiny.xCss + HIT_MIN_PX - 1, tiny.yCss), 1);
});

test('numbers: 3 significant digits with commas, axis labels of decades', () => {
  assert.equal(formatSig(989), '989');
  assert.equal(formatSig(206.04), '206');
  assert.equal(formatSig(1234.5), '1,230');
  assert.equal(formatSig(0.012345), '0.0123');
  assert.equal(formatSig(4.8), '4.8');
  assert.equal(formatSig(0), '0');
  assert.equal(formatSig(null), '\u2013');
  assert.equal(formatSig(0.00001234), '1.23e\u22125');
  assert.equal(formatAxis(1000), '1,000');
  assert.equal(formatAxis(0.01), '0.01');
  assert.equal(formatAxis(1e-5), '1e\u22125');
  assert.equal(formatAxis(1e8), '1e8');
});

test('the hover box: op, inputs, calls, kernel time, rates, intensity, bound, roof %, and its kernels', () => {
  const t = pointTooltip(ROWS[1]);
  assert.equal(t.title, 'aten::mm');
  const rows = Object.fromEntries(t.rows.filter(([k]) => k));
  assert.equal(rows['input dims'], '[[8944, 1024], [1024, 2816]]');
  assert.equal(rows['input types'], "['c10::BFloat16', 'c10::BFloat16']");
  assert.equal(rows.category, 'GEMM');
  assert.equal(rows.calls, '4');
  assert.equal(rows['kernel time'], '1 ms');
  assert.equal(rows.achieved, '600 TFLOP/s');
  assert.equal(rows.bandwidth, '1.2 TB/s');
  assert.equal(rows.intensity, '500 FLOP/B');
  assert.equal(rows.dtype, 'bf16');
  assert.equal(rows.bound, 'compute');
  assert.equal(rows['of the roof'], '60.7%');
  assert.equal(rows['time at the roof'], '607 µs');
  // three kernels listed, the fourth's one launch counted: 7 kernels in all, 3 + 2 + 1 shown
  const kernels = t.rows.slice(t.rows.findIndex(([k]) => k === 'kernels'));
  assert.deepEqual(kernels.map(([, v]) => v), ['sm90_xmma_gemm_bf16 \u00d73 (900 µs)', 'splitK_reduce \u00d72 (60 µs)', 'memset \u00d71 (30 µs)', 'and 1 more']);
  // no model, no device: dashes, never "null"
  const bare = Object.fromEntries(pointTooltip(ROWS[2]).rows);
  assert.equal(bare.achieved, '\u2013 TFLOP/s');
  assert.equal(bare['of the roof'], '\u2013');
  assert.equal(bare.bound, '\u2013');
  assert.ok(!JSON.stringify(pointTooltip(ROWS[2])).includes('null'));
});

test('legend: the categories drawn, in the route order', () => {
  assert.deepEqual(legendCategories(ROWS, chartPoints(ROWS)).map((c) => c.key), ['gemm', 'elementwise']);
  const odd = [row('x', 'made-up', { intensity: 2, achieved_tflops: 1 })];
  assert.deepEqual(legendCategories(odd, chartPoints(odd)).map((c) => c.key), ['other']);
});

test('the line under the chart: points drawn, the unmodelled share of kernel time, the roofs or why there are none', () => {
  const totals = { rows: 4, kernel_us: 6290, modelled_us: 1250, unmodelled_us: 5040, unmodelled_share: 5040 / 6290, communication_us: 0,
    device: 'NVIDIA H200', peak_source: 'datasheet', reason: null, roofs: ROOFS };
  assert.deepEqual(coverageLines({ total: 4, rows: ROWS, totals }, 2), [
    '2 of 4 op shapes drawn.',
    '80.1% of the kernel time (5.04 ms) has no work model and is not drawn.',
    'Roofs of NVIDIA H200 (datasheet).']);
  // communication is apart: 1 ms of it, the share is of the 6.29 ms outside it
  const comm = { ...totals, kernel_us: 7290, communication_us: 1000 };
  assert.deepEqual(coverageLines({ total: 4, rows: ROWS, totals: comm }, 2).slice(1, 3), [
    '80.1% of the kernel time outside communication (5.04 ms) has no work model and is not drawn.',
    'Communication kernels (1 ms) have no roof and are not drawn.']);
  // without unmodelled_us: kernel time less the modelled and the communication time
  const { unmodelled_us: _, ...older } = comm;
  assert.equal(coverageLines({ rows: ROWS, totals: older }, 2)[1], '80.1% of the kernel time outside communication (5.04 ms) has no work model and is not drawn.');
  // a sliver: not "0.0% (255 µs)"
  const sliver = { ...totals, kernel_us: 1e6, unmodelled_us: 255, unmodelled_share: 255e-6 };
  assert.equal(coverageLines({ rows: ROWS, totals: sliver }, 2)[1], 'Under 0.1% of the kernel time (255 µs) has no work model and is not drawn.');
  const unknown = { ...totals, device: null, roofs: null, reason: 'no peak figures for "Grace Hopper X"' };
  assert.equal(coverageLines({ total: 812, rows: ROWS, totals: unknown }, 2).at(-1), 'No roofs: no peak figures for "Grace Hopper X".');
  assert.equal(coverageLines({ total: 812, rows: ROWS, totals: unknown }, 2)[0], '2 of 4 op shapes drawn (the 4 of 812 with the most kernel time).');
  assert.deepEqual(coverageLines({ rows: [], totals: { roofs: null } }, 0), ['0 of 0 op shapes drawn.', 'No roofs: the device is unknown.']);
});

test('keys: arrows step through the points by kernel time and wrap, Home and End jump, other keys do nothing', () => {
  assert.equal(focusStep(-1, 'ArrowRight', 3), 0);
  assert.equal(focusStep(-1, 'ArrowLeft', 3), 2);
  assert.equal(focusStep(0, 'ArrowDown', 3), 1);
  assert.equal(focusStep(2, 'ArrowRight', 3), 0);
  assert.equal(focusStep(0, 'ArrowUp', 3), 2);
  assert.equal(focusStep(1, 'Home', 3), 0);
  assert.equal(focusStep(1, 'End', 3), 2);
  assert.equal(focusStep(1, 'a', 3), null);
  assert.equal(focusStep(-1, 'ArrowRight', 0), null);
});
