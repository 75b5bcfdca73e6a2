// @ts-check
/**
 * Vertical layout of the lanes canvas: which lane and depth row sits at which y. Pure.
 *
 *   y=0        time axis            (pinned)
 *              steps / DataLoader   (pinned)
 *   scrollTop  lane 0 depth 0..n    (scrolled by scrollYCss)
 *              lane 1 ...
 */

/**
 * @typedef {object} LaneBlock
 * @property {number} laneId
 * @property {number} index position in the lanes list
 * @property {string} kind
 * @property {string} label
 * @property {number} yCss top, in content space (before scrolling)
 * @property {number} hCss
 * @property {number} depths depth rows shown (1 when collapsed)
 * @property {boolean} collapsed
 * @property {boolean} collapsible
 */

/** Geometry in CSS pixels, shared by drawing and hit-testing. */
export const ROW_H = 16;
export const LANE_PAD = 6;
/** Lane labels on the left; the plot (and every chart sharing its time axis) starts here. */
export const GUTTER_W = 190;
export const RIGHT_PAD = 10;
export const AXIS_H = 20;
export const STEP_H = 16;
export const LOADER_H = 11;
/** Pinned rows above the scrolled lanes: axis, steps, DataLoader spans. */
export const HEADER_H = AXIS_H + STEP_H + LOADER_H + 5;

/**
 * Stacks lanes: CPU-like lanes first (in the given order), then GPU lanes, as a profiler reads top
 * to bottom (the CPU asks, the GPU runs). Collapsed lanes show their depth-0 row only; lanes without
 * complete events (`maxDepth` -1) take no room.
 * @param {{id: number, kind: string, label: string, maxDepth: number}[]} lanes
 * @param {Set<number>} collapsed lane ids
 * @returns {{blocks: LaneBlock[], heightCss: number}}
 */
export function layoutLanes(lanes, collapsed) {
  const order = lanes.map((lane, index) => ({ lane, index }));
  order.sort((a, b) => Number(a.lane.kind === 'gpu') - Number(b.lane.kind === 'gpu') || a.index - b.index);
  /** @type {LaneBlock[]} */
  const blocks = [];
  let yCss = 0;
  for (const { lane, index } of order) {
    if (!(lane.maxDepth >= 0)) continue;
    const collapsible = lane.maxDepth > 0;
    const isCollapsed = collapsible && collapsed.has(lane.id);
    const depths = isCollapsed ? 1 : lane.maxDepth + 1;
    const hCss = depths * ROW_H + LANE_PAD;
    blocks.push({ laneId: lane.id, index, kind: lane.kind, label: lane.label, yCss, hCss, depths,
      collapsed: isCollapsed, collapsible });
    yCss += hCss;
  }
  return { blocks, heightCss: yCss };
}

/**
 * Depth row under a y inside a block (content space), or -1 in the padding.
 * @param {LaneBlock} block @param {number} yCss
 */
export function depthAtY(block, yCss) {
  const d = Math.floor((yCss - block.yCss - LANE_PAD / 2) / ROW_H);
  return d >= 0 && d < block.depths ? d : -1;
}

/**
 * Clamps a vertical scroll offset so the last lane can reach the bottom but no further.
 * @param {number} scrollYCss @param {number} contentHCss @param {number} viewportHCss
 */
export function clampScroll(scrollYCss, contentHCss, viewportHCss) {
  return Math.max(0, Math.min(scrollYCss, contentHCss - viewportHCss));
}
