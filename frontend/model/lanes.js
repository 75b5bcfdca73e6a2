// @ts-check
/**
 * Turns a `lanes` response into draw-ready columns: per lane, one row per nesting depth, each with
 * its events sorted by start in typed arrays (so drawing and hit-testing bisect them). Pure.
 */

/**
 * One nesting depth of a lane. `idx` maps back to the lane's columns.
 * @typedef {object} DepthRow
 * @property {Int32Array} idx
 * @property {Float64Array} startUs
 * @property {Float64Array} durUs
 * @property {number} maxDurUs
 */

/**
 * @typedef {object} Lane
 * @property {number} id
 * @property {string} kind 'cpu' | 'gpu' | other lane kinds drawn like CPU lanes
 * @property {string} label
 * @property {number | null} device GPU lanes
 * @property {number | null} stream GPU lanes
 * @property {number} maxDepth
 * @property {{row: Int32Array | number[], startUs: Float64Array, durUs: Float64Array, depth: Int32Array,
 *   name: Int32Array, kind: string[], count: Int32Array, fill: Float32Array}} ev
 * @property {DepthRow[]} rows
 */

/**
 * @typedef {object} LanesData
 * @property {number} startUs the fetched window
 * @property {number} endUs
 * @property {number} usPerPx
 * @property {string[]} names
 * @property {Lane[]} lanes
 * @property {number} lanesHidden lanes of the trace the answer leaves out (the threads with the fewest events)
 * @property {number} lanesTotal
 * @property {{device: number[], startUs: number[], endUs: number[], cause: string[]}} gaps
 * @property {{name: string[], startUs: number[], endUs: number[], stalled: boolean[],
 *   dataloader: {startUs: number[], endUs: number[]}}} steps
 * @property {{launchRow: number[], gpuRow: number[], launchUs: number[], gpuUs: number[],
 *   launchLane: number[], gpuLane: number[], launchDepth: number[], gpuDepth: number[]}} flows
 * @property {boolean} analysed false for an answer given before the analyses ended (no gaps or steps yet)
 * @property {import('./counters.js').Counters} counters the counter lanes drawn under the GPU lanes
 */

import { prepareCounters } from './counters.js';
import { formatCount } from './format.js';

/** @param {any} v @returns {any[]} */
const arr = (v) => (Array.isArray(v) ? v : []);

/**
 * Splits a lane's events by depth; within a depth, events are sorted by start.
 * @param {Float64Array} startUs @param {Float64Array} durUs @param {Int32Array} depth
 * @returns {DepthRow[]}
 */
export function splitByDepth(startUs, durUs, depth) {
  let maxDepth = -1;
  for (let i = 0; i < depth.length; i++) if (depth[i] > maxDepth) maxDepth = depth[i];
  /** @type {number[][]} */
  const members = Array.from({ length: maxDepth + 1 }, () => []);
  for (let i = 0; i < depth.length; i++) if (depth[i] >= 0) members[depth[i]].push(i);
  return members.map((list) => {
    list.sort((a, b) => startUs[a] - startUs[b] || durUs[b] - durUs[a]);
    const idx = Int32Array.from(list);
    const s = new Float64Array(idx.length);
    const d = new Float64Array(idx.length);
    let maxDurUs = 0;
    for (let k = 0; k < idx.length; k++) {
      s[k] = startUs[idx[k]];
      d[k] = durUs[idx[k]];
      if (d[k] > maxDurUs) maxDurUs = d[k];
    }
    return { idx, startUs: s, durUs: d, maxDurUs };
  });
}

/**
 * @param {any} raw one entry of the response's `lanes`
 * @returns {Lane}
 */
function prepareLane(raw) {
  const e = raw.events || {};
  const n = arr(e.start_us).length;
  const startUs = Float64Array.from(arr(e.start_us));
  const durUs = Float64Array.from(arr(e.dur_us), (v) => (v > 0 ? v : 0));
  const depth = arr(e.depth).length === n ? Int32Array.from(arr(e.depth)) : new Int32Array(n);
  const count = arr(e.count).length === n ? Int32Array.from(arr(e.count)) : new Int32Array(n).fill(1);
  const name = arr(e.name).length === n ? Int32Array.from(arr(e.name)) : new Int32Array(n).fill(-1);
  const row = arr(e.row).length === n ? arr(e.row) : new Array(n).fill(-1);
  const kind = arr(e.kind).length === n ? arr(e.kind).map(String) : new Array(n).fill('');
  // `fill`: the busy fraction of a merged block (1 for single events), drawn as its opacity.
  const fill = arr(e.fill).length === n ? Float32Array.from(arr(e.fill)) : new Float32Array(n).fill(1);
  const ev = { row, startUs, durUs, depth, name, kind, count, fill };
  return {
    id: Number(raw.id),
    kind: String(raw.kind ?? 'cpu'),
    label: String(raw.label ?? `lane ${raw.id}`),
    device: raw.device ?? null,
    stream: raw.stream ?? null,
    maxDepth: Number.isFinite(Number(raw.max_depth)) ? Number(raw.max_depth) : 0,
    ev,
    rows: splitByDepth(startUs, durUs, depth),
  };
}

/**
 * @param {any} body the `lanes` route's JSON
 * @returns {LanesData}
 */
export function prepareLanes(body) {
  const g = body.gaps || {};
  const s = body.steps || {};
  const dl = s.dataloader || {};
  const f = body.flows || {};
  return {
    startUs: Number(body.start_us),
    endUs: Number(body.end_us),
    usPerPx: Number(body.us_per_px),
    names: arr(body.names).map(String),
    lanes: arr(body.lanes).map(prepareLane),
    lanesHidden: Number(body.lanes_hidden) || 0,
    lanesTotal: Number(body.lanes_total) || arr(body.lanes).length,
    gaps: { device: arr(g.device), startUs: arr(g.start_us), endUs: arr(g.end_us), cause: arr(g.cause) },
    steps: {
      name: arr(s.name).map(String),
      startUs: arr(s.start_us),
      endUs: arr(s.end_us),
      stalled: arr(s.stalled),
      dataloader: { startUs: arr(dl.start_us), endUs: arr(dl.end_us) },
    },
    flows: {
      launchRow: arr(f.launch_row),
      gpuRow: arr(f.gpu_row),
      launchUs: arr(f.launch_us),
      gpuUs: arr(f.gpu_us),
      launchLane: arr(f.launch_lane),
      gpuLane: arr(f.gpu_lane),
      launchDepth: arr(f.launch_depth),
      gpuDepth: arr(f.gpu_depth),
    },
    analysed: body.analysed !== false,
    counters: prepareCounters(body.counters),
  };
}

/**
 * The name of event `i` of a lane: merged coverage blocks have none.
 * @param {LanesData} data @param {Lane} lane @param {number} i
 */
export function eventName(data, lane, i) {
  const k = lane.ev.name[i];
  if (lane.ev.count[i] > 1 || k < 0) return `${formatCount(lane.ev.count[i])} events`;
  return data.names[k] ?? '';
}
