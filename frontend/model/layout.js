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

/** A group's header row (with `groups: true`): its name, lane count and a collapse arrow. */
export const GROUP_H = 16;
export const GROUP_LABELS = /** @type {const} */ ({ pinned: 'Pinned', cpu: 'CPU threads', gpu: 'GPU' });

/**
 * @typedef {object} GroupBlock
 * @property {'pinned' | 'cpu' | 'gpu'} key
 * @property {string} label
 * @property {number} lanes lanes it holds
 * @property {number} yCss top of its header row, in content space
 * @property {boolean} collapsed only its header shows
 */

/** The group of a lane kind: GPU streams, or the host's threads and marker rows. @param {string} kind */
export function laneGroup(kind) {
  return kind === 'gpu' ? 'gpu' : 'cpu';
}

/**
 * Stacks lanes: CPU-like lanes first (in the given order), then GPU lanes, as a profiler reads top
 * to bottom (the CPU asks, the GPU runs). Collapsed lanes show their depth-0 row only; lanes without
 * complete events (`maxDepth` -1) take no room.
 *
 * With `groups`, each group (pinned lanes, CPU threads, GPU) gets a header row and can be collapsed
 * to it; pinned lanes (ids in pin order) leave their group for the top.
 *
 * With `countersHCss`, that much room is left for the counter lanes right under the last GPU lane shown
 * (pinned or not; at the end without one), at `countersYCss`.
 * @param {{id: number, kind: string, label: string, maxDepth: number}[]} lanes
 * @param {Set<number>} collapsed lane ids
 * @param {{groups?: boolean, pinned?: number[], closedGroups?: Set<string>, countersHCss?: number}} [opts]
 * @returns {{blocks: LaneBlock[], heightCss: number, groups: GroupBlock[], countersYCss: number}}
 */
export function layoutLanes(lanes, collapsed, opts = {}) {
  const order = lanes.map((lane, index) => ({ lane, index })).filter(({ lane }) => lane.maxDepth >= 0);
  order.sort((a, b) => Number(a.lane.kind === 'gpu') - Number(b.lane.kind === 'gpu') || a.index - b.index);
  const pinnedIds = opts.pinned ?? [];
  const pinRank = new Map(pinnedIds.map((id, k) => [id, k]));
  /** @type {[GroupBlock['key'], typeof order][]} */
  const sections = opts.groups
    ? [['pinned', order.filter((x) => pinRank.has(x.lane.id)).sort((a, b) => (pinRank.get(a.lane.id) ?? 0) - (pinRank.get(b.lane.id) ?? 0))],
      ['cpu', order.filter((x) => !pinRank.has(x.lane.id) && laneGroup(x.lane.kind) === 'cpu')],
      ['gpu', order.filter((x) => !pinRank.has(x.lane.id) && laneGroup(x.lane.kind) === 'gpu')]]
    : [['cpu', order]];
  /** @type {LaneBlock[]} */
  const blocks = [];
  /** @type {GroupBlock[]} */
  const groups = [];
  let yCss = 0;
  for (const [key, members] of sections) {
    if (opts.groups) {
      if (members.length === 0) continue;
      const closed = Boolean(opts.closedGroups?.has(key));
      groups.push({ key, label: GROUP_LABELS[key], lanes: members.length, yCss, collapsed: closed });
      yCss += GROUP_H;
      if (closed) continue;
    }
    for (const { lane, index } of members) {
      const collapsible = lane.maxDepth > 0;
      const isCollapsed = collapsible && collapsed.has(lane.id);
      const depths = isCollapsed ? 1 : lane.maxDepth + 1;
      const hCss = depths * ROW_H + LANE_PAD;
      blocks.push({ laneId: lane.id, index, kind: lane.kind, label: lane.label, yCss, hCss, depths,
        collapsed: isCollapsed, collapsible });
      yCss += hCss;
    }
  }
  return makeRoom({ blocks, heightCss: yCss, groups, countersYCss: yCss }, opts.countersHCss ?? 0);
}

/**
 * Moves every block and group header below the last GPU lane down by hCss, for the counter lanes.
 * @param {{blocks: LaneBlock[], heightCss: number, groups: GroupBlock[], countersYCss: number}} layout
 * @param {number} hCss
 */
function makeRoom(layout, hCss) {
  if (!(hCss > 0)) return layout;
  const gpu = layout.blocks.filter((b) => b.kind === 'gpu');
  const at = gpu.length ? Math.max(...gpu.map((b) => b.yCss + b.hCss)) : layout.heightCss;
  for (const b of layout.blocks) if (b.yCss >= at) b.yCss += hCss;
  for (const g of layout.groups) if (g.yCss >= at) g.yCss += hCss;
  return { ...layout, heightCss: layout.heightCss + hCss, countersYCss: at };
}

/**
 * The group whose header row is at y (content space), or -1.
 * @param {GroupBlock[]} groups @param {number} yCss
 */
export function groupAtY(groups, yCss) {
  return groups.findIndex((g) => yCss >= g.yCss && yCss < g.yCss + GROUP_H);
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

/**
 * The GPU lanes to pin on top by default: those that fit, when the first GPU lane would not show in
 * full without scrolling (neither the page nor the canvas), else none. `roomCss` is the height of lane
 * content visible on load: the window's height below the canvas's top (the sticky page header above it
 * counted), capped by the canvas's own height, less the canvas's pinned rows (HEADER_H).
 * @param {{id: number, kind: string, label: string, maxDepth: number}[]} lanes
 * @param {Set<number>} collapsed lane ids
 * @param {number} roomCss
 * @param {number} maxPins at most this many
 * @returns {number[]} lane ids, in lane order
 */
export function defaultPins(lanes, collapsed, roomCss, maxPins) {
  const layout = layoutLanes(lanes, collapsed, { groups: true });
  const gpu = layout.blocks.filter((b) => b.kind === 'gpu');
  if (!gpu.length || gpu[0].yCss + gpu[0].hCss <= roomCss) return [];
  return gpu.slice(0, Math.max(1, maxPins)).map((b) => b.laneId);
}
