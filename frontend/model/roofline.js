// @ts-check
/**
 * The Roofline panel's chart as data (the `tables?by=roofline` answer): which rows are drawn, the log-log
 * scales, the roofs, each point's place and size, what is under the pointer and the texts of the hover box,
 * the legend and the line under the chart. Pure: no DOM.
 *
 *   TFLOP/s (log)
 *      |            ______________ bf16 peak      a roof: min(peak, bandwidth × intensity); the slope and
 *      |          /   o     ______ fp32 peak      each flat line meet at the ridge (peak / bandwidth)
 *      |        / o  O     /
 *      |      /  o        /                       a point: one op shape, x = FLOP/byte, y = achieved TFLOP/s,
 *      |    /  o                                  area by its kernel time, colour by its category
 *      +--------------------------- FLOP/byte (log)
 *
 * Units: TFLOP/s = 1e12 FLOP/s and TB/s = 1e12 B/s, so a bandwidth in TB/s times an intensity in FLOP/B is
 * TFLOP/s with no factor.
 */
import { formatCount, formatDuration, formatShare, formatNumber } from './format.js';

/** The work categories in the route's order, each with its legend label and colour (Tableau 10: apart on both themes). */
export const CATEGORIES = /** @type {const} */ ([
  { key: 'gemm', label: 'GEMM', color: '#4e79a7' },
  { key: 'attention', label: 'attention', color: '#e15759' },
  { key: 'conv', label: 'convolution', color: '#f28e2b' },
  { key: 'elementwise', label: 'elementwise', color: '#59a14f' },
  { key: 'norm', label: 'normalization', color: '#b07aa1' },
  { key: 'reduce', label: 'reduction', color: '#76b7b2' },
  { key: 'copy', label: 'copy', color: '#edc948' },
  { key: 'communication', label: 'communication', color: '#9c755f' },
  { key: 'other', label: 'other', color: '#bab0ac' },
]);

/** Point radii (CSS px): the op with the most kernel time gets R_MAX, the area of the others in proportion, none under R_MIN. */
export const R_MAX = 14;
export const R_MIN = 2.5;
/** A pointer this near a point's centre hits it even when the point is drawn smaller (a 2.5 px dot is hard to hit). */
export const HIT_MIN_PX = 5;
/** The plot inside the canvas: room for the y labels on the left, the x labels and title under it. */
export const PLOT_PAD = { left: 56, right: 28, top: 12, bottom: 36 };

/** @param {string} category */
export function categoryOf(category) {
  return CATEGORIES.find((c) => c.key === category) ?? CATEGORIES[CATEGORIES.length - 1];
}

/** @param {unknown} v @returns {v is number} */
function positive(v) {
  return typeof v === 'number' && Number.isFinite(v) && v > 0;
}

/**
 * @typedef {object} RoofPoint
 * @property {number} index the row's index in the answer
 * @property {number} intensity FLOP/byte (x)
 * @property {number} tflops achieved TFLOP/s (y)
 * @property {number} us kernel time
 * @property {string} color
 */

/**
 * The rows a log-log chart can place (a work model, FLOPs and achieved TFLOP/s above 0), most kernel time first:
 * drawn in this order, the large points lie under the small ones and every point stays reachable.
 * @param {any[]} rows
 * @returns {RoofPoint[]}
 */
export function chartPoints(rows) {
  const points = [];
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    if (!positive(r?.intensity) || !positive(r?.achieved_tflops)) continue;
    points.push({ index: i, intensity: r.intensity, tflops: r.achieved_tflops, us: positive(r.kernel_us) ? r.kernel_us : 0,
      color: categoryOf(r.category).color });
  }
  return points.sort((a, b) => b.us - a.us || a.index - b.index);
}

/**
 * @typedef {object} Roof
 * @property {string} dtype
 * @property {number} tflops the flat line
 * @property {number} ridge FLOP/byte where the slope reaches it
 */

/**
 * The roofs to draw: the bandwidth slope and one flat line per peak of `compute_tflops`, highest first, named by its
 * dtypes (those of equal peaks on one line). The route lists the peaks the rows run at (a matrix peak per dtype,
 * "vector fp32" for vector work), so every entry is drawn. None without a bandwidth (an unknown device).
 * @param {any} roofs the answer's `totals.roofs`
 * @returns {{bandwidthTbps: number, compute: Roof[]} | null}
 */
