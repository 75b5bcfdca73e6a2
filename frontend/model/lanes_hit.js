// @ts-check
/**
 * What is under the pointer in the lanes canvas, using the drawing's own geometry (layout.js) after
 * one inverse transform into data space. Pure.
 */
import { bisectRight, blockAtY, hitInterval } from './hit.js';
import { AXIS_H, GUTTER_W, HEADER_H, LOADER_H, STEP_H, depthAtY, groupAtY } from './layout.js';

/** The pin toggle at the right end of a lane's label. */
export const PIN_W = 16;

/** Hover slack around thin rectangles, in CSS pixels. */
const SLACK_PX = 3;

/**
 * @typedef {object} LanesHit
 * @property {'none' | 'gutter' | 'axis' | 'step' | 'loader' | 'lane' | 'group' | 'counter'} area
 * @property {number} tUs
 * @property {number} block index in layout.blocks, or -1
 * @property {number} depth
 * @property {number} event index into the lane's columns, or -1
 * @property {number} gap index into data.gaps, or -1
 * @property {number} step index into data.steps (or dataloader spans for 'loader'), or -1
 * @property {number} [group] index into layout.groups ('group')
 * @property {boolean} [pin] on a lane label's pin toggle ('gutter')
 * @property {number} [counterY] y from the top of the counter lanes under the last lane ('counter')
 */

/**
 * Index of the interval in unsorted-but-ordered columns (steps, DataLoader spans) containing tUs.
 * @param {ArrayLike<number>} startUs sorted ascending @param {ArrayLike<number>} endUs @param {number} tUs
 */
export function intervalAt(startUs, endUs, tUs) {
  const i = bisectRight(startUs, tUs) - 1;
  return i >= 0 && tUs < endUs[i] ? i : -1;
}

/**
 * @param {import('./lanes.js').LanesData} data
 * @param {{blocks: import('./layout.js').LaneBlock[], groups?: import('./layout.js').GroupBlock[], countersYCss?: number}} layout
 * @param {import('./scale.js').TimeScale} scale
 * @param {number} scrollYCss
 * @param {number} xCss
 * @param {number} yCss
 * @returns {LanesHit}
 */
export function hitTestLanes(data, layout, scale, scrollYCss, xCss, yCss) {
  const tUs = scale.xToT(xCss);
  /** @type {LanesHit} */
  const hit = { area: 'none', tUs, block: -1, depth: -1, event: -1, gap: -1, step: -1 };
  if (yCss < AXIS_H) return { ...hit, area: 'axis' };
  if (yCss < AXIS_H + STEP_H) {
    return { ...hit, area: 'step', step: xCss < GUTTER_W ? -1 : intervalAt(data.steps.startUs, data.steps.endUs, tUs) };
  }
  if (yCss < AXIS_H + STEP_H + LOADER_H) {
    const dl = data.steps.dataloader;
    return { ...hit, area: 'loader', step: xCss < GUTTER_W ? -1 : intervalAt(dl.startUs, dl.endUs, tUs) };
  }
  if (yCss < HEADER_H) return hit;
  const yContent = yCss - HEADER_H + scrollYCss;
  const group = groupAtY(layout.groups ?? [], yContent);
  if (group >= 0) return { ...hit, area: 'group', group };
  const block = blockAtY(layout.blocks, yContent);
  const counterY = yContent - (layout.countersYCss ?? Infinity);
  if (block < 0) return counterY >= 0 ? { ...hit, area: 'counter', counterY } : hit;
  if (xCss < GUTTER_W) return { ...hit, area: 'gutter', block, pin: xCss >= GUTTER_W - PIN_W };
  const b = layout.blocks[block];
  const lane = data.lanes[b.index];
  const depth = depthAtY(b, yContent);
  const row = depth >= 0 ? lane.rows[depth] : undefined;
  let event = -1;
  if (row) {
    const k = hitInterval(row.startUs, row.durUs, row.maxDurUs, tUs, SLACK_PX * scale.usPerPx);
    if (k >= 0) event = row.idx[k];
  }
  let gap = -1;
  if (event < 0 && lane.kind === 'gpu') {
    const g = data.gaps;
    for (let i = 0; i < g.startUs.length && gap < 0; i++) {
      if (g.device[i] === lane.device && g.startUs[i] <= tUs && tUs < g.endUs[i]) gap = i;
    }
  }
  return { ...hit, area: 'lane', block, depth, event, gap };
}
