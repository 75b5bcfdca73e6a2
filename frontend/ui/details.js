// @ts-check
/**
 * The selection panel: the selected event's details from the `event` route, its launch offset split
 * into the launch call, queueing behind earlier work and launch latency, links to the launch
 * call or the activities it owns, and the event's full `args` as the trace file holds them.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { argRows } from '../model/args.js';
import { formatDuration, formatTimestamp } from '../model/format.js';
import { el, errorText, message } from './dom.js';
import { WholeName } from './full_name.js';

/** Event kinds drawn on GPU lanes (the analyses' GPU kinds, trace/kinds.py). */
const GPU_KINDS = new Set(['kernel', 'memcpy', 'memset', 'gpu_user_annotation', 'cuda_sync']);

/**
 * The selection the lanes draw, from an `event` answer.
 * @param {any} ev
 * @returns {NonNullable<import('./store.js').State['sel']>}
 */
export function selectionFromEvent(ev) {
  return { row: Number(ev.row), laneId: Number(ev.lane), laneKind: GPU_KINDS.has(ev.kind) ? 'gpu' : 'cpu',
    depth: Number(ev.depth) || 0, startUs: Number(ev.start_us), endUs: Number(ev.start_us) + Number(ev.dur_us), name: String(ev.name) };
}

export class DetailsPanel {
  /**
   * @param {import('./store.js').Store} store
   * @param {import('../api.js').Api} api
   * @param {(row: number, zoom: boolean) => void} selectRow selects (and optionally zooms to) another event
   */
  constructor(store, api, selectRow) {
    this.store = store;
    this.api = api;
    this.selectRow = selectRow;
    this.channel = new LatestChannel();
    /** @type {{span: string, ev: any} | null} the last answer, reused when a link restores its selection */
    this.last = null;
    this.wholeName = new WholeName(store, api);
    /** @type {string | undefined} the `name_key` of the cut name on show (its whole name box stays open for it) */
    this.nameKey = undefined;
    this.root = el('div', { class: 'ks-details', 'aria-live': 'polite' });
    this.empty();
    store.subscribe((changed) => {
      if (changed.has('span')) this.channel.cancel();
      if (changed.has('sel') || changed.has('span')) this.load();
    });
  }

  empty() {
    this.root.replaceChildren(el('div', { class: 'ks-hint' }, 'Click an op or kernel to see its launch flow and launch offset.'));
  }