export function chartRoofs(roofs) {
  const bw = roofs?.bandwidth_tbps;
  const peaks = roofs?.compute_tflops;
  if (!positive(bw)) return null;
  /** @type {Map<number, string[]>} one line per peak: fp32 matrix work and vector work share H100's 67 TFLOP/s */
  const byPeak = new Map();
  for (const [dtype, tflops] of Object.entries(peaks && typeof peaks === 'object' ? peaks : {})) {
    if (positive(tflops)) byPeak.set(tflops, [...(byPeak.get(tflops) ?? []), dtype]);
  }
  const compute = [...byPeak].map(([tflops, dtypes]) => ({ dtype: dtypes.sort().join(', '), tflops, ridge: tflops / bw }));
  return { bandwidthTbps: bw, compute: compute.sort((a, b) => b.tflops - a.tflops) };
}

/**
 * The axes' ranges: whole decades around the points and the roofs' corners on x (at least one decade); on y up to
 * Y_HEADROOM times the highest point or roof (the top roof lies inside the plot, not on its edge), down to the decade
 * under the lowest point but at most Y_DECADES decades under the top: a one-element `fill_` at 1e−7 TFLOP/s would
 * otherwise squeeze the decades under the roofs, where the ops that matter lie, into a strip. Points under the floor
 * are drawn on it (`layoutChart`).
 * @param {RoofPoint[]} points @param {{bandwidthTbps: number, compute: Roof[]} | null} roofs
 * @returns {{x: [number, number], y: [number, number]}}
 */
export function chartDomain(points, roofs) {
  const xs = points.map((p) => p.intensity);
  const ys = points.map((p) => p.tflops);
  for (const r of roofs?.compute ?? []) {
    xs.push(r.ridge);
    ys.push(r.tflops);
  }
  const x = decades(xs);
  if (!ys.length) return { x, y: [1, 10] };
  const [lowest] = decades(ys);
  const top = Math.max(...ys) * Y_HEADROOM;
  const floor = Math.max(lowest, 10 ** Math.floor(Math.log10(top) - Y_DECADES));
  return { x, y: [floor, Math.max(floor * 10, top)] };
}

/** Room above the highest point or roof on y (a factor: about a quarter of a decade). */
export const Y_HEADROOM = 1.8;
/** The most decades y spans under its top: 6 reach from an H100's bf16 peak (989 TFLOP/s) down to 0.001 TFLOP/s. */
export const Y_DECADES = 6;

/** @param {number[]} values positive @returns {[number, number]} */
function decades(values) {
  if (!values.length) return [1, 10];
  const lo = Math.floor(Math.log10(Math.min(...values)) + 1e-9);
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...values)) - 1e-9));
  return [10 ** lo, 10 ** hi];
}

/** A log10 axis mapping [lo, hi] onto [px0, px1] (px1 < px0 for y, which grows upwards). */
export class LogScale {
  /** @param {number} lo @param {number} hi @param {number} px0 @param {number} px1 */
  constructor(lo, hi, px0, px1) {
    this.lo = lo;
    this.hi = hi;
    this.px0 = px0;
    this.px1 = px1;
    this.logLo = Math.log10(lo);
    this.pxPerDecade = (px1 - px0) / Math.max(Math.log10(hi) - this.logLo, 1e-12);
  }

  /** @param {number} v */
  toPx(v) {
    return this.px0 + (Math.log10(v) - this.logLo) * this.pxPerDecade;
  }

  /** @param {number} px */
  fromPx(px) {
    return 10 ** (this.logLo + (px - this.px0) / this.pxPerDecade);
  }
}

/**
 * @typedef {object} Chart
 * @property {LogScale} x intensity -> CSS px
 * @property {LogScale} y TFLOP/s -> CSS px
 * @property {{left: number, right: number, top: number, bottom: number}} plot
 * @property {{bandwidthTbps: number, compute: Roof[]} | null} roofs
 * @property {(RoofPoint & {xCss: number, yCss: number, rCss: number, below: boolean})[]} placed in drawing order; `below`: under
 *   the y floor, drawn on it
 */

/**
 * Everything the drawing and the hit test share, for a canvas of `widthCss` × `heightCss`.
 * @param {any[]} rows @param {any} roofsAnswer `totals.roofs` @param {number} widthCss @param {number} heightCss
 * @returns {Chart}
 */
export function layoutChart(rows, roofsAnswer, widthCss, heightCss) {
  const points = chartPoints(rows);
  const roofs = chartRoofs(roofsAnswer);
  const domain = chartDomain(points, roofs);
  const plot = { left: PLOT_PAD.left, right: Math.max(PLOT_PAD.left + 1, widthCss - PLOT_PAD.right), top: PLOT_PAD.top,
    bottom: Math.max(PLOT_PAD.top + 1, heightCss - PLOT_PAD.bottom) };
  const x = new LogScale(domain.x[0], domain.x[1], plot.left, plot.right);
  const y = new LogScale(domain.y[0], domain.y[1], plot.bottom, plot.top);
  const maxUs = points.length ? Math.max(...points.map((p) => p.us)) : 0;
  const placed = points.map((p) => ({ ...p, xCss: x.toPx(p.intensity), yCss: y.toPx(Math.max(p.tflops, y.lo)), rCss: pointRadius(p.us, maxUs),
    below: p.tflops < y.lo }));
  return { x, y, plot, roofs, placed };
}

