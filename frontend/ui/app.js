// @ts-check
/**
 * The page: builds every section, picks the run / worker / span (from the link, else the first),
 * loads the span's summary and its run's verdict, and keeps the URL in sync. Sections load their
 * own routes and report their own errors, so one failing route leaves the rest working. The runs
 * listing refreshes while the page is open: new traces join the selectors, and nothing on screen
 * changes with it.
 */
import { Api, ApiError, LatestChannel } from '../api.js';
import { forgetUnready, getWhenReady, lanesAvailable, learnReady, waitLanes } from '../loading.js';
import { samePlacement, spanPlacement } from '../model/placement.js';
import { isMultiRank } from '../model/ranks.js';
import { findSpan, linkMismatch, linkedSpan, mergeRuns, resolvePick, runSpanCount, runsOf, skippedLinksNotice, spanChanged, spanList } from '../model/runs.js';
import { clampWindow } from '../model/scale.js';
import { ComparePanel } from './compare_panel.js';
import { DetailsPanel, selectionFromEvent } from './details.js';
import { collapsible, el, errorText, message } from './dom.js';
import { GapTable } from './gap_table.js';
import { Header } from './header.js';
import { createLanesPanel } from './lanes_panel.js';
import { LaunchPanel } from './launch_panel.js';
import { MemoryPanel } from './memory_panel.js';
import { RanksPanel } from './ranks_panel.js';
import { RooflinePanel } from './roofline_panel.js';
import { REFRESH_MS, RunsRefresher } from './runs_refresh.js';
import { RunVerdictPoller } from './run_verdict.js';
import { selectionDrawer } from './selection_drawer.js';
import { createShareButtons } from './share.js';
import { StatusPoller } from './status.js';
import { StepTable } from './step_table.js';
import { followTheme } from './theme.js';
import { Store } from './store.js';
import { TablesPanel } from './tables_panel.js';
import { WhatIfPanel } from './whatif_panel.js';
import { followHash, readInitialState, startUrlSync } from './urlsync.js';

/**
 * @param {HTMLElement} body
 * @param {{runs?: Promise<any>}} [early] what index.js asked for while this code loaded: the `runs` listing (its
 *   answer, or null when it failed)
 */
