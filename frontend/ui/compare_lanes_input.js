// @ts-check
/**
 * Mouse and keyboard on the Compare panel's stacked lanes: wheel zoom, drag pan and (while the canvas has
 * the focus, not the main lanes) W/S zoom, A/D pan and 0 back to the aligned steps through the shared
 * `pan_zoom_input.js`; here: hover names an event or a step, a click outlines an event (and selects it in
 * the main lanes when its side is the span on screen) or folds a thread, a double click zooms to an event,
 * Escape clears the outline.
 */
import { defaultWindow, relativeBounds } from '../model/compare_lanes.js';
import { MINUS, formatDuration, formatTimestamp } from '../model/format.js';
import { eventName } from '../model/lanes.js';
import { intervalAt } from '../model/lanes_hit.js';
import { windowAround } from '../model/scale.js';
import { attachPanZoom } from './pan_zoom_input.js';

/** @typedef {import('./compare_lanes.js').CompareLanes} CompareLanes */
/** @typedef {import('./compare_lanes.js').Marked} Marked */
/** @typedef {import('../model/compare_lanes.js').StackHit} StackHit */

/** No hit: what Escape clicks. @type {StackHit} */
const NOWHERE = { side: -1, area: 'none', block: -1, depth: -1, event: -1, tUs: NaN };

/** @param {CompareLanes} lanes */
export function attachCompareLanesInput(lanes) {
  const canvas = lanes.canvas;
  /** the pointer of the hover box, in the canvas */
  let pointer = { xCss: 0, yCss: 0 };
  const bounds = () => relativeBounds(lanes.sides.map((s) => s.anchor));
  // Keys act on this view while it has the focus (not on the main lanes): W/S zoom, A/D pan, 0 back to
  // the aligned steps, Escape clears the outline.
  canvas.addEventListener('keydown', attachPanZoom({
    canvas,
    ready: () => lanes.sides.length > 0,
    win: () => lanes.win,
    bounds,
    scale: () => lanes.scale(),
    moveTo: (win) => lanes.moveTo(win),
    home: () => defaultWindow(lanes.sides.map((s) => s.anchor)),
    escape: () => click(lanes, NOWHERE),
    hover: (e) => {
      if (e) pointer = { xCss: e.offsetX, yCss: e.offsetY };
      return e ? showHover(lanes, lanes.hitAt(e.offsetX, e.offsetY), e.offsetX, e.offsetY) : showHover(lanes, null, 0, 0);
    },
    click: (e) => click(lanes, lanes.hitAt(e.offsetX, e.offsetY)),
  }));
  // A zoom, a pan or new lanes change what is under a still pointer: the hover box describes it again.
  const refresh = () => {
    if (lanes.tooltip.shown) showHover(lanes, lanes.hitAt(pointer.xCss, pointer.yCss), pointer.xCss, pointer.yCss);
  };
  lanes.afterData = () => queueMicrotask(refresh);
  lanes.store.subscribe((changed) => {
    if (changed.has('compare')) queueMicrotask(refresh);
  });
  canvas.addEventListener('dblclick', (e) => {
    const ev = eventAt(lanes, lanes.hitAt(e.offsetX, e.offsetY));
    if (!ev) return;
    const a = lanes.sides[ev.side].anchor.anchorUs;
    lanes.moveTo(windowAround(ev.startUs - a, ev.endUs - a, 0.1, bounds()));
  });
}

/** `+1.2 ms` / `−3 µs`: a time relative to the aligned step's start. @param {number} relUs */
function fromStep(relUs) {
  return `${relUs < 0 ? MINUS : '+'}${formatDuration(Math.abs(relUs))}`;
}

/**
 * The event under a hit, as the outline and the texts need it.
 * @param {CompareLanes} lanes @param {StackHit} hit
 * @returns {(Marked & {lane: import('../model/lanes.js').Lane, index: number}) | null}
 */
