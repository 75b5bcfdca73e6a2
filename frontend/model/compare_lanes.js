// @ts-check
/**
 * The Compare panel's stacked lanes: the baseline's and the candidate's event lanes on one time axis on
 * which step k of each side starts at t = 0. Which spans each side draws, where its step k starts in its
 * own clock, the window each side asks the `lanes` route for, which lanes are shown and where they sit.
 * Pure: no DOM.
 *
 * Times on the shared axis are "relative": µs from the start of the aligned step. A side's own clock is
 * the span's (µs from its trace start, as every route answers); own = relative + anchor.
 */
import { LANE_PAD, ROW_H, layoutLanes } from './layout.js';
import { blockAtY, hitInterval } from './hit.js';
import { depthAtY } from './layout.js';
import { clampWindow } from './scale.js';

/** GPU streams shown per side (the first in the model's order: device, then stream). */
export const MAX_GPU_LANES = 6;
/** CPU threads shown per side: the busiest in the aligned step. */
export const MAX_CPU_LANES = 2;
/** Nesting rows shown per CPU thread (the rest of a deep stack is below the view's interest). */
export const MAX_DEPTH_ROWS = 6;
/** The side's name row, then its step bar and DataLoader row (render/steps.js). */
export const SIDE_H = 18;
export const SIDE_STEPS_H = 31;
/** Space around the aligned step in the first view, as a share of the longer step. */
export const PAD_FRAC = 0.03;

/** @typedef {'base' | 'cand'} SideKey */
/** @typedef {{t0Us: number, t1Us: number}} Window */

/**
 * @typedef {object} SideSpec one side of the stacked view
 * @property {SideKey} side
 * @property {string} title `baseline` or `candidate`
 * @property {string} label what the side is (run / worker / span, or the run and the worker shown)
 * @property {string[]} spans span ids whose steps are concatenated, in time order
 * @property {string[]} names the spans as the selectors name them (`span 1623143089861`)
 */

/**
 * The spans each side draws, or null when there is nothing to compare. A span side draws that span; a
 * run side draws one worker (rank) of the run, its spans in listing (time) order, steps concatenated as
 * the `compare` route counts them: the candidate run the worker on screen, the baseline run the worker
 * of the same name, else its first.
 * @param {{base: string, candRun?: boolean} | null | undefined} compare
 * @param {{id: string, run: string, worker: string} | null | undefined} span the span on screen
 * @param {import('./runs.js').RunInfo[]} runs
 * @returns {SideSpec[] | null}
 */
export function laneSides(compare, span, runs) {
  if (!compare || !span || typeof compare.base !== 'string') return null;
  /** @param {string} run @param {string} preferred */
  const workerOf = (run, preferred) => {
    const r = runs.find((x) => x.name === run);
    if (!r || r.workers.length === 0) return null;
    return r.workers.find((w) => w.name === preferred) ?? r.workers[0];
  };
  /** @param {import('./runs.js').SpanInfo} s */
  const spanName = (s) => `span ${s.span ?? s.index}`;
  /** @param {string} id */
  const spanLabel = (id) => {
    for (const r of runs) {
      for (const w of r.workers) {
        const s = w.spans.find((x) => x.id === id);
        if (s) return `${r.name} / ${w.name} / ${spanName(s)}`;
      }
    }
    return `span ${id}`;
  };
  /** @type {SideSpec | null} */
  let base = null;
  if (compare.base.startsWith('span:')) {
    const id = compare.base.slice(5);
    base = { side: 'base', title: 'baseline', label: spanLabel(id), spans: [id], names: [''] };
  } else if (compare.base.startsWith('run:')) {
    const run = compare.base.slice(4);
    const w = workerOf(run, span.worker);
    if (w && w.spans.length) {
      base = { side: 'base', title: 'baseline', label: `run ${run} / ${w.name}`, spans: w.spans.map((s) => s.id), names: w.spans.map(spanName) };
    }
  }
  /** @type {SideSpec | null} */
  let cand = { side: 'cand', title: 'candidate', label: spanLabel(span.id), spans: [span.id], names: [''] };
  if (compare.candRun) {
    const w = workerOf(span.run, span.worker);
    cand = w && w.spans.length
      ? { side: 'cand', title: 'candidate', label: `run ${span.run} / ${w.name}`, spans: w.spans.map((s) => s.id), names: w.spans.map(spanName) } : null;
  }
  return base && cand ? [base, cand] : null;
}