export async function start(body, early = {}) {
  document.head.appendChild(el('link', { rel: 'stylesheet', href: new URL('../style.css', import.meta.url).href }));
  const api = new Api();
  const store = new Store();
  const summaryChannel = new LatestChannel();
  const lanesChannel = new LatestChannel();
  /** @type {import('../model/runs.js').RunInfo[]} the latest `runs` answer */
  let latest = [];
  /** @type {import('../model/runs.js').RunInfo[]} what the selectors list: `latest`, plus the span on screen if gone */
  let shown = [];
  /** @type {{version?: string, state?: string} | null} the listing entry of the span on screen when it was loaded */
  let loadedEntry = null;
  let restore = readInitialState();

  const header = new Header((run, worker, spanId) => pick(run, worker, spanId));
  const lanes = createLanesPanel(store, api);
  // The header is sticky: keep the lanes' time axis below it when a table row brings them into view.
  const reveal = () => {
    lanes.root.style.scrollMarginTop = `${header.root.offsetHeight + 8}px`;
    lanes.root.scrollIntoView({ block: 'nearest' });
  };
  const details = new DetailsPanel(store, api, (row, zoom) => selectRow(row, zoom));
  const ranks = new RanksPanel(api, (run, worker, spanId) => pick(run, worker, spanId));
  const compare = new ComparePanel(store, api);
  if (restore.base) {
    store.set({ compare: { base: restore.base, candRun: Boolean(restore.candRun), step: restore.step,
      win: restore.cw0Us !== undefined && restore.cw1Us !== undefined ? { t0Us: restore.cw0Us, t1Us: restore.cw1Us } : undefined } });
  }
  // The lanes come first: the panels that arrive after them (Ranks, Compare) go below, so they never push the
  // timeline below the fold once it is drawn.
  const sections = [lanes.root, ranks.root, compare.root,
    new MemoryPanel(store, api, collapsible).root,
    el('div', { class: 'ks-grid' }, new StepTable(store, api, reveal).root, new GapTable(store, api, reveal).root),
    new WhatIfPanel(store, api).root,
    new LaunchPanel(store, api).root];
  const plotWidth = () => { const s = lanes.view.scale(); return s.x1Css - s.x0Css; };
  const tables = new TablesPanel(store, api, (row) => selectRow(row, false), reveal, plotWidth);
  sections.splice(3, 0, tables.root, new RooflinePanel(store, api, (row) => selectRow(row, false), reveal, plotWidth).root);
  lanes.root.prepend(tables.searchBar);
  for (const section of sections.filter((s) => s !== lanes.root)) {
    for (const s of section.classList.contains('ks-grid') ? [...section.children] : [section]) {
      if (!s.dataset.foldable) collapsible(/** @type {HTMLElement} */ (s));
    }
  }
  header.actions.append(...createShareButtons(store));
  const notice = el('div', { class: 'ks-link-notice', hidden: true });
  // Links out of the logdir that the server did not follow: a notice until the listing has none, or it is dismissed.
  const linksNotice = el('div', { class: 'ks-link-notice ks-skipped-links', hidden: true });
  let linksDismissed = '';
  body.classList.add('ks-body');
  followTheme(body);
  body.replaceChildren(header.root, header.more, notice, linksNotice, el('main', { class: 'ks-main' }, sections),
    selectionDrawer(store, details.root, [header.root, header.more]));
  // The page above the lanes grew (the verdict came, the header unfolded) or the window shrank: the GPU may need pinning.
  const pagePin = new ResizeObserver(() => lanes.view.autoPin());
  pagePin.observe(header.root);
  pagePin.observe(header.more);
  window.addEventListener('resize', () => lanes.view.autoPin());
  /**
   * Shows `text` in a notice above the panels until it is dismissed (then `onDismiss`).
   * @param {HTMLElement} box @param {string} text @param {() => void} [onDismiss]
   */
  const showIn = (box, text, onDismiss = () => {}) => {
    box.replaceChildren(message('warn', text, ' ', el('button', { type: 'button', class: 'ks-dismiss',
      onclick: () => { box.hidden = true; onDismiss(); } }, 'Dismiss')));
    box.hidden = false;
  };
  /** Shows a notice above the panels until it is dismissed. @param {string} text */
  const showNotice = (text) => showIn(notice, text);

  const runVerdict = new RunVerdictPoller(api, (answer) => {
    if (answer?.run !== store.state.span?.run) return;
    store.set({ runVerdict: answer });
    header.setRunVerdict(answer);
  }, (err) => {
    header.markRunVerdict('failed');
    console.warn('kinetoscope: run verdict', errorText(err));
  });

  /**
   * Asks for the run verdict of the span on screen when its run lists more than one span (a
   * one-span run's verdict is the span's own), or drops the one shown.
   */
  function pollRunVerdict() {
    const run = store.state.span?.run;
    if (run !== undefined && runSpanCount(latest, run) > 1) {
      header.markRunVerdict('asked');
      runVerdict.start(run);
      return;
    }
    runVerdict.stop();
    store.set({ runVerdict: null });
    header.setRunVerdict(null);
  }

  const poller = new StatusPoller(api, (traces) => {
    const byId = new Map(traces.map((t) => [t.id, t]));
    forgetUnready(api, traces);
    header.updateStates(byId);
    const mine = store.state.span ? byId.get(store.state.span.id) : null;
    header.setStatus(mine ?? null);
    // a failure the server tries again says so ("retrying in N s", as of each answer): poll on, so it stays true
    const retrying = mine?.state === 'error' && /\(retrying /.test(mine.error ?? '');
    return Boolean(mine) && mine.state !== 'ready' && (mine.state !== 'error' || retrying);
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
    const found = resolvePick(shown, run, worker, spanId);
    if (found) loadSpan({ id: found.span.id, run: found.run, worker: found.worker, span: found.span.span, index: found.span.index });
  }

  /** Lists `latest` in the selectors around the span on screen (kept, marked gone, if it left the logdir). */
  function syncHeader() {
    const { span } = store.state;
    if (!span) return;
    ranks.show(isMultiRank(latest, span.run) ? span.run : null);
    shown = mergeRuns(shown, latest, span.id);
    header.setRuns(shown, { run: span.run, worker: span.worker, id: span.id });
    header.setListed(findSpan(shown, span.id)?.span ?? null);
  }

  /** Shows (or hides) the notice of links not followed that a `runs` answer carries. @param {any} body */
  function showSkippedLinks(body) {
    const text = skippedLinksNotice(body?.skipped_links);
    if (!text || text === linksDismissed) {
      linksNotice.hidden = true;
      return;
    }
    if (linksNotice.dataset.text === text && !linksNotice.hidden) return;
    linksNotice.dataset.text = text;
    showIn(linksNotice, text, () => { linksDismissed = text; });
  }

  /** A `runs` answer: refreshes the selectors, or opens the first span once there is one. @param {any} body */
  function showRuns(body) {
    showSkippedLinks(body);
    latest = runsOf(body);
    const listed = spanList(latest).map((x) => x.span);
    forgetUnready(api, listed);
    learnReady(api, listed);
    compare.setRuns(latest);
    if (store.state.span) {
      syncHeader();
      // The file on screen was replaced or completed, or a failed load is being retried: load it again.
      const now = findSpan(latest, store.state.span.id)?.span;
      if (spanChanged(loadedEntry, now)) {
        loadedEntry = now;
        loadSpan(store.state.span);
        return;
      }
      // A span of the run on screen came or went: the run verdict pools a different set.
      const { span, summary } = store.state;
      if (summary && runSpanCount(latest, span.run) !== (runVerdict.latest?.spans?.length ?? 1)) pollRunVerdict();
      return;
    }
    shown = latest;
    const first = linkedSpan(shown, restore);
    const mismatch = first ? linkMismatch(restore, first) : null;
    if (mismatch) {
      showNotice(mismatch);
      restore = {}; // the window and selection were another span's
    }
    if (first) {
      pick(first.run, first.worker, first.span.id);
      return;
    }
    if (body?.scan_error) { // a remote logdir that cannot be listed: say why (the server redacts secrets)
      header.showMessage(message('error', `Cannot list the logdir: ${body.scan_error}.`, ` This page looks again every ${REFRESH_MS / 1000} s.`));
      return;
    }
    const text = body?.scan_complete === false ? 'Scanning the logdir\u2026'
      : 'No torch.profiler traces (*.pt.trace.json[.gz]) under the logdir yet.';
    header.showMessage(message('info', text, ` This page looks again every ${REFRESH_MS / 1000} s.`));
  }

  /** @param {import('./store.js').SpanRef} ref */
  async function loadSpan(ref) {
    // A link's window and selection apply to its span, or to the default span of a link without one.
    const link = !restore.span || restore.span === ref.id ? restore : {};
    restore = {};
    if (store.state.span?.run !== ref.run) {
      runVerdict.stop();
      header.setRunVerdict(null);
    }
    loadedEntry = findSpan(latest, ref.id)?.span ?? null;
    store.set({ span: { ...ref }, summary: null, spanError: null, sel: null, selRow: link.sel ?? null, area: null,
      runVerdict: store.state.span?.run === ref.run ? store.state.runVerdict : null, lanesReady: false });
    header.setVerdict(null, null); // first: the header's summary is the last span's until now (a "ready" flash)
    syncHeader();
    const result = summaryChannel.run((signal) => getWhenReady(api, 'summary', { span: ref.id }, signal));
    placeWhenLanesReady(ref, link);
    poller.start();
    try {
      const r = await result;
      if (r.stale) return;
      const summary = r.value;
      // Placed already when the lanes came first (the user may have moved since): keep the window.
      const placed = store.state.lanesReady && samePlacement(store.state.bounds, summary.duration_us);
      store.set(placed ? { summary } : { summary, ...spanPlacement(link, summary.duration_us), lanesReady: true });
      header.setVerdict(summary, null);
      pollRunVerdict();
      if (store.state.selRow !== null) selectRow(store.state.selRow, false);
    } catch (err) {
      const text = err instanceof ApiError && err.status === 422 ? `This trace failed to load: ${err.message}` : `Summary: ${errorText(err)}`;
      store.set({ spanError: text });
      header.setVerdict(null, text);
    }
  }

  /**
   * Places the span (bounds, the link's window) as soon as its lanes can be asked, so the lanes draw while
   * the server still analyses; the summary and the other sections follow when it is done.
   * @param {import('./store.js').SpanRef} ref @param {import('../model/urlstate.js').ViewState} link
   */
  async function placeWhenLanesReady(ref, link) {
    // a listing that shows the lanes published, with the trace's extent, places the span without asking `status`
    const listed = findSpan(latest, ref.id)?.span;
    const known = lanesAvailable(listed) && Number.isFinite(listed?.duration_us) ? listed : null;
    const result = await lanesChannel.run((signal) => (known ? Promise.resolve(known) : waitLanes(api, ref.id, signal)))
      .catch(() => ({ stale: true }));
    if (result.stale || store.state.span?.id !== ref.id || store.state.lanesReady) return;
    const trace = /** @type {any} */ (result).value;
    if (!Number.isFinite(trace?.duration_us)) return; // a server that does not say: the summary places it
    store.set({ ...spanPlacement(link, trace.duration_us), lanesReady: true });
  }

  /**
   * A link pasted into the open tab: its span (with its window and selection), or, for the span on screen,
   * its window, area and selection at once.
   * @param {import('../model/urlstate.js').ViewState} link
   */
  function openLink(link) {
    // a link naming no run nor span (a window, an area) is about the span on screen
    const found = link.run || link.span ? linkedSpan(shown, link) : findSpan(shown, store.state.span?.id ?? '');
    if (!found) return;
    const mismatch = linkMismatch(link, found);
    if (mismatch) showNotice(mismatch);
    else notice.hidden = true;
    if (found.span.id !== store.state.span?.id) {
      restore = mismatch ? {} : link;
      pick(found.run, found.worker, found.span.id);
      return;
    }
    const { bounds } = store.state;
    const { win, area } = spanPlacement(link, bounds.t1Us);
    store.set({ win, area, sel: null, selRow: link.sel ?? null });
    if (link.sel !== undefined) selectRow(link.sel, false);
  }

  startUrlSync(store);
  followHash(store, openLink);
  const refresher = new RunsRefresher(api, showRuns, (err) => {
    if (!store.state.span) header.showMessage(message('error', `Runs: ${errorText(err)}`));
  });
  // TensorBoard has no teardown hook for a plugin (its iframe is hidden, not removed); a page that
  // is unloaded or put in the back-forward cache stops asking.
  window.addEventListener('pagehide', () => refresher.stop());
  window.addEventListener('pageshow', (event) => event.persisted && refresher.start());
  const listing = early.runs ? await early.runs.catch(() => null) : null;
  if (listing) refresher.took(listing);
  else await refresher.refresh(); // none asked for early, or it failed: ask (and say why it fails)
  refresher.start();
}
