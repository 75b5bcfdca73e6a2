// @ts-check
/**
 * Mouse and keyboard on the lanes canvas: wheel zoom around the cursor, drag to pan (and scroll
 * lanes vertically), click to select or collapse, double-click to zoom to a gap, step or event,
 * W/S zoom and A/D pan, 0 for the whole trace, Escape to clear the selection. Shift+drag selects an area
 * (the Tables panel then shows only it; Shift+click or Escape clears it).
 */
import { gapSolid, gapText } from '../model/colors.js';
import { formatDuration, formatTimestamp } from '../model/format.js';
import { eventName } from '../model/lanes.js';
import { GUTTER_W } from '../model/layout.js';
import { panBy, windowAround, zoomAround } from '../model/scale.js';
import { areaFromDrag } from '../model/tables.js';

/** Wheel delta (pixels) that zooms by e: trackpads send many small deltas, mice ~100 per notch. */
const WHEEL_PX_PER_E = 500;
const KEY_ZOOM = 0.8;
const KEY_PAN_FRAC = 0.15;
const DRAG_SLOP_PX = 3;

/**
 * @param {import('./lanes_view.js').LanesView} view
 * @param {import('./store.js').Store} store
 * @param {{hover: (hit: import('../model/lanes_hit.js').LanesHit | null, xCss: number, yCss: number) => void,
 *   select: (hit: import('../model/lanes_hit.js').LanesHit | null) => void}} handlers
 */
export function attachLanesInput(view, store, handlers) {
  const canvas = view.canvas;
  /** @param {import('../model/scale.js').Window} win */
  const setWin = (win) => store.set({ win });
  /** @type {{x: number, y: number, win: import('../model/scale.js').Window, scroll: number, moved: boolean, usPerPx: number, area?: boolean} | null} */
  let drag = null;
  let pointerX = -1;

  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    // Wheeling over the lanes means working with them: let W/S/A/D follow without a click first.
    if (document.activeElement === document.body) canvas.focus({ preventScroll: true });
    const px = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    const { win, bounds } = store.state;
    if (e.shiftKey) view.scrollBy(e.deltaY * px);
    else if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) setWin(panBy(win, e.deltaX * px * view.scale().usPerPx, bounds));
    else {
      const scale = view.scale();
      const tUs = e.offsetX >= GUTTER_W ? scale.xToT(e.offsetX) : (win.t0Us + win.t1Us) / 2;
      setWin(zoomAround(win, tUs, Math.exp((e.deltaY * px) / WHEEL_PX_PER_E), bounds));
    }
  }, { passive: false });

  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    handlers.hover(null, 0, 0); // a click answers in the Selection panel: no hover box left over it
    canvas.focus({ preventScroll: true });
    canvas.setPointerCapture(e.pointerId);
    drag = { x: e.offsetX, y: e.offsetY, win: store.state.win, scroll: view.scrollYCss, moved: false, usPerPx: view.scale().usPerPx,
      area: e.shiftKey && e.offsetX >= GUTTER_W };
  });

  canvas.addEventListener('pointermove', (e) => {
    pointerX = e.offsetX;
    if (drag) {
      const dx = e.offsetX - drag.x;
      const dy = e.offsetY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < DRAG_SLOP_PX) return;
      drag.moved = true;
      handlers.hover(null, 0, 0);
      if (drag.area) {
        store.set({ area: areaFromDrag(drag.x, Math.max(GUTTER_W, e.offsetX), view.scale(), store.state.bounds) });
        return;
      }
      setWin(panBy(drag.win, -dx * drag.usPerPx, store.state.bounds));
      view.scrollBy(drag.scroll - dy - view.scrollYCss);
      return;
    }
    handlers.hover(view.hitAt(e.offsetX, e.offsetY), e.offsetX, e.offsetY);
  });

  canvas.addEventListener('pointerup', (e) => {
    const wasClick = drag && !drag.moved;
    const areaClick = wasClick && drag?.area;
    drag = null;
    if (!wasClick) return;
    if (areaClick) {
      store.set({ area: null });
      return;
    }
    const hit = view.hitAt(e.offsetX, e.offsetY);
    if (hit?.area === 'group' && hit.group !== undefined) view.toggleGroup(view.layout.groups[hit.group].key);
    else if (hit?.area === 'gutter' && hit.pin) view.togglePin(view.layout.blocks[hit.block].laneId);
    else if (hit?.area === 'gutter') view.toggleLane(view.layout.blocks[hit.block].laneId);
    else handlers.select(hit);
  });

  canvas.addEventListener('pointerleave', () => {
    pointerX = -1;
    if (!drag) handlers.hover(null, 0, 0);
  });

  canvas.addEventListener('dblclick', (e) => {
    const target = zoomTarget(view, view.hitAt(e.offsetX, e.offsetY));
    if (target) setWin(windowAround(target[0], target[1], 0.1, store.state.bounds));
  });

  /** @param {KeyboardEvent} e */
  const onKey = (e) => {
    const target = /** @type {HTMLElement} */ (e.target);
    const tag = target.tagName;
    if (e.ctrlKey || e.metaKey || e.altKey || tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || target.isContentEditable) return;
    const { win, bounds } = store.state;
    const span = win.t1Us - win.t0Us;
    const center = pointerX >= GUTTER_W ? view.scale().xToT(pointerX) : (win.t0Us + win.t1Us) / 2;
    const key = e.key.toLowerCase();
    if (key === 'w') setWin(zoomAround(win, center, KEY_ZOOM, bounds));
    else if (key === 's') setWin(zoomAround(win, center, 1 / KEY_ZOOM, bounds));
    else if (key === 'a') setWin(panBy(win, -span * KEY_PAN_FRAC, bounds));
    else if (key === 'd') setWin(panBy(win, span * KEY_PAN_FRAC, bounds));
    else if (key === '0') setWin(bounds);
    else if (key === 'escape') {
      handlers.select(null);
      store.set({ area: null });
    }
    else return;
    e.preventDefault();
  };
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
  if (hit.area !== 'lane') return null;
  const lane = data.lanes[view.layout.blocks[hit.block].index];
  if (hit.event >= 0) {
    const ev = lane.ev;
    const i = hit.event;
    const rows = /** @type {[string, string][]} */ ([['duration', formatDuration(ev.durUs[i])], ['start', formatTimestamp(ev.startUs[i])],
      ['kind', ev.kind[i]], ['lane', lane.label]]);
    if (ev.count[i] > 1) rows.push(['merged', `${ev.count[i]} events (double-click to zoom in)`]);
    return { key: `ev${lane.id}:${ev.row[i]}:${ev.startUs[i]}`, title: eventName(data, lane, i), rows, row: ev.count[i] > 1 ? -1 : Number(ev.row[i]) };
  }
  if (hit.gap >= 0) {
    const g = data.gaps;
    return { key: `gap${hit.gap}`, title: `GPU idle: ${g.cause[hit.gap]}`, row: -1, color: gapSolid(g.cause[hit.gap]),
      rows: [['duration', formatDuration(g.endUs[hit.gap] - g.startUs[hit.gap])], ['start', formatTimestamp(g.startUs[hit.gap])],
        ['why', gapText(g.cause[hit.gap]) || '\u2013'], ['', 'double-click to zoom']] };
  }
  return null;
}