/**
 * @typedef {object} SpanSteps what the stacked view needs of a span (from its `summary`)
 * @property {number} durationUs
 * @property {number[]} startUs its steps' starts, in time order
 * @property {number[]} durUs
 * @property {string[]} names
 */

/** @param {any} summary the `summary` route's answer @returns {SpanSteps} */
export function spanSteps(summary) {
  const steps = Array.isArray(summary?.steps) ? summary.steps : [];
  return { durationUs: Math.max(Number(summary?.duration_us) || 0, 1e-3), startUs: steps.map((/** @type {any} */ s) => Number(s.start_us)),
    durUs: steps.map((/** @type {any} */ s) => Number(s.dur_us)), names: steps.map((/** @type {any} */ s) => String(s.name)) };
}

/**
 * @typedef {object} Anchor where a side's aligned step is
 * @property {number} spanIndex which of the side's spans holds it
 * @property {number} anchorUs its start in that span's clock (t = 0 on the shared axis)
 * @property {number} stepUs its duration (the whole trace when the side has no steps)
 * @property {string} stepName
 * @property {Window} bounds that span's trace, in its own clock
 * @property {boolean} fromSteps false: the side has no steps, aligned at its trace start
 */

/**
 * Step `k` (0-based, by position over the side's spans in order) of a side, or its last step when it has
 * fewer; a side with no steps at all is aligned at the start of its first span.
 * @param {SpanSteps[]} spans @param {number} k
 * @returns {Anchor | null}
 */
export function anchorAt(spans, k) {
  if (spans.length === 0) return null;
  const total = spans.reduce((n, s) => n + s.startUs.length, 0);
  if (total === 0) {
    const s = spans[0];
    return { spanIndex: 0, anchorUs: 0, stepUs: s.durationUs, stepName: 'trace start', bounds: { t0Us: 0, t1Us: s.durationUs }, fromSteps: false };
  }
  let left = Math.min(Math.max(Math.floor(k), 0), total - 1);
  for (let i = 0; i < spans.length; i++) {
    const s = spans[i];
    if (left < s.startUs.length) {
      return { spanIndex: i, anchorUs: s.startUs[left], stepUs: s.durUs[left], stepName: s.names[left] ?? '', bounds: { t0Us: 0, t1Us: s.durationUs },
        fromSteps: true };
    }
    left -= s.startUs.length;
  }
  return null; // not reached: k was clamped to the total
}

/**
 * The first view: the longer of the two aligned steps, with a little room on each side.
 * @param {Anchor[]} anchors
 * @returns {Window}
 */
export function defaultWindow(anchors) {
  const longest = Math.max(1, ...anchors.map((a) => a.stepUs));
  return { t0Us: -PAD_FRAC * longest, t1Us: (1 + PAD_FRAC) * longest };
}

/**
 * How far the shared axis may zoom out and pan: from the earliest trace start to the latest trace end,
 * both relative to their aligned step.
 * @param {Anchor[]} anchors
 * @returns {Window}
 */
export function relativeBounds(anchors) {
  if (anchors.length === 0) return { t0Us: 0, t1Us: 1 };
  return { t0Us: Math.min(...anchors.map((a) => a.bounds.t0Us - a.anchorUs)), t1Us: Math.max(...anchors.map((a) => a.bounds.t1Us - a.anchorUs)) };
}

/** A relative window in a side's own clock. @param {Window} win @param {Anchor} anchor @returns {Window} */
export function ownWindow(win, anchor) {
  return { t0Us: win.t0Us + anchor.anchorUs, t1Us: win.t1Us + anchor.anchorUs };
}

/**
 * The `lanes` request of a side for a relative view window: the window in the side's clock widened by
 * `marginFrac` of its span on each side and cut to the side's trace, at the view's resolution. Where
 * the side's trace lies wholly outside the view, the view's width of trace at its nearer end (a
 * layout and nearby data for the next pan).
 * @param {Window} win relative view window
 * @param {Anchor} anchor
 * @param {number} plotWidthCss
 * @param {number} marginFrac
 * @returns {{startUs: number, endUs: number, widthPx: number}}
 */
export function sideRequest(win, anchor, plotWidthCss, marginFrac) {
  const own = ownWindow(win, anchor);
  const span = own.t1Us - own.t0Us;
  const usPerPx = span / Math.max(1, plotWidthCss);
  const b = anchor.bounds;
  let startUs = Math.max(b.t0Us, own.t0Us - span * marginFrac);
  let endUs = Math.min(b.t1Us, own.t1Us + span * marginFrac);
  if (!(endUs > startUs)) ({ t0Us: startUs, t1Us: endUs } = clampWindow(own, b));
  const widthPx = Math.max(1, Math.min(10000, Math.round((endUs - startUs) / usPerPx)));
  return { startUs, endUs, widthPx };
}

