// @ts-check
/**
 * The page: builds every section, picks the run / worker / span (from the link, else the first),
 * loads the span's summary, and keeps the URL in sync. Sections load their own routes and report
 * their own errors, so one failing route leaves the rest working.
 */
import { Api, ApiError, LatestChannel } from '../api.js';
import { forgetUnready, getWhenReady } from '../loading.js';
import { clampWindow } from '../model/scale.js';
import { DetailsPanel, selectionFromEvent } from './details.js';
import { el, errorText, message } from './dom.js';
import { GapTable } from './gap_table.js';
import { Header } from './header.js';
import { createLanesPanel } from './lanes_panel.js';
import { LaunchPanel } from './launch_panel.js';
import { MemoryPanel } from './memory_panel.js';
import { createShareButtons } from './share.js';
import { StatusPoller } from './status.js';
import { StepTable } from './step_table.js';
import { Store } from './store.js';
import { readInitialState, startUrlSync } from './urlsync.js';

/**
 * @param {HTMLElement} body
 */
export async function start(body) {
  document.head.appendChild(el('link', { rel: 'stylesheet', href: new URL('../style.css', import.meta.url).href }));
  const api = new Api();
  const store = new Store();
  const summaryChannel = new LatestChannel();
  /** @type {any[]} */
  let runs = [];
  let restore = readInitialState();

  const header = new Header((run, worker, spanId) => pick(run, worker, spanId));
  const lanes = createLanesPanel(store, api);
  const reveal = () => lanes.root.scrollIntoView({ block: 'nearest' });
  const details = new DetailsPanel(store, api, (row, zoom) => selectRow(row, zoom));
  const sections = [lanes.root, el('section', { class: 'ks-section' }, el('h3', {}, 'Selection'), details.root),
    new MemoryPanel(store, api).root,
    el('div', { class: 'ks-grid' }, new StepTable(store, api, reveal).root, new GapTable(store, api, reveal).root),
    new LaunchPanel(store, api).root];
  header.actions.append(...createShareButtons(store));
  body.classList.add('ks-body');
  body.replaceChildren(header.root, el('main', { class: 'ks-main' }, sections));

  const poller = new StatusPoller(api, (traces) => {
    const byId = new Map(traces.map((t) => [t.id, t]));
    forgetUnready(api, traces);
    header.updateStates(byId);
    const mine = store.state.span ? byId.get(store.state.span.id) : null;
    header.setStatus(mine ?? null);
    return Boolean(mine) && mine.state !== 'ready' && mine.state !== 'error';
  });

  /** @param {number} row @param {boolean} zoom */
  async function selectRow(row, zoom) {
    const { span } = store.state;
    if (!span) return;
    try {
      const ev = await getWhenReady(api, 'event', { span: span.id, row });
      if (store.state.span !== span) return;
      const sel = selectionFromEvent(ev);
      /** @type {Partial<import('./store.js').State>} */
      const patch = { sel, selRow: null };
      if (zoom && (sel.startUs < store.state.win.t0Us || sel.endUs > store.state.win.t1Us)) {
        const widthUs = store.state.win.t1Us - store.state.win.t0Us;
        patch.win = clampWindow({ t0Us: sel.startUs - widthUs / 2, t1Us: sel.startUs + widthUs / 2 }, store.state.bounds);
      }
      store.set(patch);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) console.warn('kinetoscope: selection', errorText(err));
      store.set({ selRow: null });
    }
  }

  /** @param {string} run @param {string} worker @param {string | null} spanId */
  function pick(run, worker, spanId) {
    const r = runs.find((x) => x.name === run) ?? runs[0];
    const w = r?.workers.find((/** @type {any} */ x) => x.name === worker) ?? r?.workers[0];
    const s = w?.spans.find((/** @type {any} */ x) => x.id === spanId) ?? w?.spans[0];
    if (!r || !w || !s) return;
    loadSpan({ id: s.id, run: r.name, worker: w.name, span: s.span, index: s.index });
  }

  /** @param {import('./store.js').SpanRef} ref */
  async function loadSpan(ref) {
    // A link's window and selection apply to its span, or to the default span of a link without one.
    const link = !restore.span || restore.span === ref.id ? restore : {};
    restore = {};
    header.setRuns(runs, { run: ref.run, worker: ref.worker, id: ref.id });
    header.setVerdict(null, null);
    store.set({ span: ref, summary: null, spanError: null, sel: null, selRow: link.sel ?? null });
    const result = summaryChannel.run((signal) => getWhenReady(api, 'summary', { span: ref.id }, signal));
    poller.start();
    try {
      const r = await result;
      if (r.stale) return;
      const summary = r.value;
      const bounds = { t0Us: 0, t1Us: Math.max(Number(summary.duration_us) || 0, 1e-3) };
      const win = link.t0Us !== undefined && link.t1Us !== undefined
        ? clampWindow({ t0Us: link.t0Us, t1Us: link.t1Us }, bounds) : bounds;
      store.set({ summary, bounds, win });
      header.setVerdict(summary, null);
      if (store.state.selRow !== null) selectRow(store.state.selRow, false);
    } catch (err) {
      const text = err instanceof ApiError && err.status === 422 ? `This trace failed to load: ${err.message}` : `Summary: ${errorText(err)}`;
      store.set({ spanError: text });
      header.setVerdict(null, text);
    }
  }

  startUrlSync(store);
  try {
    const body = await api.get('runs');
    runs = Array.isArray(body.runs) ? body.runs : [];
  } catch (err) {
    header.verdict.replaceChildren(message('error', `Runs: ${errorText(err)}`));
    return;
  }
  if (runs.length === 0) {
    header.verdict.replaceChildren(message('info', 'No torch.profiler traces (*.pt.trace.json[.gz]) under the logdir yet.'));
    return;
  }
  const byId = runs.flatMap((r) => r.workers.flatMap((/** @type {any} */ w) => w.spans.map((/** @type {any} */ s) => [r.name, w.name, s.id])));
  const linked = byId.find(([, , id]) => id === restore.span) ?? byId.find(([r, w]) => r === restore.run && (!restore.worker || w === restore.worker));
  const [run, worker, id] = linked ?? byId[0];
  pick(run, worker, id);
}
