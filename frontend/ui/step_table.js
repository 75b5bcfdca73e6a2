// @ts-check
/**
 * The per-step table: duration, DataLoader wait and share, GPU idle while waiting, GPU busy, and the
 * stall flag (from the `stalls` route and the summary). Sorted in the browser; a click zooms to the step.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { formatDuration, formatShare, formatTimestamp } from '../model/format.js';
import { windowAround } from '../model/scale.js';
import { el, errorText, message } from './dom.js';

/** @type {[string, string, (s: any) => number | string][]} key, header, value */
const COLUMNS = [
  ['name', 'step', (s) => s.name],
  ['start_us', 'start', (s) => s.start_us],
  ['dur_us', 'duration', (s) => s.dur_us],
  ['dataloader_us', 'DataLoader wait', (s) => s.dataloader_us],
  ['dataloader_share', 'DataLoader share', (s) => s.dataloader_share],
  ['gpu_idle_during_dataloader_us', 'GPU idle while waiting', (s) => s.gpu_idle_during_dataloader_us],
  ['gpu_busy_us', 'GPU busy', (s) => s.gpu_busy_us],
  ['stalled', 'stalled', (s) => (s.stalled ? 1 : 0)],
];

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
    this.root = el('section', { class: 'ks-section ks-steps' }, el('h3', {}, 'Steps'), this.note, this.table);
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if (changed.has('summary') && store.state.summary) this.load();
      if (changed.has('spanError') && store.state.spanError) this.table.replaceChildren(message('error', store.state.spanError));
    });
  }

  reset() {
    this.channel.cancel();
    this.steps = [];
    this.note.replaceChildren();
    this.table.replaceChildren(message('info', 'Loading steps\u2026'));
  }

  async load() {
    const { span, summary } = this.store.state;
    if (!span) return;
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'stalls', { span: span.id }, signal));
      if (r.stale) return;
      // Step names are unique in a span; start times may be rounded differently by the two routes.
      const busy = new Map((summary?.steps ?? []).map((/** @type {any} */ s) => [s.name, s]));
      this.steps = (r.value.steps ?? []).map((/** @type {any} */ s) => ({ ...busy.get(s.name), ...s }));
      this.note.replaceChildren(`${r.value.stalled_steps ?? 0} of ${this.steps.length} steps stalled on the DataLoader.`,
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
    const column = COLUMNS.find((c) => c[0] === this.sortKey) ?? COLUMNS[1];
    const sorted = [...this.steps].sort((a, b) => {
      const va = column[2](a);
      const vb = column[2](b);
      const cmp = typeof va === 'string' ? String(va).localeCompare(String(vb), undefined, { numeric: true }) : Number(va) - Number(vb);
      return this.desc ? -cmp : cmp;
    });
    const head = COLUMNS.map(([key, text]) => el('th', { class: 'ks-sortable', 'aria-sort': key === this.sortKey ? (this.desc ? 'descending' : 'ascending') : 'none',
      onclick: () => { this.desc = key === this.sortKey ? !this.desc : key !== 'name' && key !== 'start_us'; this.sortKey = key; this.render(); } },
    text + (key === this.sortKey ? (this.desc ? ' \u25bc' : ' \u25b2') : '')));
    const rows = sorted.map((s) => el('tr', { class: `ks-clickable${s.stalled ? ' ks-stalled' : ''}`, dataset: { stalled: String(Boolean(s.stalled)), step: String(s.name) },
      onclick: () => { this.store.set({ win: windowAround(s.start_us, s.start_us + s.dur_us, 0.02, this.store.state.bounds) }); this.reveal(); } },
    el('td', {}, String(s.name)), el('td', {}, formatTimestamp(s.start_us)), el('td', {}, formatDuration(s.dur_us)),
    el('td', {}, formatDuration(s.dataloader_us)),
    el('td', {}, el('span', { class: 'ks-bar' }, el('span', { style: { width: `${Math.min(100, 100 * (Number(s.dataloader_share) || 0))}%` } })), formatShare(s.dataloader_share)),
    el('td', {}, formatDuration(s.gpu_idle_during_dataloader_us)), el('td', {}, formatDuration(s.gpu_busy_us)),
    el('td', {}, s.stalled ? el('span', { class: 'ks-flag' }, '\u26a0 stalled') : '')));
    this.table.replaceChildren(el('table', { class: 'ks-table' }, el('thead', {}, el('tr', {}, head)), el('tbody', {}, rows)));
  }
}
