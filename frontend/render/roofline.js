// @ts-check
/**
 * The roofline chart, back to front: grid and axes (log ticks), the roofs (clipped to the plot, each labelled),
 * the points (largest first, so small ones stay on top), then the rings of the hovered and selected points.
 * Geometry comes from model/roofline.js `layoutChart`, which the hit test reads too.
 */
import { formatAxis, formatSig, roofSegments } from '../model/roofline.js';
import { logTicks125 } from '../model/scale.js';
import { COLORS } from './frame.js';

/** Tick labels are kept this far apart (CSS px): about "1,000" on x, one text line on y. */
const X_TICK_PX = 56;
const Y_TICK_PX = 26;
const POINT_ALPHA = 0.78;
/** A roof label's height (11 px font and a pixel apart). */
const LABEL_H = 13;

/**
 * @param {CanvasRenderingContext2D} ctx in CSS pixels, FONT set
 * @param {import('../model/roofline.js').Chart} chart
 * @param {{hover: number, selected: number}} marks indexes into `chart.placed` (-1: none)
 */
export function drawRoofline(ctx, chart, marks) {
  drawAxes(ctx, chart);
  ctx.save();
  ctx.beginPath();
  ctx.rect(chart.plot.left, chart.plot.top, chart.plot.right - chart.plot.left, chart.plot.bottom - chart.plot.top);
  ctx.clip();
  drawRoofs(ctx, chart);
  drawPoints(ctx, chart);
  ring(ctx, chart, marks.selected, COLORS.selection, 2.5);
  ring(ctx, chart, marks.hover, COLORS.hover, 1.5);
  ctx.restore();
}

/** @param {CanvasRenderingContext2D} ctx @param {import('../model/roofline.js').Chart} chart */
function drawAxes(ctx, chart) {
  const { plot, x, y } = chart;
  const xTicks = logTicks125(x.lo, x.hi, Math.max(1, Math.floor((plot.right - plot.left) / X_TICK_PX)));
  const yTicks = logTicks125(y.lo, y.hi, Math.max(1, Math.floor((plot.bottom - plot.top) / Y_TICK_PX)));
  ctx.fillStyle = COLORS.grid;
  for (const v of xTicks) ctx.fillRect(Math.round(x.toPx(v)), plot.top, 1, plot.bottom - plot.top);
  for (const v of yTicks) ctx.fillRect(plot.left, Math.round(y.toPx(v)), plot.right - plot.left, 1);
  ctx.strokeStyle = COLORS.gutterLine;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(plot.left - 0.5, plot.top);
  ctx.lineTo(plot.left - 0.5, plot.bottom + 0.5);
  ctx.lineTo(plot.right, plot.bottom + 0.5);
  ctx.stroke();
  ctx.fillStyle = COLORS.axisText;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const v of xTicks) ctx.fillText(formatAxis(v), x.toPx(v), plot.bottom + 4);
  ctx.fillText('arithmetic intensity (FLOP/byte)', (plot.left + plot.right) / 2, plot.bottom + 19);
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (const v of yTicks) ctx.fillText(formatAxis(v), plot.left - 6, y.toPx(v));
  ctx.save();
  ctx.translate(12, (plot.top + plot.bottom) / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'center';
  ctx.fillText('achieved TFLOP/s', 0, 0);
  ctx.restore();
  ctx.textAlign = 'left';
}

