// @ts-check
/**
 * One frame of the Compare panel's stacked lanes: each side (its name row, step bar, lanes with gaps,
 * events, outlines and the dashed end of its aligned step, then its lane labels) drawn by the main lanes'
 * render modules with its own scale (the shared relative axis shifted by its aligned step's start), then
 * the line at 0 across both sides and the shared axis with its label.
 */
import { SIDE_H } from '../model/compare_lanes.js';
import { formatDuration, formatTimestamp } from '../model/format.js';
import { intervalAt } from '../model/lanes_hit.js';
import { AXIS_H, GUTTER_W, HEADER_H } from '../model/layout.js';
import { fitLabel } from '../model/lod.js';
import { TimeScale } from '../model/scale.js';
import { drawAxis, drawGrid } from './axis.js';
import { drawCpuLane } from './cpu_lane.js';
import { COLORS, FONT } from './frame.js';
import { drawGaps } from './gaps.js';
import { drawGpuLane } from './gpu_lane.js';
import { outline } from './lanes.js';
import { drawStepBar } from './steps.js';

/** The aligned steps' start, drawn across both sides, and each side's aligned step end. */
const ALIGN_COLOR = '#1e88e5';

/**
 * @typedef {object} CompareFrame what a frame of the stacked lanes draws with
 * @property {CanvasRenderingContext2D} ctx in CSS pixels
 * @property {TimeScale} scale the shared axis: relative time (0 at each side's aligned step) onto the plot
 * @property {number} widthCss
 * @property {number} heightCss
 * @property {import('../model/lod.js').TextWidthCache} widths label widths in FONT
 */

/**
 * @typedef {object} CompareSide one side as drawn
 * @property {import('../model/compare_lanes.js').SideBlock | null} block its place in the stack (null: not laid out, not drawn)
 * @property {import('../model/compare_lanes.js').SideSpec} spec
 * @property {import('../model/compare_lanes.js').Anchor} anchor
 * @property {import('../model/lanes.js').LanesData | null} data its latest `lanes` answer (null: only the name row)
 * @property {import('./lanes.js').EventBox | null} hover the hovered event on this side, in the side's clock
 * @property {import('./lanes.js').EventBox | null} selected the selected event on this side, in the side's clock
 */

/**
 * @param {CompareFrame} frame
 * @param {CompareSide[]} sides baseline first; none: the background only
 * @param {string} axisLabel what the axis counts from, in the gutter above the labels
 */
export function drawCompareLanes(frame, sides, axisLabel) {
  const { ctx, scale, widthCss, heightCss, widths } = frame;
  ctx.font = FONT;
  ctx.fillStyle = COLORS.background;
  ctx.fillRect(0, 0, widthCss, heightCss);
  if (!sides.length) return;
  for (const side of sides) drawSide(frame, side);
  // t = 0: where both aligned steps start.
  const x0 = scale.tToX(0);
  if (x0 >= GUTTER_W && x0 <= scale.x1Css) {
    ctx.fillStyle = ALIGN_COLOR;
    ctx.fillRect(Math.round(x0) - 1, AXIS_H, 2, heightCss - AXIS_H);
  }
  drawAxis(ctx, scale, widthCss);
  ctx.fillStyle = COLORS.gutter;
  ctx.fillRect(0, 0, GUTTER_W, AXIS_H - 1);
  ctx.fillStyle = COLORS.axisText;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(fitLabel(axisLabel, GUTTER_W - 12, widths), 6, AXIS_H / 2);
}

/**
 * What a side's name row says: which side, what it is, and where its aligned step starts.
 * @param {import('../model/compare_lanes.js').SideSpec} spec @param {import('../model/compare_lanes.js').Anchor} anchor
 */
function heading(spec, anchor) {
  const where = anchor.fromSteps ? `${anchor.stepName} (${formatDuration(anchor.stepUs)}) starts at ${formatTimestamp(anchor.anchorUs)}`
    : 'no steps: aligned at the trace start';
  const which = spec.names[anchor.spanIndex] ? ` (${spec.names[anchor.spanIndex]})` : '';
  return `${spec.title}: ${spec.label}${which} \u00b7 ${where}`;
}

/**
 * One side: its name row, its step bar, its lanes (gaps shaded, events, the hovered and selected
 * outlines, the dashed end of its aligned step) and their labels.
 * @param {CompareFrame} frame @param {CompareSide} side
 */
