// @ts-check
/**
 * The Compare panel: pick a baseline (a run or a span of the logdir) and see the span on screen (or its
 * whole run) against it: the step-time headline, both verdicts, what changed the most (the kernels
 * under compute), the summary figures, rank by rank, and the op and kernel tables joined by name.
 * The comparison is part of the page state (`store.state.compare`), so it rides in the URL. Span
 * sides wait for their load (`status?load=1`, no 409 in the console); run sides are asked again every
 * 1.5 s while their spans load.
 */
import { ApiError, LatestChannel, sleep } from '../api.js';
import { waitLoaded } from '../loading.js';
import {
  baseOptions, changeRows, changesNote, compareParams, headline, joinedRows, rankRows, stepsLine, summaryRows, verdictLine,
} from '../model/compare.js';
import { CompareLanes } from './compare_lanes.js';
import { CompareStrip } from './compare_strip.js';
import { el, errorText, message } from './dom.js';
import { POLL_MS } from './run_verdict.js';

const SIGN_CLASS = { '-1': 'ks-better', 0: '', 1: 'ks-worse' };

/**
 * @param {string[]} head @param {(string | HTMLElement)[][]} rows @param {string[][]} [classes] per cell
 * @param {string[]} [titles] per row: the whole name, on its name cell (the second, else the first)
 */
function table(head, rows, classes = [], titles = []) {
  return el('div', { class: 'ks-table-wrap' }, el('table', { class: 'ks-table ks-compare-table' },
    el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
    el('tbody', {}, rows.map((cells, i) => el('tr', {}, cells.map((c, j) => el('td', {
      class: classes[i]?.[j] ?? '', title: titles[i] && j === (head[0] === '#' ? 1 : 0) ? titles[i] : undefined }, c)))))));
}

export class ComparePanel {
  /**
   * @param {import('./store.js').Store} store
   * @param {import('../api.js').Api} api
   */
  constructor(store, api) {
    this.store = store;
    this.api = api;
    this.channel = new LatestChannel();
    this.baseSelect = el('select', { 'aria-label': 'baseline', onchange: () => this.choose() });
    this.candSelect = el('select', { 'aria-label': 'candidate', onchange: () => this.choose() },
      el('option', { value: 'span' }, 'the span on screen'), el('option', { value: 'run' }, 'its whole run'));
    this.status = el('div', { class: 'ks-hint' });
    this.body = el('div', { class: 'ks-compare-body' });
    this.strip = new CompareStrip();
    this.lanes = new CompareLanes(store, api, this.strip.input);
    this.root = el('section', { class: 'ks-section ks-compare' }, el('h3', {}, 'Compare'),
      el('div', { class: 'ks-compare-pick' }, 'Baseline ', this.baseSelect, ' against ', this.candSelect), this.status, this.body);
    /** @type {string} the parameters last asked for */
    this.asked = '';
    this.setRuns([]);
    store.subscribe((changed) => {
      if (changed.has('span') || changed.has('compare')) this.refresh();
    });
  }

  /** Refills the baseline choices from a `runs` listing (the choice kept). @param {import('../model/runs.js').RunInfo[]} runs */
  setRuns(runs) {
    const chosen = this.store.state.compare?.base ?? '';
    const options = [{ value: '', label: '\u2014 pick a run or a span \u2014' }, ...baseOptions(runs)];
    if (chosen && !options.some((o) => o.value === chosen)) options.push({ value: chosen, label: `${chosen} (not listed)` });
    this.baseSelect.replaceChildren(...options.map((o) => el('option', { value: o.value }, o.label)));
    this.baseSelect.value = chosen;
    this.candSelect.value = this.store.state.compare?.candRun ? 'run' : 'span';
    this.lanes.setRuns(runs);
  }

  choose() {
    const base = this.baseSelect.value;
    this.store.set({ compare: base ? { base, candRun: this.candSelect.value === 'run', step: this.store.state.compare?.step } : null });
  }

