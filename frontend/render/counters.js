// @ts-check
/**
 * Counter lanes under the GPU lanes: per bucket, the mean as a filled step chart and the max as a line,
 * against the lane's scale top (named in its label). Buckets come from the server at any zoom.
 */
import { COUNTER_H, COUNTER_HEADER_H, formatCounter } from '../model/counters.js';
import { GUTTER_W, HEADER_H } from '../model/layout.js';
import { fitLabel } from '../model/lod.js';
import { COLORS } from './frame.js';

/** One hue per counter kind, readable on the light and the dark ground. */
const HUES = { utilization: '46, 160, 67', sm_efficiency: '0, 137, 123', queue_length: '123, 77, 196',
  memory_bandwidth: '230, 124, 0', hw_counter: '200, 40, 90' };
const PAD = 3;

/** @param {string} kind */
function hue(kind) {
  return /** @type {Record<string, string>} */ (HUES)[kind] ?? '120, 120, 120';
}

/**
 * The plots (inside the lanes' clip): each lane's buckets between the plot's edges.
 * @param {import('./frame.js').Frame} frame
 * @param {number} yTopCss top of the counters block on the canvas
 */
export function drawCounterPlots(frame, yTopCss) {
  const c = frame.data.counters;
  if (!c || !c.lanes.length) return;
  const { ctx, scale } = frame;
  ctx.fillStyle = COLORS.laneAlt;
  ctx.fillRect(GUTTER_W, yTopCss, frame.widthCss - GUTTER_W, COUNTER_HEADER_H);
  c.lanes.forEach((lane, k) => {
    const y0 = yTopCss + COUNTER_HEADER_H + k * COUNTER_H;
    if (y0 > frame.heightCss || y0 + COUNTER_H < HEADER_H) return;
    const h = COUNTER_H - 2 * PAD;
    const base = y0 + COUNTER_H - PAD;
    const rgb = hue(lane.kind);
    ctx.fillStyle = `rgba(${rgb}, 0.45)`;
    ctx.strokeStyle = `rgba(${rgb}, 0.95)`;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let i = 0; i < lane.mean.length; i++) {
      // Whole pixels: neighbouring buckets meet without anti-aliased seams.
      const x0 = Math.max(Math.round(scale.tToX(c.startUs + i * c.bucketUs)), GUTTER_W);
      const x1 = Math.min(Math.round(scale.tToX(c.startUs + (i + 1) * c.bucketUs)), frame.widthCss);
      if (x1 <= x0) continue;
      const fillH = (Math.min(lane.mean[i], lane.top) / lane.top) * h;
      if (fillH > 0) ctx.fillRect(x0, base - fillH, x1 - x0, fillH);
      const yMax = base - (Math.min(lane.max[i], lane.top) / lane.top) * h;
      if (lane.max[i] > 0) {
        ctx.moveTo(x0, yMax + 0.5);
        ctx.lineTo(x1, yMax + 0.5);
      }
    }
    ctx.stroke();
    ctx.strokeStyle = COLORS.gutterLine;
    ctx.beginPath();
    ctx.moveTo(GUTTER_W, Math.round(y0 + COUNTER_H) - 0.5);
    ctx.lineTo(frame.widthCss, Math.round(y0 + COUNTER_H) - 0.5);
    ctx.stroke();
  });
}

/**
 * The labels (over the gutter, after it is painted): the block's header and each lane's name and scale top.
 * @param {import('./frame.js').Frame} frame
 * @param {number} yTopCss
 */
export function drawCounterLabels(frame, yTopCss) {
  const c = frame.data.counters;
  if (!c || !c.lanes.length) return;
  const { ctx, widths } = frame;
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, HEADER_H, frame.widthCss, frame.heightCss - HEADER_H);
  ctx.clip();
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  ctx.fillStyle = COLORS.laneAlt;
  ctx.fillRect(0, yTopCss, GUTTER_W, COUNTER_HEADER_H);
  ctx.fillStyle = COLORS.axisText;
  const hidden = c.hidden ? `, ${c.hidden} more not shown` : '';
  ctx.fillText(fitLabel(`Counters (mean filled, max line${hidden})`, frame.widthCss - 12, widths), 6, yTopCss + COUNTER_HEADER_H / 2);
  c.lanes.forEach((lane, k) => {
    const y0 = yTopCss + COUNTER_HEADER_H + k * COUNTER_H;
    if (y0 > frame.heightCss || y0 + COUNTER_H < HEADER_H) return;
    ctx.fillStyle = COLORS.text;
    ctx.fillText(fitLabel(lane.label, GUTTER_W - 12, widths), 6, y0 + 10);
    ctx.fillStyle = COLORS.axisText;
    ctx.fillText(fitLabel(`top ${formatCounter(lane.top, lane.unit)}`, GUTTER_W - 12, widths), 6, y0 + 22);
  });
  ctx.restore();
}
