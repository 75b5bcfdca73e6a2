// @ts-check
/**
 * The launch-offset histogram: log-spaced bins (edges from the `launches` route), offset counts as
 * bars, queued and latency counts as step outlines over them.
 */
import { formatDuration } from '../model/format.js';
import { logTicks125 } from '../model/scale.js';
import { COLORS } from './frame.js';

export const HIST_PAD = { left: 48, right: 12, top: 10, bottom: 24 };
export const SERIES = /** @type {const} */ ([
  { key: 'offset', color: 'rgba(30, 136, 229, 0.55)', label: 'launch offset' },
  { key: 'queued', color: '#ef6c00', label: 'queued' },
  { key: 'latency', color: '#2e7d32', label: 'latency' },
]);

/**
 * x of a bin edge index on a plot where bins are equally wide (the edges are log-spaced).
 * @param {number} k edge index @param {number} bins @param {number} widthCss
 */
export function edgeX(k, bins, widthCss) {
  return HIST_PAD.left + ((widthCss - HIST_PAD.left - HIST_PAD.right) * k) / Math.max(bins, 1);
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {{edges_us: number[], offset: number[], queued?: number[], latency?: number[]}} h
 * @param {number} widthCss @param {number} heightCss
 */
export function drawHistogram(ctx, h, widthCss, heightCss) {
  const bins = h.offset.length;
  const top = HIST_PAD.top;
  const bottom = heightCss - HIST_PAD.bottom;
  const maxCount = Math.max(1, ...SERIES.flatMap((s) => /** @type {number[]} */ (/** @type {any} */ (h)[s.key] ?? [])));
  const yOf = (/** @type {number} */ c) => bottom - ((bottom - top) * c) / maxCount;
  ctx.fillStyle = SERIES[0].color;
  for (let k = 0; k < bins; k++) {
    const x0 = edgeX(k, bins, widthCss);
    const x1 = edgeX(k + 1, bins, widthCss);
    ctx.fillRect(x0 + 0.5, yOf(h.offset[k]), Math.max(x1 - x0 - 1, 1), bottom - yOf(h.offset[k]));
  }
  for (const s of SERIES.slice(1)) {
    const counts = /** @type {number[] | undefined} */ (/** @type {any} */ (h)[s.key]);
    if (!counts || counts.length !== bins) continue;
    ctx.strokeStyle = s.color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(edgeX(0, bins, widthCss), bottom);
    for (let k = 0; k < bins; k++) {
      ctx.lineTo(edgeX(k, bins, widthCss), yOf(counts[k]));
      ctx.lineTo(edgeX(k + 1, bins, widthCss), yOf(counts[k]));
    }
    ctx.stroke();
  }
  drawHistAxes(ctx, h.edges_us, bins, widthCss, top, bottom, maxCount);
}

/**
 * @param {CanvasRenderingContext2D} ctx @param {number[]} edgesUs @param {number} bins @param {number} widthCss
 * @param {number} top @param {number} bottom @param {number} maxCount
 */
function drawHistAxes(ctx, edgesUs, bins, widthCss, top, bottom, maxCount) {
  ctx.strokeStyle = COLORS.gutterLine;
  ctx.beginPath();
  ctx.moveTo(HIST_PAD.left, bottom + 0.5);
  ctx.lineTo(widthCss - HIST_PAD.right, bottom + 0.5);
  ctx.moveTo(HIST_PAD.left - 0.5, top);
  ctx.lineTo(HIST_PAD.left - 0.5, bottom);
  ctx.stroke();
  ctx.fillStyle = COLORS.axisText;
  ctx.textBaseline = 'top';
  ctx.textAlign = 'center';
  // Bins are log-spaced: label round 1-2-5 values where they fall, never the raw edges (3.99 µs, 7.96 µs).
  const lo = edgesUs[0];
  const hi = edgesUs[Math.min(bins, edgesUs.length - 1)];
  const room = Math.max(1, Math.floor((widthCss - HIST_PAD.left - HIST_PAD.right) / 64));
  for (const v of logTicks125(lo, hi, room)) {
    const x = edgeX((bins * Math.log(v / lo)) / Math.log(hi / lo), bins, widthCss);
    ctx.fillRect(Math.round(x), bottom, 1, 3);
    ctx.fillText(formatDuration(v), x, bottom + 5);
  }
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.fillText(String(maxCount), HIST_PAD.left - 6, top + 4);
  ctx.fillText('0', HIST_PAD.left - 6, bottom);
  ctx.textAlign = 'left';
}
