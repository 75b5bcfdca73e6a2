// @ts-check
/**
 * The memory chart: per device, allocated bytes as a filled step area and reserved bytes as a line
 * (none when the trace did not record them: the legend says so), on the lanes' time axis, with the
 * peak marked and its op named.
 */
import { formatBytes } from '../model/format.js';
import { bisectLeft, bisectRight } from '../model/hit.js';
import { GUTTER_W } from '../model/layout.js';
import { fitLabel } from '../model/lod.js';
import { drawGrid } from './axis.js';
import { COLORS } from './frame.js';

export const BAND_H = 84;
const PAD_TOP = 14;

/**
 * @typedef {object} MemorySeries
 * @property {string} device
 * @property {Float64Array} tsUs
 * @property {Float64Array} allocated
 * @property {Float64Array} reserved
 * @property {number} peakAllocated
 * @property {number} peakReserved
 * @property {number} peakAtUs
 * @property {string} peakOp
 * @property {ReturnType<typeof import('../model/memory.js').memoryLabels>} labels legend texts (relative, reserved not recorded)
 * @property {string} note what the curves cannot claim, '' when nothing
 */

/**
 * A step path of `values` over the visible part of `tsUs` (one sample before and after included).
 * @param {CanvasRenderingContext2D} ctx @param {import('../model/scale.js').TimeScale} scale
 * @param {Float64Array} tsUs @param {Float64Array} values @param {(v: number) => number} yOf
 * @returns {[number, number] | null} first and last x drawn
 */
function stepPath(ctx, scale, tsUs, values, yOf) {
  const i0 = Math.max(0, bisectLeft(tsUs, scale.t0Us) - 1);
  const i1 = Math.min(tsUs.length, bisectRight(tsUs, scale.t1Us) + 1);
  if (i1 <= i0) return null;
  const xFirst = Math.max(scale.tToX(tsUs[i0]), scale.x0Css);
  ctx.moveTo(xFirst, yOf(values[i0]));
  let yPrev = yOf(values[i0]);
  let x = xFirst;
  for (let i = i0 + 1; i < i1; i++) {
    x = Math.min(Math.max(scale.tToX(tsUs[i]), scale.x0Css), scale.x1Css);
    const y = yOf(values[i]);
    ctx.lineTo(x, yPrev);
    ctx.lineTo(x, y);
    yPrev = y;
  }
  const xLast = i1 === tsUs.length ? x : scale.x1Css;
  ctx.lineTo(xLast, yPrev);
  return [xFirst, xLast];
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('../model/scale.js').TimeScale} scale
 * @param {MemorySeries} s
 * @param {number} top band top (CSS px)
 * @param {number} widthCss
 * @param {import('../model/lod.js').TextWidthCache} widths
 */
export function drawMemoryBand(ctx, scale, s, top, widthCss, widths) {
  const maxBytes = Math.max(s.peakAllocated, s.peakReserved, 1);
  const yOf = (/** @type {number} */ v) => top + BAND_H - 2 - ((BAND_H - PAD_TOP - 4) * v) / maxBytes;
  ctx.save();
  ctx.beginPath();
  ctx.rect(scale.x0Css, top, scale.x1Css - scale.x0Css, BAND_H);
  ctx.clip();
  drawGrid(ctx, scale, top, top + BAND_H);
  ctx.beginPath();
  const span = stepPath(ctx, scale, s.tsUs, s.allocated, yOf);
  if (span) {
    ctx.lineTo(span[1], yOf(0));
    ctx.lineTo(span[0], yOf(0));
    ctx.closePath();
    ctx.fillStyle = 'rgba(30, 136, 229, 0.35)';
    ctx.fill();
  }
  ctx.beginPath();
  if (stepPath(ctx, scale, s.tsUs, s.reserved, yOf)) {
    ctx.strokeStyle = '#6a1b9a';
    ctx.lineWidth = 1.25;
    ctx.stroke();
  }
  drawPeak(ctx, scale, s, top, yOf, widths);
  ctx.restore();
  drawBandLabels(ctx, s, top, widthCss, maxBytes, widths);
}

/**
 * @param {CanvasRenderingContext2D} ctx @param {import('../model/scale.js').TimeScale} scale
 * @param {MemorySeries} s @param {number} top @param {(v: number) => number} yOf
 * @param {import('../model/lod.js').TextWidthCache} widths
 */
function drawPeak(ctx, scale, s, top, yOf, widths) {
  const x = scale.tToX(s.peakAtUs);
  if (x < scale.x0Css - 1 || x > scale.x1Css + 1) return;
  ctx.strokeStyle = COLORS.stalled;
  ctx.setLineDash([4, 3]);
  ctx.beginPath();
  ctx.moveTo(Math.round(x) + 0.5, top + 2);
  ctx.lineTo(Math.round(x) + 0.5, top + BAND_H);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = COLORS.stalled;
  ctx.beginPath();
  ctx.arc(x, yOf(s.peakAllocated), 3, 0, 2 * Math.PI);
  ctx.fill();
  const text = fitLabel(`peak ${formatBytes(s.peakAllocated)}${s.peakOp ? ` \u00b7 ${s.peakOp}` : ''}`, 260, widths);
  const w = widths.width(text);
  const left = x + 6 + w > scale.x1Css ? x - 6 - w : x + 6;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText(text, left, top + 2);
}

/**
 * @param {CanvasRenderingContext2D} ctx @param {MemorySeries} s @param {number} top @param {number} widthCss
 * @param {number} maxBytes @param {import('../model/lod.js').TextWidthCache} widths
 */
function drawBandLabels(ctx, s, top, widthCss, maxBytes, widths) {
  ctx.fillStyle = COLORS.gutter;
  ctx.fillRect(0, top, GUTTER_W, BAND_H);
  ctx.fillStyle = COLORS.text;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText(fitLabel(`memory ${s.device}`, GUTTER_W - 12, widths), 6, top + 4);
  ctx.fillStyle = COLORS.axisText;
  ctx.fillText(`scale ${formatBytes(maxBytes)}`, 6, top + 20);
  ctx.fillStyle = 'rgba(30, 136, 229, 0.8)';
  ctx.fillText(fitLabel(`\u25a0 ${s.labels.allocatedShort}`, GUTTER_W - 12, widths), 6, top + 38);
  ctx.fillStyle = s.labels.recorded ? '#6a1b9a' : COLORS.axisText;
  ctx.fillText(fitLabel(s.labels.recorded ? '\u2014 reserved' : s.labels.reservedShort, GUTTER_W - 12, widths), 6, top + 54);
  ctx.strokeStyle = COLORS.gutterLine;
  ctx.beginPath();
  ctx.moveTo(0, top + BAND_H - 0.5);
  ctx.lineTo(widthCss, top + BAND_H - 0.5);
  ctx.moveTo(GUTTER_W - 0.5, top);
  ctx.lineTo(GUTTER_W - 0.5, top + BAND_H);
  ctx.stroke();
}