  refresh() {
    const { compare, span } = this.store.state;
    this.baseSelect.value = compare?.base ?? '';
    this.candSelect.value = compare?.candRun ? 'run' : 'span';
    const params = compareParams(compare?.base, Boolean(compare?.candRun), span);
    const key = JSON.stringify(params);
    if (key === this.asked) return;
    this.asked = key;
    if (!params) {
      this.channel.cancel();
      this.status.replaceChildren('Pick a baseline to see what changed between it and the trace on screen.');
      this.body.replaceChildren();
      this.lanes.hide();
      return;
    }
    this.status.replaceChildren(message('info', 'Comparing\u2026'));
    this.channel.run((signal) => this.ask(params, signal)).then((r) => {
      if (!r.stale) this.show(r.value);
    }).catch((err) => {
      this.asked = ''; // picking it again asks again
      this.status.replaceChildren(message('error', `Compare: ${errorText(err)}`));
      this.body.replaceChildren();
      this.lanes.hide();
    });
  }

  /** The route's result, once nothing of either side is loading. @param {Record<string, string>} params @param {AbortSignal} signal */
  async ask(params, signal) {
    for (const id of [params.base, params.cand]) if (id) await waitLoaded(this.api, id, signal);
    for (;;) {
      try {
        const answer = await this.api.get('compare', params, signal);
        if (answer?.result) return answer.result;
        this.status.replaceChildren(message('info', `Loading ${answer?.pending ?? 0} traces of the runs compared\u2026`));
      } catch (err) {
        if (!(err instanceof ApiError) || !err.notReady) throw err;
      }
      await sleep(POLL_MS, signal);
    }
  }

  /** @param {any} result */
  show(result) {
    this.status.replaceChildren(el('strong', {}, headline(result)), el('br'), verdictLine(result), el('br'), stepsLine(result),
      ` \u00b7 baseline: ${result.base?.label ?? ''}, candidate: ${result.cand?.label ?? ''}`);
    const changes = changeRows(result);
    const parts = [...(result.warnings ?? []).map((/** @type {string} */ w) => message('warn', w)),el('h4', {}, 'What changed the most (per step, mean)'),
      table(['#', 'where', 'change', 'baseline', 'candidate', 'of the change'],
        changes.map((r) => [r.rank, r.child ? `\u21b3 ${r.name}` : r.name, r.change, r.base, r.cand, r.share]),
        changes.map((r) => ['', `ks-compare-name${r.child ? ' ks-compare-child' : ''}`, SIGN_CLASS[r.sign] ?? '', '', '', '']),
        changes.map((r) => r.full)),
      el('div', { class: 'ks-hint' }, changesNote(result)),
      this.strip.root,
      this.lanes.root,
      el('h4', {}, 'Summary'),
      table(['figure', 'baseline', 'candidate', 'change', '%', 'noise', ''],
        summaryRows(result).map((r) => [r.label, r.base, r.cand, r.change, r.pct, r.noise, r.status]),
        summaryRows(result).map((r) => ['', '', '', '', '', '', r.status === 'regression' ? 'ks-worse' : r.status === 'gain' ? 'ks-better' : ''])),
    ];
    const ranks = rankRows(result);
    if (ranks.rows.length) {
      parts.push(el('h4', {}, 'Rank by rank'), table(['rank', 'step (baseline)', 'step (candidate)', 'change', '', 'top change', 'verdict'],
        ranks.rows.map((r) => [r.rank, r.base, r.cand, r.pct, r.status, r.top, r.verdict])));
      if (ranks.unmatched.length) parts.push(el('div', { class: 'ks-hint' }, `On one side only: ${ranks.unmatched.join(', ')}`));
    }
    for (const [key, what] of /** @type {const} */ ([['kernels', 'Kernels'], ['ops', 'CPU ops']])) {
      const rows = joinedRows(result[key]);
      if (!rows.length) continue;
      parts.push(el('details', { class: 'ks-compare-joined' },
        el('summary', {}, `${what} joined by name, per step (${rows.length} of ${result[key].rows_total}, largest change first)`),
        table(['name', 'baseline', 'candidate', 'change', '%', 'calls per step', ''],
          rows.map((r) => [r.name, r.base, r.cand, r.change, r.pct, r.calls, r.only]),
          rows.map((r) => ['ks-compare-name', '', '', SIGN_CLASS[r.sign] ?? '', '', '', '']), rows.map((r) => r.full))));
    }
    this.lanes.show(result); // before the strip draws: the shared step input takes the link's step
    this.strip.show(result.series);
    this.body.replaceChildren(...parts);
  }
}
