// @ts-check
/**
 * GPU idle gaps, shaded across all lanes of their device and coloured by cause.
 */
import { gapColor } from '../model/colors.js';
import { HEADER_H } from '../model/layout.js';

/**
 * Vertical extent (screen CSS pixels) of each device's GPU lanes.
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/layout.js').LaneBlock[]} blocks
 * @returns {Map<number, [number, number]>}
 */
function deviceBands(frame, blocks) {
  /** @type {Map<number, [number, number]>} */
  const bands = new Map();
  for (const b of blocks) {
    const lane = frame.data.lanes[b.index];
    if (lane.kind !== 'gpu' || lane.device === null) continue;
    const y0 = HEADER_H + b.yCss - frame.scrollYCss;
    const band = bands.get(lane.device);
    bands.set(lane.device, band ? [Math.min(band[0], y0), Math.max(band[1], y0 + b.hCss)] : [y0, y0 + b.hCss]);
  }
  return bands;
}

/**
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/layout.js').LaneBlock[]} blocks
 */
export function drawGaps(frame, blocks) {
  const { ctx, scale, data } = frame;
  const bands = deviceBands(frame, blocks);
  const g = data.gaps;
  let last = '';
  for (let i = 0; i < g.startUs.length; i++) {
    const band = bands.get(g.device[i]);
    if (!band) continue;
    const x0 = Math.max(scale.tToX(g.startUs[i]), scale.x0Css);
    const x1 = Math.min(scale.tToX(g.endUs[i]), scale.x1Css);
    if (x1 <= x0 - 1) continue;
    const color = gapColor(g.cause[i]);
    if (color !== last) ctx.fillStyle = last = color;
    ctx.fillRect(x0, band[0], Math.max(x1 - x0, 1), band[1] - band[0]);
  }
}
