// @ts-check
/**
 * A CPU thread lane: ops nested by depth (depth 0 only when collapsed), DataLoader waits of stalled
 * steps outlined in red.
 */
import { LANE_PAD, ROW_H } from '../model/layout.js';
import { COLORS } from './frame.js';
import { drawDepthRow } from './rows.js';

/** The main-process DataLoader wait annotations, as the analyses recognise them (trace/kinds.py). */
const DATALOADER_PREFIXES = ['enumerate(DataLoader)#', 'enumerate(DataPipe)#'];

/** @param {string} name */
export function isDataLoaderName(name) {
  return DATALOADER_PREFIXES.some((p) => name.startsWith(p));
}

/**
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/lanes.js').Lane} lane
 * @param {import('../model/layout.js').LaneBlock} block
 * @param {number} yTopCss top of the lane on screen
 */
export function drawCpuLane(frame, lane, block, yTopCss) {
  const { ctx, data } = frame;
  /** @type {number[]} */
  const stalled = [];
  const onEvent = (/** @type {number} */ i, /** @type {number} */ x0, /** @type {number} */ x1) => {
    const name = data.names[lane.ev.name[i]];
    if (name && isDataLoaderName(name) && frame.stalledAt(lane.ev.startUs[i] + lane.ev.durUs[i] / 2)) stalled.push(x0, x1);
  };
  const depths = Math.min(block.depths, lane.rows.length);
  for (let d = 0; d < depths; d++) {
    const y = yTopCss + LANE_PAD / 2 + d * ROW_H;
    if (y > frame.heightCss || y + ROW_H < 0) continue;
    drawDepthRow(frame, lane, lane.rows[d], y, onEvent, () => {
      if (stalled.length) strokeStalled(ctx, stalled, y);
      stalled.length = 0;
    });
  }
}

/**
 * @param {CanvasRenderingContext2D} ctx
 * @param {number[]} spans flat (x0Css, x1Css) pairs
 * @param {number} yCss
 */
function strokeStalled(ctx, spans, yCss) {
  ctx.strokeStyle = COLORS.stalled;
  ctx.lineWidth = 2;
  for (let j = 0; j < spans.length; j += 2) ctx.strokeRect(spans[j] + 1, yCss + 1, spans[j + 1] - spans[j] - 2, ROW_H - 3);
}
