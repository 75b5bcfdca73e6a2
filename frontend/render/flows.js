// @ts-check
/**
 * Launch flows of the selection: a curve from the launch call on its CPU lane to the start of the
 * GPU activity, with an arrow head at the GPU end.
 */
import { HEADER_H, LANE_PAD, ROW_H } from '../model/layout.js';
import { COLORS } from './frame.js';

/**
 * Screen y of the middle of a lane's depth row (depth 0 when the lane is collapsed).
 * @param {Map<number, import('../model/layout.js').LaneBlock>} byLane
 * @param {number} laneId @param {number} depth @param {number} scrollYCss
 */
export function rowMidY(byLane, laneId, depth, scrollYCss) {
  const b = byLane.get(laneId);
  if (!b) return null;
  const d = Math.min(Math.max(depth || 0, 0), b.depths - 1);
  return HEADER_H + b.yCss - scrollYCss + LANE_PAD / 2 + d * ROW_H + ROW_H / 2;
}

/**
 * @param {import('./frame.js').Frame} frame
 * @param {number[]} which indices into frame.data.flows
 * @param {Map<number, import('../model/layout.js').LaneBlock>} byLane
 */
export function drawFlows(frame, which, byLane) {
  const { ctx, scale, data } = frame;
  const f = data.flows;
  ctx.strokeStyle = COLORS.flow;
  ctx.fillStyle = COLORS.flow;
  ctx.lineWidth = 1.5;
  for (const i of which) {
    const ya = rowMidY(byLane, f.launchLane[i], f.launchDepth[i], frame.scrollYCss);
    const yb = rowMidY(byLane, f.gpuLane[i], f.gpuDepth[i], frame.scrollYCss);
    if (ya === null || yb === null) continue;
    const xa = scale.tToX(f.launchUs[i]);
    const xb = scale.tToX(f.gpuUs[i]);
    const yEnd = yb - Math.sign(yb - ya) * (ROW_H / 2);
    const bend = (yEnd - ya) / 2;
    ctx.beginPath();
    ctx.moveTo(xa, ya);
    ctx.bezierCurveTo(xa, ya + bend, xb, yEnd - bend, xb, yEnd);
    ctx.stroke();
    const dir = Math.sign(yEnd - ya) || 1;
    ctx.beginPath();
    ctx.moveTo(xb, yEnd);
    ctx.lineTo(xb - 4, yEnd - 7 * dir);
    ctx.lineTo(xb + 4, yEnd - 7 * dir);
    ctx.closePath();
    ctx.fill();
  }
}