function eventAt(lanes, hit) {
  if (hit.area !== 'lane' || hit.event < 0) return null;
  const side = lanes.sides[hit.side];
  const b = lanes.layout.sides[hit.side]?.blocks[hit.block];
  const lane = b && side.data?.lanes[b.index];
  if (!lane || !side.data) return null;
  const i = hit.event;
  const startUs = lane.ev.startUs[i];
  const text = `${side.spec.title}: ${eventName(side.data, lane, i)} \u00b7 ${formatDuration(lane.ev.durUs[i])} \u00b7 `
    + `${fromStep(startUs - side.anchor.anchorUs)} from the start of ${side.anchor.stepName} \u00b7 ${lane.label}`;
  return { side: hit.side, laneId: lane.id, depth: lane.ev.depth[i], startUs, endUs: startUs + lane.ev.durUs[i], text, lane, index: i };
}

/** @param {CompareLanes} lanes @param {StackHit | null} hit @param {number} xCss @param {number} yCss */
function showHover(lanes, hit, xCss, yCss) {
  const ev = hit ? eventAt(lanes, hit) : null;
  const hover = ev ? { side: ev.side, laneId: ev.laneId, depth: ev.depth, startUs: ev.startUs, endUs: ev.endUs, text: ev.text } : null;
  if (JSON.stringify(hover) !== JSON.stringify(lanes.hover)) {
    lanes.hover = hover;
    lanes.view.requestRedraw();
  }
  if (ev && hit) {
    const side = lanes.sides[ev.side];
    const data = /** @type {import('../model/lanes.js').LanesData} */ (side.data);
    const i = ev.index;
    /** @type {[string, string][]} */
    const rows = [['duration', formatDuration(ev.lane.ev.durUs[i])], ['from the step start', fromStep(ev.startUs - side.anchor.anchorUs)],
      ['start', formatTimestamp(ev.startUs)], ['kind', ev.lane.ev.kind[i]], ['lane', ev.lane.label], ['side', side.spec.title]];
    if (ev.lane.ev.count[i] > 1) rows.push(['merged', `${ev.lane.ev.count[i]} events (double-click to zoom in)`]);
    lanes.tooltip.show(xCss, yCss, eventName(data, ev.lane, i), rows, `${ev.side}:${ev.laneId}:${ev.startUs}:${ev.depth}:${ev.lane.ev.durUs[i]}:${ev.lane.ev.count[i]}`);
    return;
  }
  if (hit && hit.area === 'steps' && hit.side >= 0) {
    const side = lanes.sides[hit.side];
    const s = side.data?.steps;
    const i = s ? intervalAt(s.startUs, s.endUs, hit.tUs) : -1;
    if (s && i >= 0) {
      lanes.tooltip.show(xCss, yCss, s.name[i], [['duration', formatDuration(s.endUs[i] - s.startUs[i])],
        ['from the step start', fromStep(s.startUs[i] - side.anchor.anchorUs)], ['DataLoader stall', s.stalled[i] ? 'yes' : 'no'],
        ['side', side.spec.title]], `step${hit.side}:${i}`);
      return;
    }
  }
  lanes.tooltip.hide();
}

/** A thread's label folds it; elsewhere the event under the pointer (or none) is outlined. @param {CompareLanes} lanes @param {StackHit} hit */
function click(lanes, hit) {
  if (hit.area === 'gutter') {
    const b = lanes.layout.sides[hit.side].blocks[hit.block];
    if (!b.collapsible) return;
    const key = `${lanes.sides[hit.side].spec.side}:${b.laneId}`;
    if (lanes.collapsed.has(key)) lanes.collapsed.delete(key);
    else lanes.collapsed.add(key);
    lanes.relayout();
    lanes.describe();
    return;
  }
  const ev = eventAt(lanes, hit);
  lanes.marked = ev ? { side: ev.side, laneId: ev.laneId, depth: ev.depth, startUs: ev.startUs, endUs: ev.endUs, text: ev.text } : null;
  lanes.picked.replaceChildren(ev ? ev.text : '');
  lanes.view.requestRedraw();
  // The span on screen: the main lanes select it too, with its launch flow and details.
  const side = ev ? lanes.sides[ev.side] : null;
  const row = ev ? Number(ev.lane.ev.row[ev.index]) : -1;
  if (ev && side?.data && side.spanId === lanes.store.state.span?.id && row >= 0 && ev.lane.ev.count[ev.index] === 1) {
    lanes.store.set({ sel: { laneId: ev.laneId, depth: ev.depth, startUs: ev.startUs, endUs: ev.endUs, row, laneKind: ev.lane.kind,
      name: eventName(side.data, ev.lane, ev.index) }, selRow: null });
  }
}