/** Radius whose area is in proportion to `us` (R_MAX at `maxUs`), at least R_MIN. @param {number} us @param {number} maxUs */
export function pointRadius(us, maxUs) {
  if (!(maxUs > 0) || !(us > 0)) return R_MIN;
  return Math.max(R_MIN, R_MAX * Math.sqrt(Math.min(us, maxUs) / maxUs));
}

/**
 * The roof lines in data space: the slope from the left edge to the highest ridge, each flat line from its ridge
 * to the right edge. The drawing clips them to the plot.
 * @param {Chart} chart
 * @returns {{kind: 'bandwidth' | 'compute', dtype: string, from: [number, number], to: [number, number]}[]}
 */
export function roofSegments(chart) {
  const r = chart.roofs;
  if (!r) return [];
  const [xLo, xHi] = [chart.x.lo, chart.x.hi];
  const top = r.compute.length ? r.compute[0].ridge : xHi;
  /** @type {{kind: 'bandwidth' | 'compute', dtype: string, from: [number, number], to: [number, number]}[]} */
  const out = [{ kind: 'bandwidth', dtype: '', from: [xLo, r.bandwidthTbps * xLo], to: [top, r.bandwidthTbps * top] }];
  for (const c of r.compute) out.push({ kind: 'compute', dtype: c.dtype, from: [c.ridge, c.tflops], to: [xHi, c.tflops] });
  return out;
}

/**
 * The point under the pointer: the one drawn last (the smallest on top) among those whose disc, or HIT_MIN_PX
 * around its centre, holds it; -1 for none. Returns an index into `chart.placed`.
 * @param {Chart} chart @param {number} xCss @param {number} yCss
 */
export function hitPoint(chart, xCss, yCss) {
  for (let k = chart.placed.length - 1; k >= 0; k--) {
    const p = chart.placed[k];
    const r = Math.max(p.rCss, HIT_MIN_PX);
    const dx = xCss - p.xCss;
    const dy = yCss - p.yCss;
    if (dx * dx + dy * dy <= r * r) return k;
  }
  return -1;
}

/**
 * A rate or ratio with 3 significant digits and comma thousands: 989, 0.0123, 1,230; 0 and tiny values stay readable.
 * @param {number | null | undefined} v
 */
export function formatSig(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '\u2013';
  if (v === 0) return '0';
  const rounded = Number(v.toPrecision(3));
  if (Math.abs(rounded) < 1e-4) return rounded.toExponential(2).replace('-', '\u2212');
  return formatNumber(rounded, Math.max(0, 2 - Math.floor(Math.log10(Math.abs(rounded)))));
}

/** An axis label of a power of ten or a 1-2-5 value: "0.01", "1", "1,000", "1e−5". @param {number} v */
export function formatAxis(v) {
  return v >= 1e-3 && v < 1e7 ? formatSig(v) : v.toExponential(0).replace('+', '').replace('-', '\u2212');
}

/** What a kernel list reads as: "name ×count (time)". @param {{name: string, count: number, kernel_us: number}} k */
function kernelText(k) {
  const name = String(k.name ?? '');
  return `${name.length > 90 ? `${name.slice(0, 89)}\u2026` : name} \u00d7${formatCount(k.count)} (${formatDuration(k.kernel_us)})`;
}

/** Kernels listed in the hover box; the others are counted. */
export const TOOLTIP_KERNELS = 3;

/**
 * The hover box of a row: the op as title, then its inputs, work and figures as label/value rows.
 * @param {any} row
 * @returns {{title: string, rows: [string, string][]}}
 */
export function pointTooltip(row) {
  /** @type {[string, string][]} */
  const rows = [
    ['category', categoryOf(row.category).label],
    ['input dims', String(row.input_dims ?? '') || '\u2013'],
    ['input types', String(row.input_types ?? '') || '\u2013'],
    ['calls', formatCount(row.calls)],
    ['kernel time', formatDuration(row.kernel_us)],
    ['achieved', `${formatSig(row.achieved_tflops)} TFLOP/s`],
    ['bandwidth', `${formatSig(row.achieved_tbps)} TB/s`],
    ['intensity', `${formatSig(row.intensity)} FLOP/B`],
    ['dtype', row.dtype ? String(row.dtype) : '\u2013'],
    ['bound', row.bound ? String(row.bound) : '\u2013'],
    ['of the roof', row.roof_pct === null || row.roof_pct === undefined ? '\u2013' : `${formatSig(row.roof_pct)}%`],
    ['time at the roof', formatDuration(row.roof_us)],
  ];
  /** @type {{name: string, count: number, kernel_us: number}[]} */
  const listed = Array.isArray(row.kernels) ? row.kernels.slice(0, TOOLTIP_KERNELS) : [];
  listed.forEach((k, i) => rows.push([i ? '' : 'kernels', kernelText(k)]));
  const more = Number(row.kernel_count ?? 0) - listed.reduce((n, k) => n + Number(k.count || 0), 0);
  if (more > 0) rows.push(['', `and ${formatCount(more)} more`]);
  return { title: String(row.name ?? ''), rows };
}