/**
 * Whether a side's payload still serves a relative view: it covers the part of the view inside the side's
 * trace (nothing to cover: it serves) at most `tolerance` times coarser, and at most 4 times finer, than the view.
 * @param {{startUs: number, endUs: number, usPerPx: number}} payload
 * @param {Window} win @param {Anchor} anchor @param {number} plotWidthCss @param {number} tolerance
 */
export function sideServes(payload, win, anchor, plotWidthCss, tolerance) {
  const own = ownWindow(win, anchor);
  const t0 = Math.max(own.t0Us, anchor.bounds.t0Us);
  const t1 = Math.min(own.t1Us, anchor.bounds.t1Us);
  if (!(t1 > t0)) return true;
  const covers = Math.max(payload.startUs, anchor.bounds.t0Us) <= t0 + 1e-9 && Math.min(payload.endUs, anchor.bounds.t1Us) >= t1 - 1e-9;
  const ratio = payload.usPerPx / ((own.t1Us - own.t0Us) / Math.max(1, plotWidthCss));
  return covers && ratio <= tolerance && ratio >= 0.25;
}

/** CPU threads shown per side when all are asked for. */
export const MAX_ALL_CPU_LANES = 16;

/**
 * The CPU threads with events (anywhere in the trace), busiest first in a payload: the most depth-0 time
 * (merged blocks weighed by how much of them is covered), then the model's order.
 * @param {import('./lanes.js').Lane[]} lanes
 * @returns {number[]} lane ids
 */
export function busiestThreads(lanes) {
  return lanes.filter((l) => l.kind === 'cpu' && l.maxDepth >= 0).map((l) => {
    let us = 0;
    const row = l.rows[0];
    if (row) for (let k = 0; k < row.durUs.length; k++) us += row.durUs[k] * l.ev.fill[row.idx[k]];
    return { id: l.id, us };
  }).sort((a, b) => b.us - a.us).map((x) => x.id);
}

/**
 * Which lanes a side shows: its GPU streams with events (the first MAX_GPU_LANES) and its busiest CPU
 * threads (the first `maxCpu`, by default MAX_CPU_LANES, of `rank`: by default `busiestThreads` in this
 * payload; the view ranks them once, in its first answer, which is asked around the aligned step), nesting
 * cut at MAX_DEPTH_ROWS. Marker rows are left out.
 * @param {import('./lanes.js').Lane[]} lanes
 * @param {number} [maxCpu]
 * @param {number[]} [rank] thread ids, busiest first
 * @returns {number[]} lane ids, in the model's order
 */
export function pickLanes(lanes, maxCpu = MAX_CPU_LANES, rank = busiestThreads(lanes)) {
  const gpu = lanes.filter((l) => l.kind === 'gpu' && l.maxDepth >= 0).slice(0, MAX_GPU_LANES);
  const keep = new Set([...gpu.map((l) => l.id), ...rank.slice(0, maxCpu)]);
  return lanes.filter((l) => keep.has(l.id)).map((l) => l.id);
}

/**
 * @typedef {object} SideBlock a side's place in the stacked canvas (content y, from the top of the canvas)
 * @property {SideKey} side
 * @property {number} yCss top of its name row
 * @property {number} stepsYCss top of its step bar
 * @property {number} lanesYCss top of its first lane
 * @property {number} hCss everything it takes
 * @property {import('./layout.js').LaneBlock[]} blocks its lanes, `yCss` from lanesYCss
 */

/**
 * Stacks the sides from `topCss`: each a name row, a step bar and its chosen lanes (CPU threads, then GPU
 * streams; a collapsed thread shows its top row).
 * @param {{side: SideKey, lanes: import('./lanes.js').Lane[] | null, shown: number[]}[]} sides
 * @param {Set<string>} collapsed `${side}:${laneId}` of collapsed threads
 * @param {number} topCss
 * @returns {{sides: SideBlock[], heightCss: number}}
 */
