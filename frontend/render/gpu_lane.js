// @ts-check
/**
 * A GPU lane (one device and stream): kernels, copies and sets; idle gaps are shaded beneath by gaps.js.
 */
import { LANE_PAD, ROW_H } from '../model/layout.js';
import { drawDepthRow } from './rows.js';

/**
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/lanes.js').Lane} lane
 * @param {import('../model/layout.js').LaneBlock} block
 * @param {number} yTopCss
 */
export function drawGpuLane(frame, lane, block, yTopCss) {
  const depths = Math.min(block.depths, lane.rows.length);
  for (let d = 0; d < depths; d++) {
    drawDepthRow(frame, lane, lane.rows[d], yTopCss + LANE_PAD / 2 + d * ROW_H);
  }
}