/** The categories drawn, in CATEGORIES order, for the legend. @param {any[]} rows @param {RoofPoint[]} points */
export function legendCategories(rows, points) {
  const shown = new Set(points.map((p) => String(rows[p.index].category)));
  return CATEGORIES.filter((c) => shown.has(c.key) || (c.key === 'other' && [...shown].some((s) => !CATEGORIES.some((k) => k.key === s))));
}

/**
 * How many points lie under the y floor, and the floor, for the line under the chart.
 * @param {any[]} rows @param {any} roofsAnswer `totals.roofs` @returns {{count: number, floorTflops: number}}
 */
export function pointsBelow(rows, roofsAnswer) {
  const points = chartPoints(rows);
  const floorTflops = chartDomain(points, chartRoofs(roofsAnswer)).y[0];
  return { count: points.filter((p) => p.tflops < floorTflops).length, floorTflops };
}

/**
 * The line under the chart: how many op shapes are drawn, what share of the kernel time has no model (so none of the
 * chart speaks for it; communication, which no roof describes, is counted apart, as the route does), and the roofs'
 * device or why there are none.
 * @param {any} body the answer @param {number} drawn points on the chart
 * @param {{count: number, floorTflops: number}} [below] points under the y floor, drawn hollow on it
 * @returns {string[]} sentences
 */
export function coverageLines(body, drawn, below = { count: 0, floorTflops: 0 }) {
  const t = body?.totals ?? {};
  const shown = Array.isArray(body?.rows) ? body.rows.length : 0;
  const total = Number(body?.total ?? shown);
  const lines = [`${formatCount(drawn)} of ${formatCount(shown)} op shapes drawn${total > shown ? ` (the ${formatCount(shown)} of ${formatCount(total)} with the most kernel time)` : ''}.`];
  if (below.count) lines.push(`${formatCount(below.count)} under ${formatAxis(below.floorTflops)} TFLOP/s ${below.count === 1 ? 'is' : 'are'} drawn hollow on the bottom edge.`);
  const comm = positive(t.communication_us) ? t.communication_us : 0;
  if (typeof t.unmodelled_share === 'number' && Number.isFinite(t.unmodelled_share)) {
    const us = typeof t.unmodelled_us === 'number' ? t.unmodelled_us : Number(t.kernel_us) - Number(t.modelled_us) - comm;
    const share = t.unmodelled_share > 0 && t.unmodelled_share < 0.0005 ? 'under 0.1%' : formatShare(t.unmodelled_share); // never "0.0% (255 µs)"
    lines.push(`${share[0].toUpperCase()}${share.slice(1)} of the kernel time${comm ? ' outside communication' : ''}${us > 0 ? ` (${formatDuration(us)})` : ''} has no work model and is not drawn.`);
  }
  if (comm) lines.push(`Communication kernels (${formatDuration(comm)}) have no roof and are not drawn.`);
  if (!t.roofs) lines.push(`No roofs: ${t.reason ? String(t.reason) : 'the device is unknown'}.`);
  else lines.push(`Roofs of ${t.device ? String(t.device) : 'the device'}${t.peak_source ? ` (${String(t.peak_source)})` : ''}.`);
  return lines;
}

/**
 * The point a key moves the focus to: ArrowRight/ArrowDown the next in kernel time, ArrowLeft/ArrowUp the previous,
 * Home the largest, End the smallest; null for other keys. `k` -1: none focused yet.
 * @param {number} k @param {string} key @param {number} count
 */
export function focusStep(k, key, count) {
  if (!count) return null;
  if (key === 'Home') return 0;
  if (key === 'End') return count - 1;
  const delta = key === 'ArrowRight' || key === 'ArrowDown' ? 1 : key === 'ArrowLeft' || key === 'ArrowUp' ? -1 : 0;
  if (!delta) return null;
  // `placed` is largest first, so the order of the keys is its index order.
  return k < 0 ? (delta > 0 ? 0 : count - 1) : (k + delta + count) % count;
}
