// @ts-check
/**
 * One frame of the lanes canvas, back to front: lane backgrounds, grid, idle gaps, events per lane,
 * the selection's launch flows and outlines (clipped to the scrolled lanes area), then the pinned
 * axis and step bar, the lane labels and the scrollbar.
 */
import { flowsForSelection } from '../model/flows.js';
import { GUTTER_W, HEADER_H, LANE_PAD, ROW_H } from '../model/layout.js';
import { drawAxis, drawGrid } from './axis.js';
import { drawCounterLabels, drawCounterPlots } from './counters.js';
import { drawCpuLane } from './cpu_lane.js';
import { COLORS } from './frame.js';
import { drawFlows } from './flows.js';
import { drawGaps } from './gaps.js';
import { drawGpuLane } from './gpu_lane.js';
import { drawGutter, drawScrollbar } from './gutter.js';
import { drawStepBar } from './steps.js';

/** @typedef {{laneId: number, depth: number, startUs: number, endUs: number}} EventBox */

/**
 * @param {import('./frame.js').Frame} frame
 * @param {{blocks: import('../model/layout.js').LaneBlock[], heightCss: number, groups?: import('../model/layout.js').GroupBlock[],
 *   countersYCss?: number}} layout
 * @param {Map<number, import('../model/layout.js').LaneBlock>} byLane
 * @param {(import('../model/flows.js').Selection & EventBox) | null} sel
 * @param {EventBox | null} hover
 * @param {Set<number>} [pinned] lane ids pinned to the top
 */
export function drawLanes(frame, layout, byLane, sel, hover, pinned) {
  const { ctx, scale, widthCss, heightCss, data } = frame;
  ctx.save();
  ctx.beginPath();
  ctx.rect(GUTTER_W, HEADER_H, widthCss - GUTTER_W, heightCss - HEADER_H);
  ctx.clip();
  ctx.fillStyle = COLORS.laneAlt;
  layout.blocks.forEach((b, k) => {
    if (k % 2) ctx.fillRect(GUTTER_W, HEADER_H + b.yCss - frame.scrollYCss, widthCss - GUTTER_W, b.hCss);
  });
  drawGrid(ctx, scale, HEADER_H, heightCss);
  drawGaps(frame, layout.blocks);
  for (const b of layout.blocks) {
    const y = HEADER_H + b.yCss - frame.scrollYCss;
    if (y > heightCss || y + b.hCss < HEADER_H) continue;
    const lane = data.lanes[b.index];
    if (lane.kind === 'gpu') drawGpuLane(frame, lane, b, y);
    else drawCpuLane(frame, lane, b, y);
  }
  const countersY = HEADER_H + (layout.countersYCss ?? layout.heightCss) - frame.scrollYCss;  // under the last GPU lane
  drawCounterPlots(frame, countersY);
  drawFlows(frame, flowsForSelection(data.flows, sel), byLane);
  if (hover) outline(frame, byLane, hover, COLORS.hover, 1);
  if (sel) outline(frame, byLane, sel, COLORS.selection, 2);
  ctx.restore();
  drawAxis(ctx, scale, widthCss);
  drawStepBar(frame);
  drawGutter(frame, layout.blocks, layout.groups, pinned);
  drawCounterLabels(frame, countersY);
  drawScrollbar(frame, layout.heightCss);
}

/**
 * Outlines an event by its time and row, so it stays visible when the payload merged it (also the
 * Compare panel's stacked lanes, whose side frames scroll their lanes to the side's place).
 * @param {import('./frame.js').Frame} frame
 * @param {Map<number, import('../model/layout.js').LaneBlock>} byLane
 * @param {EventBox} ev @param {string} color @param {number} width
 */
export function outline(frame, byLane, ev, color, width) {
  const b = byLane.get(ev.laneId);
  if (!b) return;
  const depth = Math.min(ev.depth, b.depths - 1);
  const y = HEADER_H + b.yCss - frame.scrollYCss + LANE_PAD / 2 + depth * ROW_H;
  const x0 = frame.scale.tToX(ev.startUs);
  const x1 = Math.max(frame.scale.tToX(ev.endUs), x0 + 1);
  frame.ctx.strokeStyle = color;
  frame.ctx.lineWidth = width;
  frame.ctx.strokeRect(x0 - width / 2, y - width / 2, x1 - x0 + width, ROW_H - 1 + width);
}