  async load() {
    const { span, sel } = this.store.state;
    if (!span || !sel) {
      this.channel.cancel();
      this.empty();
      return;
    }
    if (this.last && this.last.span === span.id && this.last.ev.row === sel.row) {
      this.render(this.last.ev);
      return;
    }
    // At once what the lanes already know; then the event (an in-memory lookup); then its args, which
    // are read back from the trace file (the first read of a large gzip can take most of a second).
    this.root.replaceChildren(el('h4', { class: 'ks-details-name' }, sel.name || '\u2026'),
      el('dl', {}, [['start', formatTimestamp(sel.startUs)], ['duration', formatDuration(sel.endUs - sel.startUs)]]
        .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])), el('div', { class: 'ks-hint' }, 'Loading the details\u2026'));
    try {
      const first = await this.channel.run((signal) => getWhenReady(this.api, 'event', { span: span.id, row: sel.row }, signal));
      if (first.stale) return;
      this.render(first.value, true);
      const full = await this.channel.run((signal) => getWhenReady(this.api, 'event', { span: span.id, row: sel.row, args: 1 }, signal));
      if (full.stale) return;
      this.last = { span: span.id, ev: full.value };
      this.render(full.value);
    } catch (err) {
      this.root.replaceChildren(message('error', `Event: ${errorText(err)}`));
    }
  }

  /** @param {any} ev @param {boolean} [argsPending] the args are still being read */
  render(ev, argsPending = false) {
    const rows = [['kind', `${ev.kind} (${ev.cat})`], ['lane', ev.lane_label], ['start', formatTimestamp(ev.start_us)],
      ['duration', formatDuration(ev.dur_us)], ['correlation', ev.correlation ?? '\u2013'], ['external id', ev.external_id ?? '\u2013']];
    const cut = typeof ev.name_key === 'string';  // the server cut the name: it can be shown whole on demand
    if (this.nameKey !== ev.name_key) this.wholeName.hide();
    this.nameKey = ev.name_key;
    const parts = [el('h4', { class: 'ks-details-name' }, String(ev.name)),
      ...(cut ? [el('div', { class: 'ks-hint' }, this.wholeName.button(ev.name_key)), this.wholeName.root] : []),
      el('dl', {}, rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]))];
    if (ev.launch) parts.push(this.launchBlock(ev));
    if (Array.isArray(ev.activities) && ev.activities.length) parts.push(this.activitiesBlock(ev));
    parts.push(argsPending ? el('div', { class: 'ks-hint ks-args-pending' }, 'args: reading them from the trace file\u2026') : this.argsBlock(ev));
    this.root.replaceChildren(...parts);
  }

  /** @param {any} ev the answer of `event?args=1` */
  argsBlock(ev) {
    if (ev.args_error) return el('div', { class: 'ks-hint' }, `args: ${ev.args_error}`);
    const rows = argRows(ev.args);
    if (!rows.length) return el('div', { class: 'ks-hint' }, 'No args in the trace file for this event.');
    return el('details', { class: 'ks-args', open: true }, el('summary', {}, `args (${rows.length})`),
      el('dl', {}, rows.flatMap((r) => [el('dt', {}, r.key), el('dd', { class: r.multiline ? 'ks-args-multi' : undefined }, r.text)])));
  }

  /** @param {any} ev a GPU activity with its launch */
  launchBlock(ev) {
    const l = ev.launch;
    const c = ev.captured_by;
    const block = el('div', { class: 'ks-launch' },
      el('div', {}, 'Launched by ', this.link(l.name, l.row), ` at ${formatTimestamp(l.start_us)}`,
        l.op ? [' from ', this.link(l.op.name, l.op.row)] : null),
      c ? el('div', { class: 'ks-captured' }, `Replayed from a graph: captured by ${c.ops.join(' \u203a ')} `
        + `(attributed from ${c.reference === 'self' ? 'this trace\u2019s own launches' : c.reference})`
        + (c.inputs ? `; inputs ${c.inputs}` : '')) : null);
    if (typeof l.offset_us === 'number') {
      const call = Math.max(l.offset_us - l.queued_us - Math.max(l.latency_us, 0), 0);
      const parts = /** @type {[string, number, string][]} */ ([['call', call, 'ks-seg-call'], ['queued', l.queued_us, 'ks-seg-queued'],
        ['latency', Math.max(l.latency_us, 0), 'ks-seg-latency']]);
      const total = parts.reduce((a, p) => a + p[1], 0) || 1;
      block.append(
        el('div', { class: 'ks-offset' }, `Launch offset ${formatDuration(l.offset_us)} = call ${formatDuration(call)} + queued ${formatDuration(l.queued_us)} + latency ${formatDuration(l.latency_us)}`,
          l.short ? el('span', { class: 'ks-badge' }, 'shorter than its launch') : null),
        el('div', { class: 'ks-offset-bar', title: 'launch call | queued behind earlier work | launch latency' },
          parts.map(([name, us, cls]) => el('span', { class: cls, style: { flexGrow: String(us / total) }, title: `${name} ${formatDuration(us)}` }))));
    }
    return block;
  }

  /** @param {any} ev a launch call */
  activitiesBlock(ev) {
    const more = (ev.activities_total ?? ev.activities.length) - ev.activities.length;
    return el('div', { class: 'ks-launch' }, el('div', {}, `Launched ${ev.activities_total ?? ev.activities.length} GPU activities:`),
      el('ul', {}, ev.activities.map((/** @type {any} */ a) => el('li', {}, this.link(a.name, a.row), ` ${formatDuration(a.dur_us)} at ${formatTimestamp(a.start_us)}`))),
      more > 0 ? el('div', { class: 'ks-hint' }, `and ${more} more`) : null);
  }

  /** @param {string} name @param {number} row */
  link(name, row) {
    return el('button', { class: 'ks-link', type: 'button', onclick: () => this.selectRow(row, true) }, String(name));
  }
}