/** @param {CanvasRenderingContext2D} ctx @param {import('../model/roofline.js').Chart} chart */
function drawRoofs(ctx, chart) {
  const segments = roofSegments(chart);
  if (!segments.length || !chart.roofs) return;
  ctx.strokeStyle = COLORS.text;
  ctx.fillStyle = COLORS.text;
  ctx.lineWidth = 1.5;
  ctx.globalAlpha = 0.7;
  /** the bottom of the last roof label drawn (the lines come highest first) */
  let lastLabelBottom = chart.plot.top;
  for (const s of segments) {
    const [x0, y0, x1, y1] = [chart.x.toPx(s.from[0]), chart.y.toPx(s.from[1]), chart.x.toPx(s.to[0]), chart.y.toPx(s.to[1])];
    ctx.setLineDash(s.kind === 'compute' && s !== segments[1] ? [6, 4] : []);
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    ctx.lineTo(x1, y1);
    ctx.stroke();
    if (s.kind !== 'compute') continue;
    const peak = chart.roofs.compute.find((c) => c.dtype === s.dtype);
    // above its line, unless the plot's top or the label of the line above leaves no room there
    const below = y0 - 4 - LABEL_H < lastLabelBottom;
    ctx.textAlign = 'right';
    ctx.textBaseline = below ? 'top' : 'bottom';
    haloText(ctx, `${s.dtype} ${formatSig(peak?.tflops)} TFLOP/s`, chart.plot.right - 4, below ? y0 + 4 : y0 - 4);
    lastLabelBottom = below ? y0 + 4 + LABEL_H : y0 - 4;
  }
  ctx.setLineDash([]);
  slopeLabel(ctx, chart, segments[0]);
  ctx.globalAlpha = 1;
  ctx.textAlign = 'left';
}

/**
 * The bandwidth, written along the slope a fifth of the way into the plot (or where the slope enters it).
 * @param {CanvasRenderingContext2D} ctx @param {import('../model/roofline.js').Chart} chart
 * @param {{from: [number, number], to: [number, number]}} s
 */
function slopeLabel(ctx, chart, s) {
  const [x0, y0, x1, y1] = [chart.x.toPx(s.from[0]), chart.y.toPx(s.from[1]), chart.x.toPx(s.to[0]), chart.y.toPx(s.to[1])];
  if (x1 - x0 < 1) return;
  // where the slope crosses the plot's bottom, if it starts under it
  const tIn = y0 > chart.plot.bottom ? (y0 - chart.plot.bottom) / (y0 - y1) : 0;
  const t = Math.min(0.9, tIn + 0.2 * (1 - tIn));
  ctx.save();
  ctx.translate(x0 + t * (x1 - x0), y0 + t * (y1 - y0));
  ctx.rotate(Math.atan2(y1 - y0, x1 - x0));
  ctx.textAlign = 'left';
  ctx.textBaseline = 'bottom';
  haloText(ctx, `${formatSig(chart.roofs?.bandwidthTbps)} TB/s`, 4, -3);
  ctx.restore();
}

/**
 * Text over a halo of the background, so a roof's label reads over the points under it.
 * @param {CanvasRenderingContext2D} ctx @param {string} text @param {number} x @param {number} y
 */
function haloText(ctx, text, x, y) {
  const { strokeStyle, lineWidth } = ctx;
  ctx.strokeStyle = COLORS.background;
  ctx.lineWidth = 3;
  ctx.lineJoin = 'round';
  ctx.strokeText(text, x, y);
  ctx.strokeStyle = strokeStyle;
  ctx.lineWidth = lineWidth;
  ctx.fillText(text, x, y);
}

/** @param {CanvasRenderingContext2D} ctx @param {import('../model/roofline.js').Chart} chart */
function drawPoints(ctx, chart) {
  ctx.strokeStyle = COLORS.background;
  ctx.lineWidth = 1;
  for (const p of chart.placed) {
    ctx.beginPath();
    ctx.arc(p.xCss, p.yCss, p.rCss, 0, 2 * Math.PI);
    if (p.below) { // under the floor: an outline on the bottom edge
      ctx.strokeStyle = p.color;
      ctx.lineWidth = 1.5;
      ctx.stroke();
      ctx.strokeStyle = COLORS.background;
      ctx.lineWidth = 1;
      continue;
    }
    ctx.globalAlpha = POINT_ALPHA;
    ctx.fillStyle = p.color;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.stroke();
  }
}

/**
 * @param {CanvasRenderingContext2D} ctx @param {import('../model/roofline.js').Chart} chart
 * @param {number} k @param {string} color @param {number} width
 */
function ring(ctx, chart, k, color, width) {
  const p = chart.placed[k];
  if (!p) return;
  ctx.strokeStyle = color;
  ctx.lineWidth = width;
  ctx.beginPath();
  ctx.arc(p.xCss, p.yCss, p.rCss + width / 2 + 1.5, 0, 2 * Math.PI);
  ctx.stroke();
}
