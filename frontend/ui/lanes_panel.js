// @ts-check
/**
 * The lanes section: the canvas, its gap-cause legend, the hover box (with details fetched from the
 * `event` route after a short pause) and selection handling.
 */
import { LatestChannel, sleep } from '../api.js';
import { getWhenReady } from '../loading.js';
import { GAP_CAUSES } from '../model/colors.js';
import { PATH_COLORS, PATH_TEXT, pathOmittedNote, pathSegments } from '../model/critical_path.js';
import { formatCount, formatDuration } from '../model/format.js';
import { eventName } from '../model/lanes.js';
import { el } from './dom.js';
import { attachLanesInput, describeHit } from './lanes_input.js';
import { LanesView } from './lanes_view.js';
import { Tooltip } from './tooltip.js';

/** Hover pause before asking the server for an event's details. */
const HOVER_DETAILS_MS = 150;

/**
 * @param {import('./store.js').Store} store
 * @param {import('../api.js').Api} api
 */
export function createLanesPanel(store, api) {
  const view = new LanesView(store, api);
  const tooltip = new Tooltip(view.root);
  const hoverChannel = new LatestChannel();
  const hiddenNote = el('span', { class: 'ks-lanes-hidden' });
  const pathNote = el('span', { class: 'ks-lanes-hidden ks-path-note' });
  const pathChannel = new LatestChannel();
  const pathBox = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', 'aria-label': 'show the critical path' }));
  /** Fetches the critical path of the steps in the lanes' window (`critical_path` route), when it is shown. */
  async function loadPath() {
    const { span } = store.state;
    if (!pathBox.checked || !span || !view.data) {
      view.path = [];
      pathNote.textContent = '';
      view.view.requestRedraw();
      return;
    }
    const { startUs, endUs } = view.data;
    const result = await pathChannel.run((signal) => getWhenReady(api, 'critical_path', { span: span.id, start_us: startUs, end_us: endUs }, signal))
      .catch(() => ({ stale: true }));
    if (result.stale) return;
    view.path = pathSegments(/** @type {any} */ (result).value);
    pathNote.textContent = pathOmittedNote(/** @type {any} */ (result).value);
    view.view.requestRedraw();
  }
  pathBox.addEventListener('change', () => { loadPath(); });
  view.onData = (/** @type {import('../model/lanes.js').LanesData} */ data) => {
    if (pathBox.checked) loadPath();
    queueMicrotask(refreshHover); // after the view took the new lanes in
    gapKeys.hidden = !data.lanes.some((l) => l.kind === 'gpu');
    hiddenNote.textContent = data.lanesHidden > 0
      ? `${formatCount(data.lanesTotal - data.lanesHidden)} of ${formatCount(data.lanesTotal)} lanes shown (the threads with the fewest events are left out)`
      : '';
  };
  // the gap causes are a GPU's: a trace without GPU lanes shows none of them
  const gapKeys = el('span', { class: 'ks-legend-gaps' }, el('span', { class: 'ks-legend-title' }, 'GPU idle gaps:'),
    GAP_CAUSES.map((c) => el('span', { class: 'ks-legend-item', title: c.text, dataset: { cause: c.cause } },
      el('i', { style: { background: c.solid } }), c.cause)));
  const legend = el('div', { class: 'ks-legend' }, gapKeys,
    el('span', { class: 'ks-legend-item' }, el('i', { class: 'ks-stall-swatch' }), 'stalled step / DataLoader wait'),
    el('label', { class: 'ks-legend-item ks-path-toggle', title: 'the chain of work that set when each step was done, under the step bar: '
      + Object.entries(PATH_TEXT).map(([k, t]) => `${k}: ${t}`).join('; ') }, pathBox, 'critical path',
      Object.entries(PATH_COLORS).map(([k, c]) => el('i', { style: { background: c }, title: `${k}: ${PATH_TEXT[k]}` }))),
    hiddenNote, pathNote,
    el('span', { class: 'ks-keys' }, 'click: select \u00b7 double-click: zoom to gap/step/event \u00b7 Shift+drag: select an area for the tables \u00b7 wheel: zoom \u00b7 drag: pan \u00b7 W/S A/D \u00b7 0: all \u00b7 labels: collapse, pin'));

  /** @param {number} row @param {string} key */
  async function hoverDetails(row, key) {
    const { span } = store.state;
    if (!span || row < 0) return;
    const result = await hoverChannel.run(async (signal) => {
      await sleep(HOVER_DETAILS_MS, signal);
      return getWhenReady(api, 'event', { span: span.id, row }, signal);
    }).catch(() => ({ stale: true }));
    if (result.stale) return;
    const ev = /** @type {any} */ (result).value;
    /** @type {[string, string][]} */
    const rows = [];
    if (ev.correlation !== null && ev.correlation !== undefined) rows.push(['correlation', String(ev.correlation)]);
    if (ev.external_id !== null && ev.external_id !== undefined) rows.push(['external id', String(ev.external_id)]);
    if (ev.launch && typeof ev.launch.offset_us === 'number') {
      rows.push(['launch offset', `${formatDuration(ev.launch.offset_us)} (queued ${formatDuration(ev.launch.queued_us)}, latency ${formatDuration(ev.launch.latency_us)})`]);
    }
    if (ev.activities_total) rows.push(['launches', `${ev.activities_total} GPU activities`]);
    if (ev.captured_by) rows.push(['captured by', `${ev.captured_by.ops.join(' \u203a ')} (${ev.captured_by.reference === 'self' ? 'this trace' : ev.captured_by.reference})`]);
    tooltip.extend(key, rows);
  }

  /** The pointer of the hover box shown, in the canvas: a zoom, a pan or new lanes describe what is now under it. */
  let pointer = { xCss: 0, yCss: 0 };
  const refreshHover = () => {
    if (tooltip.shown) handlers.hover(view.hitAt(pointer.xCss, pointer.yCss), pointer.xCss, pointer.yCss);
  };
  store.subscribe((changed) => {
    if (changed.has('win')) refreshHover();
  });
  /** @type {Parameters<typeof attachLanesInput>[2]} */
  const handlers = {
    hover(hit, xCss, yCss) {
      pointer = { xCss, yCss };
      const info = hit ? describeHit(view, hit) : null;
      const hover = hit && hit.area === 'lane' && hit.event >= 0 ? laneEvent(view, hit) : null;
      if (JSON.stringify(hover) !== JSON.stringify(view.hover)) {
        view.hover = hover;
        view.view.requestRedraw();
      }
      if (!info) {
        tooltip.hide();
        hoverChannel.cancel();
        return;
      }
      const isNew = info.key !== tooltip.key;
      tooltip.show(xCss, yCss, info.title, info.rows, info.key);
      if (isNew) hoverDetails(info.row, info.key);
    },
    select(hit) {
      if (!hit || hit.area !== 'lane' || hit.event < 0) {
        if (!hit || hit.area === 'lane') store.set({ sel: null, selRow: null });
        return;
      }
      const lane = view.data?.lanes[view.layout.blocks[hit.block].index];
      if (!lane) return;
      const i = hit.event;
      // One click selects, a double click zooms (lanes_input): a block of merged events has nothing to
      // select, so a single click on it does nothing but close the hover box.
      if (lane.ev.count[i] > 1 || lane.ev.row[i] < 0) return;
      const ev = laneEvent(view, hit);
      if (ev && view.data) store.set({ sel: { ...ev, row: Number(lane.ev.row[i]), laneKind: lane.kind, name: eventName(view.data, lane, i) }, selRow: null });
    },
  };
  attachLanesInput(view, store, handlers);
  const root = el('section', { class: 'ks-section ks-lanes-section' }, legend, view.root);
  return { root, view };
}

/**
 * The hovered or selected event as the outline and flows need it.
 * @param {LanesView} view @param {import('../model/lanes_hit.js').LanesHit} hit
 */
function laneEvent(view, hit) {
  const b = view.layout.blocks[hit.block];
  const ev = view.data?.lanes[b.index].ev;
  if (!ev) return null;
  const i = hit.event;
  return { laneId: b.laneId, depth: ev.depth[i], startUs: ev.startUs[i], endUs: ev.startUs[i] + ev.durUs[i] };
}