export function stackLayout(sides, collapsed, topCss) {
  /** @type {SideBlock[]} */
  const out = [];
  let y = topCss;
  for (const s of sides) {
    const shown = new Set(s.shown);
    const lanes = (s.lanes ?? []).map((l) => ({ id: l.id, kind: l.kind, label: l.label,
      maxDepth: shown.has(l.id) ? Math.min(l.maxDepth, MAX_DEPTH_ROWS - 1) : -1 }));
    const ids = new Set([...collapsed].filter((k) => k.startsWith(`${s.side}:`)).map((k) => Number(k.slice(s.side.length + 1))));
    const { blocks, heightCss } = layoutLanes(lanes, ids);
    const lanesH = Math.max(heightCss, ROW_H + LANE_PAD);
    out.push({ side: s.side, yCss: y, stepsYCss: y + SIDE_H, lanesYCss: y + SIDE_H + SIDE_STEPS_H, hCss: SIDE_H + SIDE_STEPS_H + lanesH, blocks });
    y += SIDE_H + SIDE_STEPS_H + lanesH;
  }
  return { sides: out, heightCss: y };
}

/**
 * Threads to fold so that each side fits `maxSideHCss` (both sides then share the window): on each side
 * too tall, its shown threads fold to their top row, the last shown first, until it fits or none is
 * left to fold. GPU streams are never folded (they are one row).
 * @param {{side: SideKey, lanes: import('./lanes.js').Lane[] | null, shown: number[]}[]} sides
 * @param {Set<string>} collapsed `${side}:${laneId}` folded already (kept)
 * @param {number} maxSideHCss
 * @returns {Set<string>} a new set: `collapsed` and the folds added
 */
export function foldToFit(sides, collapsed, maxSideHCss) {
  const out = new Set(collapsed);
  for (const s of sides) {
    const shown = new Set(s.shown);
    const threads = (s.lanes ?? []).filter((l) => shown.has(l.id) && l.kind !== 'gpu' && l.maxDepth > 0).reverse();
    const height = () => stackLayout([s], out, 0).heightCss;
    for (const lane of threads) {
      if (height() <= maxSideHCss) break;
      out.add(`${s.side}:${lane.id}`);
    }
  }
  return out;
}

/**
 * @typedef {object} StackHit
 * @property {number} side index into the layout's sides, or -1
 * @property {'none' | 'name' | 'steps' | 'gutter' | 'lane'} area
 * @property {number} block index into that side's blocks, or -1
 * @property {number} depth
 * @property {number} event index into the lane's columns, or -1
 * @property {number} tUs the pointer's time in that side's own clock (NaN outside a side)
 */

/**
 * What is under the pointer: which side, which of its lanes and rows, which event.
 * @param {{sides: SideBlock[]}} layout
 * @param {(import('./lanes.js').LanesData | null)[]} data per side, as the layout's sides
 * @param {{x0Css: number, xToT(x: number): number, usPerPx: number}} scale the relative scale
 * @param {Anchor[]} anchors per side
 * @param {number} xCss @param {number} yCss
 * @param {number} [slackPx]
 * @returns {StackHit}
 */
export function hitStack(layout, data, scale, anchors, xCss, yCss, slackPx = 3) {
  /** @type {StackHit} */
  const hit = { side: -1, area: 'none', block: -1, depth: -1, event: -1, tUs: NaN };
  const side = layout.sides.findIndex((s) => yCss >= s.yCss && yCss < s.yCss + s.hCss);
  if (side < 0 || !anchors[side]) return hit;
  const s = layout.sides[side];
  const tUs = scale.xToT(xCss) + anchors[side].anchorUs;
  if (yCss < s.stepsYCss) return { ...hit, side, area: 'name', tUs };
  if (yCss < s.lanesYCss) return { ...hit, side, area: 'steps', tUs };
  const block = blockAtY(s.blocks, yCss - s.lanesYCss);
  if (block < 0) return { ...hit, side, tUs };
  if (xCss < scale.x0Css) return { ...hit, side, area: 'gutter', block, tUs };
  const d = data[side];
  const b = s.blocks[block];
  const lane = d?.lanes[b.index];
  const depth = depthAtY(b, yCss - s.lanesYCss);
  const row = depth >= 0 ? lane?.rows[depth] : undefined;
  let event = -1;
  if (row) {
    const k = hitInterval(row.startUs, row.durUs, row.maxDurUs, tUs, slackPx * scale.usPerPx);
    if (k >= 0) event = row.idx[k];
  }
  return { side, area: 'lane', block, depth, event, tUs };
}

/**
 * The aligned step shown (1-based) for a stored choice and the steps both sides have.
 * @param {unknown} step @param {number} matched
 */
export function clampStep(step, matched) {
  const n = Math.max(1, Math.floor(matched) || 1);
  const k = Math.round(Number(step));
  return Number.isFinite(k) ? Math.min(Math.max(k, 1), n) : 1;
}
