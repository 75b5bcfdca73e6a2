// @ts-check
/**
 * Mouse and keyboard on the lanes canvas: wheel zoom around the cursor, drag to pan (and scroll
 * lanes vertically), W/S zoom and A/D pan (around the pointer) and 0 for the whole trace through the
 * shared `pan_zoom_input.js`; here: click to select or collapse, double-click to zoom to a gap, step or
 * event, Escape to clear the selection, Shift+drag to select an area (the Tables panel then shows only
 * it; Shift+click or Escape clears it).
 */
import { gapSolid, gapText } from '../model/colors.js';
import { formatDuration, formatTimestamp } from '../model/format.js';
import { counterReading } from '../model/counters.js';
import { eventName } from '../model/lanes.js';
import { GUTTER_W } from '../model/layout.js';
import { windowAround } from '../model/scale.js';
import { areaFromDrag } from '../model/tables.js';
import { attachPanZoom } from './pan_zoom_input.js';

/**
 * @param {import('./lanes_view.js').LanesView} view
 * @param {import('./store.js').Store} store
 * @param {{hover: (hit: import('../model/lanes_hit.js').LanesHit | null, xCss: number, yCss: number) => void,
 *   select: (hit: import('../model/lanes_hit.js').LanesHit | null) => void}} handlers
 */
export function attachLanesInput(view, store, handlers) {
  const canvas = view.canvas;
  const onKey = attachPanZoom({
    canvas,
    win: () => store.state.win,
    bounds: () => store.state.bounds,
    scale: () => view.scale(),
    moveTo: (win) => store.set({ win }),
    home: () => store.state.bounds,
    escape: () => {
      handlers.select(null);
      store.set({ area: null });
    },
    hover: (e) => (e ? handlers.hover(view.hitAt(e.offsetX, e.offsetY), e.offsetX, e.offsetY) : handlers.hover(null, 0, 0)),
    click: (e) => {
      const hit = view.hitAt(e.offsetX, e.offsetY);
      if (hit?.area === 'group' && hit.group !== undefined) view.toggleGroup(view.layout.groups[hit.group].key);
      else if (hit?.area === 'gutter' && hit.pin) view.togglePin(view.layout.blocks[hit.block].laneId);
      else if (hit?.area === 'gutter') view.toggleLane(view.layout.blocks[hit.block].laneId);
      else handlers.select(hit);
    },
    scroll: { yCss: () => view.scrollYCss, by: (dyCss) => view.scrollBy(dyCss) },
    // Shift+drag over the plot selects an area (the Tables panel then shows only it); Shift+click clears it.
    gesture: (down) => (down.shiftKey && down.offsetX >= GUTTER_W ? {
      move: (e) => store.set({ area: areaFromDrag(down.offsetX, Math.max(GUTTER_W, e.offsetX), view.scale(), store.state.bounds) }),
      click: () => store.set({ area: null }),
    } : null),
    // Wheeling over the lanes means working with them: let W/S/A/D follow without a click first.
    focusOnWheel: true,
    keysAtPointer: true,
  });

  canvas.addEventListener('dblclick', (e) => {
    const target = zoomTarget(view, view.hitAt(e.offsetX, e.offsetY));
    if (target) store.set({ win: windowAround(target[0], target[1], 0.1, store.state.bounds) });
  });

  // Keys act on the main lanes wherever the focus is in this frame, except where one types; a view that
  // takes its own keys (the Compare panel's stacked lanes, focused) stops those it uses before they get here.
  window.addEventListener('keydown', onKey);
  // Keys work as soon as the tab is shown: TensorBoard's page keeps the focus until the frame is clicked,
  // so its keys reach the lanes too while this frame is on screen and nothing there takes typing.
  const parent = parentWindow();
  parent?.addEventListener('keydown', (e) => {
    const frame = /** @type {HTMLElement | null} */ (window.frameElement);
    if (e.defaultPrevented || !frame || frame.getClientRects().length === 0) return;
    onKey(e);
  });
}

/** TensorBoard's window around this frame, when it is another window of the same origin. */
function parentWindow() {
  try {
    if (window.parent === window || !window.parent.document) return null;
    return window.parent;
  } catch {
    return null;
  }
}

/**
 * The interval a double-click zooms to: a step, a DataLoader wait, a gap or an event.
 * @param {import('./lanes_view.js').LanesView} view
 * @param {import('../model/lanes_hit.js').LanesHit | null} hit
 * @returns {[number, number] | null}
 */