function drawSide(frame, side) {
  const { ctx, widthCss, heightCss, widths } = frame;
  const s = side.block;
  if (!s) return;
  const a = side.anchor;
  const scale = new TimeScale(frame.scale.t0Us + a.anchorUs, frame.scale.t1Us + a.anchorUs, frame.scale.x0Css, frame.scale.x1Css);
  ctx.fillStyle = COLORS.laneAlt;
  ctx.fillRect(0, s.yCss, widthCss, SIDE_H);
  ctx.fillStyle = COLORS.text;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.font = `600 ${FONT}`;
  ctx.fillText(fitLabel(heading(side.spec, a), widthCss - 12, widths), 6, s.yCss + SIDE_H / 2);
  ctx.font = FONT;
  ctx.strokeStyle = COLORS.gutterLine;
  ctx.beginPath();
  ctx.moveTo(0, s.yCss + 0.5);
  ctx.lineTo(widthCss, s.yCss + 0.5);
  ctx.stroke();
  const data = side.data;
  if (!data) return;
  /** @type {import('./frame.js').Frame} */
  const sideFrame = { ctx, scale, widthCss, heightCss, data, widths, scrollYCss: HEADER_H - s.lanesYCss,
    stalledAt: (tUs) => {
      const k = intervalAt(data.steps.startUs, data.steps.endUs, tUs);
      return k >= 0 && Boolean(data.steps.stalled[k]);
    } };
  ctx.save();
  ctx.translate(0, s.stepsYCss - AXIS_H);
  drawStepBar(sideFrame);
  ctx.restore();
  const lanesH = s.hCss - (s.lanesYCss - s.yCss);
  ctx.save();
  ctx.beginPath();
  ctx.rect(GUTTER_W, s.lanesYCss, widthCss - GUTTER_W, lanesH);
  ctx.clip();
  ctx.fillStyle = COLORS.laneAlt;
  s.blocks.forEach((b, k) => {
    if (k % 2) ctx.fillRect(GUTTER_W, s.lanesYCss + b.yCss, widthCss - GUTTER_W, b.hCss);
  });
  drawGrid(ctx, frame.scale, s.lanesYCss, s.lanesYCss + lanesH);
  drawGaps(sideFrame, s.blocks);
  for (const b of s.blocks) {
    const lane = data.lanes[b.index];
    if (lane.kind === 'gpu') drawGpuLane(sideFrame, lane, b, s.lanesYCss + b.yCss);
    else drawCpuLane(sideFrame, lane, b, s.lanesYCss + b.yCss);
  }
  const byLane = new Map(s.blocks.map((b) => [b.laneId, b]));
  if (side.hover) outline(sideFrame, byLane, side.hover, COLORS.hover, 1);
  if (side.selected) outline(sideFrame, byLane, side.selected, COLORS.selection, 2);
  // The end of the aligned step, dashed, on this side only.
  const xEnd = scale.tToX(a.anchorUs + a.stepUs);
  if (a.fromSteps && xEnd >= GUTTER_W && xEnd <= scale.x1Css) {
    ctx.strokeStyle = ALIGN_COLOR;
    ctx.lineWidth = 1;
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(Math.round(xEnd) + 0.5, s.lanesYCss);
    ctx.lineTo(Math.round(xEnd) + 0.5, s.lanesYCss + lanesH);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  ctx.restore();
  drawLabels(frame, s);
}

/**
 * The lane labels of a side (a fold arrow on threads with nested rows) and the lanes' separators.
 * @param {CompareFrame} frame @param {import('../model/compare_lanes.js').SideBlock} s
 */
function drawLabels(frame, s) {
  const { ctx, widthCss, widths } = frame;
  const lanesH = s.hCss - (s.lanesYCss - s.yCss);
  ctx.fillStyle = COLORS.gutter;
  ctx.fillRect(0, s.lanesYCss, GUTTER_W, lanesH);
  ctx.strokeStyle = COLORS.gutterLine;
  ctx.lineWidth = 1;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  let previous = '';
  for (const b of s.blocks) {
    const yCss = s.lanesYCss + b.yCss;
    ctx.beginPath();
    ctx.moveTo(0, Math.round(yCss) + 0.5);
    ctx.lineTo(b.kind !== previous ? widthCss : GUTTER_W, Math.round(yCss) + 0.5);
    ctx.stroke();
    previous = b.kind;
    ctx.fillStyle = b.kind === 'gpu' ? COLORS.gpuLabel : COLORS.text;
    const arrow = b.collapsible ? (b.collapsed ? '\u25b8 ' : '\u25be ') : '  ';
    ctx.fillText(arrow + fitLabel(b.label, GUTTER_W - 24, widths), 6, yCss + 11);
  }
  ctx.beginPath();
  ctx.moveTo(GUTTER_W - 0.5, s.lanesYCss);
  ctx.lineTo(GUTTER_W - 0.5, s.lanesYCss + lanesH);
  ctx.stroke();
}
