// @ts-check
/**
 * The per-step table: duration, DataLoader wait and share, GPU idle while waiting, GPU busy, the
 * device time split into compute, communication (and the part of it exposed) and memcpy, and the
 * stall flag (from the `stalls` route and the summary), and torch-tb-profiler's step time by category beside them.
 * Sorted in the browser; a click zooms to the step.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { formatCount, formatDuration, formatShare, formatTimestamp } from '../model/format.js';
import { PANEL_FIGURES } from '../model/health.js';
import { windowAround } from '../model/scale.js';
import { sortSteps, stepColumns, withTbprof } from '../model/steps.js';
import { el, errorText, message, spanErrorNote } from './dom.js';
import { healthSlot, showHealthNote } from './health_note.js';

export class StepTable {
  /** @param {import('./store.js').Store} store @param {import('../api.js').Api} api @param {() => void} reveal */
  constructor(store, api, reveal) {
    this.store = store;
    this.api = api;
    this.reveal = reveal;
    this.channel = new LatestChannel();
    /** @type {any[]} */
    this.steps = [];
    this.sortKey = 'start_us';
    this.desc = false;
    this.note = el('div', { class: 'ks-hint' });
    this.table = el('div', { class: 'ks-table-wrap' });
    this.health = healthSlot();
    // torch-tb-profiler's step categories: eight more columns, shown on demand (the table fits a laptop without them)
    this.tbprofBox = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', onchange: () => this.render() }));
    this.tbprofToggle = el('label', { class: 'ks-hint ks-tbprof-toggle', hidden: true, title: "Kernel, Memcpy, Memset, Runtime, DataLoader, "
      + "CPU Exec and Other per step, on torch-tb-profiler's definitions (README)" }, this.tbprofBox, " torch-tb-profiler's categories");
    this.root = el('section', { class: 'ks-section ks-steps' }, el('h3', {}, 'Steps'), this.health, this.note, this.tbprofToggle, this.table);
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if (changed.has('summary') && store.state.summary) this.load();
      if (changed.has('spanError') && store.state.spanError) this.table.replaceChildren(spanErrorNote());
    });
  }

  reset() {
    this.channel.cancel();
    this.steps = [];
    this.note.replaceChildren();
    this.health.replaceChildren();
    this.table.replaceChildren(message('info', 'Loading steps\u2026'));
  }

  async load() {
    const { span, summary } = this.store.state;
    if (!span) return;
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'stalls', { span: span.id }, signal));
      if (r.stale) return;
      // Both routes list the steps in time order from the first (names may repeat): merge by position.
      const busy = summary?.steps ?? [];
      this.steps = withTbprof((r.value.steps ?? []).map((/** @type {any} */ s, /** @type {number} */ i) => ({ ...busy[i], ...s })), summary?.tbprof_steps);
      const total = Number(r.value.total ?? this.steps.length);
      const shown = total > this.steps.length ? ` The first ${formatCount(this.steps.length)} are listed.` : '';
      this.note.replaceChildren(`${r.value.stalled_steps ?? 0} of ${formatCount(total)} steps stalled on the DataLoader.${shown}`,
        r.value.suggestion ? ` ${r.value.suggestion}` : '');
      this.render();
    } catch (err) {
      this.table.replaceChildren(message('error', `Steps: ${errorText(err)}`));
    }
  }

  render() {
    if (this.steps.length === 0) {
      this.table.replaceChildren(message('info', 'No ProfilerStep#N annotations in this trace (profile with a schedule and call prof.step()).'));
      return;
    }
    const { summary } = this.store.state;
    const communicates = (summary?.devices ?? []).some((/** @type {any} */ d) => Number(d.comm?.kernels) > 0);
    showHealthNote(this.health, summary, communicates ? PANEL_FIGURES.stepsComm : PANEL_FIGURES.steps);
    this.tbprofToggle.hidden = !this.steps.some((s) => typeof s?.tbprof_dur_us === 'number');
    // a trace without device activity has no GPU figures to show (summary.devices lists none)
    const withDevice = !Array.isArray(summary?.devices) || summary.devices.length > 0;
    const columns = stepColumns(this.steps, communicates, this.tbprofBox.checked, withDevice);
    const column = columns.find((c) => c.key === this.sortKey) ?? columns[1];
    const head = columns.map((c) => el('th', { class: 'ks-sortable', title: c.title, 'aria-sort': c.key === this.sortKey ? (this.desc ? 'descending' : 'ascending') : 'none',
      onclick: () => { this.desc = c.key === this.sortKey ? !this.desc : c.kind !== 'text' && c.kind !== 'time'; this.sortKey = c.key; this.render(); } },
    c.head + (c.key === this.sortKey ? (this.desc ? ' \u25bc' : ' \u25b2') : '')));
    const rows = sortSteps(this.steps, column, this.desc).map((s) => el('tr', { class: `ks-clickable${s.stalled ? ' ks-stalled' : ''}`, dataset: { stalled: String(Boolean(s.stalled)), step: String(s.name) },
      onclick: () => { this.store.set({ win: windowAround(s.start_us, s.start_us + s.dur_us, 0.02, this.store.state.bounds) }); this.reveal(); } },
    columns.map((c) => el('td', { dataset: { col: c.key } }, cell(c, s[c.key])))));
    this.table.replaceChildren(el('table', { class: 'ks-table' }, el('thead', {}, el('tr', {}, head)), el('tbody', {}, rows)));
  }
}

/**
 * The content of one cell.
 * @param {import('../model/steps.js').StepColumn} column @param {any} value
 * @returns {import('./dom.js').Child | import('./dom.js').Child[]}
 */
function cell(column, value) {
  switch (column.kind) {
    case 'time': return formatTimestamp(value);
    case 'dur': return formatDuration(value);
    case 'share': return [el('span', { class: 'ks-bar' }, el('span', { style: { width: `${Math.min(100, 100 * (Number(value) || 0))}%` } })), formatShare(value)];
    case 'flag': return value ? el('span', { class: 'ks-flag' }, '\u26a0 stalled') : '';
    default: return String(value ?? '');
  }
}