export function zoomTarget(view, hit) {
  const data = view.data;
  if (!hit || !data) return null;
  const s = data.steps;
  if (hit.area === 'step' && hit.step >= 0) return [s.startUs[hit.step], s.endUs[hit.step]];
  if (hit.area === 'loader' && hit.step >= 0) return [s.dataloader.startUs[hit.step], s.dataloader.endUs[hit.step]];
  if (hit.area !== 'lane') return null;
  if (hit.event >= 0) {
    const ev = data.lanes[view.layout.blocks[hit.block].index].ev;
    return [ev.startUs[hit.event], ev.startUs[hit.event] + ev.durUs[hit.event]];
  }
  if (hit.gap >= 0) return [data.gaps.startUs[hit.gap], data.gaps.endUs[hit.gap]];
  return null;
}

/**
 * Title and rows of the hover box for a hit, or null when there is nothing to say.
 * @param {import('./lanes_view.js').LanesView} view
 * @param {import('../model/lanes_hit.js').LanesHit} hit
 * @returns {{key: string, title: string, rows: [string, string][], row: number, color?: string} | null}
 */
export function describeHit(view, hit) {
  const data = view.data;
  if (!data) return null;
  const s = data.steps;
  if (hit.area === 'step' && hit.step >= 0) {
    const i = hit.step;
    return { key: `step${i}`, title: s.name[i], row: -1, rows: [['duration', formatDuration(s.endUs[i] - s.startUs[i])],
      ['DataLoader stall', s.stalled[i] ? 'yes' : 'no']] };
  }
  if (hit.area === 'loader' && hit.step >= 0) {
    const i = hit.step;
    return { key: `dl${i}`, title: 'DataLoader wait', row: -1,
      rows: [['duration', formatDuration(s.dataloader.endUs[i] - s.dataloader.startUs[i])],
        ['in a stalled step', view.stalledAt((s.dataloader.startUs[i] + s.dataloader.endUs[i]) / 2) ? 'yes' : 'no']] };
  }
  if (hit.area === 'group' && hit.group !== undefined) {
    const g = view.layout.groups[hit.group];
    return { key: `group${g.key}`, title: `${g.label}: ${g.lanes} lane${g.lanes === 1 ? '' : 's'}`, row: -1,
      rows: [['click', g.collapsed ? 'show its lanes' : 'collapse the group to this row']] };
  }
  if (hit.area === 'gutter' && hit.block >= 0) {
    const b = view.layout.blocks[hit.block];
    const pinned = view.pinned.includes(b.laneId);
    return { key: `gutter${b.laneId}:${hit.pin}`, title: b.label, row: -1,
      rows: hit.pin ? [['click', pinned ? 'unpin this lane' : 'pin this lane to the top']]
        : [['click', b.collapsible ? (b.collapsed ? 'show its nested rows' : 'collapse to its top row') : 'no nested rows'],
          ['pin (right edge)', pinned ? 'pinned to the top' : 'click to pin to the top']] };
  }
  if (hit.area === 'counter') {
    const reading = counterReading(data.counters, hit.counterY ?? -1, hit.tUs);
    return reading && { key: `counter${reading.lane}:${reading.bucket}`, title: reading.title, row: -1, rows: reading.rows };
  }
  if (hit.area !== 'lane') return null;
  const lane = data.lanes[view.layout.blocks[hit.block].index];
  if (hit.event >= 0) {
    const ev = lane.ev;
    const i = hit.event;
    const rows = /** @type {[string, string][]} */ ([['duration', formatDuration(ev.durUs[i])], ['start', formatTimestamp(ev.startUs[i])],
      ['kind', ev.kind[i]], ['lane', lane.label]]);
    if (ev.count[i] > 1) rows.push(['merged', `${ev.count[i]} events (double-click to zoom in)`]);
    return { key: `ev${lane.id}:${ev.row[i]}:${ev.startUs[i]}:${ev.durUs[i]}:${ev.count[i]}`, title: eventName(data, lane, i), rows, row: ev.count[i] > 1 ? -1 : Number(ev.row[i]) };
  }
  if (hit.gap >= 0) {
    const g = data.gaps;
    return { key: `gap${hit.gap}:${data.gaps.startUs[hit.gap]}:${data.gaps.endUs[hit.gap]}`, title: `GPU idle: ${g.cause[hit.gap]}`, row: -1, color: gapSolid(g.cause[hit.gap]),
      rows: [['duration', formatDuration(g.endUs[hit.gap] - g.startUs[hit.gap])], ['start', formatTimestamp(g.startUs[hit.gap])],
        ['why', gapText(g.cause[hit.gap]) || '\u2013'], ['', 'double-click to zoom']] };
  }
  return null;
}
