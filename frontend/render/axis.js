// @ts-check
/**
 * The time axis (pinned at the top) and its grid lines across the lanes.
 */
import { formatTick } from '../model/format.js';
import { AXIS_H } from '../model/layout.js';
import { niceTicks } from '../model/scale.js';
import { COLORS } from './frame.js';

/** About one tick per this many CSS pixels: room for a label such as "1.23455 s". */
const TICK_SPACING_PX = 110;

/**
 * @param {import('../model/scale.js').TimeScale} scale
 */
export function axisTicks(scale) {
  return niceTicks(scale, Math.max(1, (scale.x1Css - scale.x0Css) / TICK_SPACING_PX));
}

/**
 * Vertical grid lines from `y0Css` to `y1Css`.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('../model/scale.js').TimeScale} scale
 * @param {number} y0Css @param {number} y1Css
 */
export function drawGrid(ctx, scale, y0Css, y1Css) {
  ctx.strokeStyle = COLORS.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const tUs of axisTicks(scale).valuesUs) {
    const x = Math.round(scale.tToX(tUs)) + 0.5;
    ctx.moveTo(x, y0Css);
    ctx.lineTo(x, y1Css);
  }
  ctx.stroke();
}

/**
 * Tick labels on a white band of height AXIS_H at y=0.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import('../model/scale.js').TimeScale} scale
 * @param {number} widthCss
 */
export function drawAxis(ctx, scale, widthCss) {
  ctx.fillStyle = COLORS.background;
  ctx.fillRect(0, 0, widthCss, AXIS_H);
  const { stepUs, valuesUs } = axisTicks(scale);
  const ref = Math.max(Math.abs(scale.t0Us), Math.abs(scale.t1Us));
  ctx.fillStyle = COLORS.axisText;
  ctx.strokeStyle = COLORS.gutterLine;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  ctx.beginPath();
  for (const tUs of valuesUs) {
    const x = Math.round(scale.tToX(tUs)) + 0.5;
    ctx.moveTo(x, AXIS_H - 5);
    ctx.lineTo(x, AXIS_H);
    ctx.fillText(formatTick(tUs, stepUs, ref), x + 3, AXIS_H / 2);
  }
  ctx.moveTo(0, AXIS_H - 0.5);
  ctx.lineTo(widthCss, AXIS_H - 0.5);
  ctx.stroke();
}
