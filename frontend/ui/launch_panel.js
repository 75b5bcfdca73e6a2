// @ts-check
/**
 * The launch section: the launch-offset histogram (offset, queued, latency), their percentiles, and
 * the kernels and ops with the largest offsets.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { hasNoDevice } from '../model/devices.js';
import { formatCount, formatDuration } from '../model/format.js';
import { PANEL_FIGURES } from '../model/health.js';
import { CanvasView } from '../render/canvas_view.js';
import { FONT } from '../render/frame.js';
import { HIST_PAD, SERIES, drawHistogram, edgeX } from '../render/histogram.js';
import { el, errorText, message, spanErrorNote } from './dom.js';
import { healthSlot, showHealthNote } from './health_note.js';
import { Tooltip } from './tooltip.js';

const TOP_ROWS = 10;

export class LaunchPanel {
  /** @param {import('./store.js').Store} store @param {import('../api.js').Api} api */
  constructor(store, api) {
    this.store = store;
    this.api = api;
    this.channel = new LatestChannel();
    /** @type {any} */
    this.data = null;
    this.canvas = el('canvas', { class: 'ks-hist-canvas', 'aria-label': 'launch offset histogram' });
    this.body = el('div', { class: 'ks-launch-body' });
    this.health = healthSlot();
    const wrap = el('div', { class: 'ks-canvas-wrap' }, this.canvas);
    this.root = el('section', { class: 'ks-section' }, el('h3', {}, 'Launch offsets'), this.health,
      el('div', { class: 'ks-legend' }, SERIES.map((s) => el('span', { class: 'ks-legend-item' }, el('i', { style: { background: s.color } }), s.label)),
        el('span', { class: 'ks-keys' }, 'log-spaced bins; offset = launch call + queued + latency')),
      wrap, this.body);
    this.tooltip = new Tooltip(wrap);
    this.view = new CanvasView(this.canvas, (ctx, w, h) => {
      ctx.font = FONT;
      if (this.data?.histogram?.offset?.length) drawHistogram(ctx, this.data.histogram, w, h);
    });
    this.view.setHeight(170);
    this.canvas.addEventListener('pointermove', (e) => this.hover(e.offsetX, e.offsetY));
    this.canvas.addEventListener('pointerleave', () => this.tooltip.hide());
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if (changed.has('span') || changed.has('summary')) this.root.hidden = hasNoDevice(store.state.summary); // CPU-only: no launches
      if (changed.has('summary')) showHealthNote(this.health, store.state.summary, PANEL_FIGURES.launch);
      if (changed.has('summary') && store.state.summary) this.load();
      if (changed.has('spanError') && store.state.spanError) this.body.replaceChildren(spanErrorNote());
    });
  }

  reset() {
    this.channel.cancel();
    this.data = null;
    this.body.replaceChildren(message('info', 'Loading launch offsets\u2026'));
    this.view.requestRedraw();
  }

  async load() {
    const { span } = this.store.state;
    if (!span) return;
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'launches', { span: span.id, bins: 60, top: TOP_ROWS }, signal));
      if (r.stale) return;
      this.data = r.value;
      this.render();
    } catch (err) {
      this.body.replaceChildren(message('error', `Launch offsets: ${errorText(err)}`));
    }
  }

  render() {
    const d = this.data;
    this.view.requestRedraw();
    if (!d.pairs) {
      this.body.replaceChildren(message('info', 'No launch call is linked to a GPU activity in this trace.'));
      return;
    }
    const p = d.percentiles ?? {};
    const pctRow = (/** @type {string} */ name, /** @type {any} */ v) => el('tr', {}, el('th', {}, name),
      ['p50', 'p90', 'p99', 'max'].map((k) => el('td', {}, formatDuration(v?.[k]))));
    this.body.replaceChildren(
      el('p', {}, `${formatCount(d.pairs)} launch/activity pairs; ${formatCount(d.short_kernels)} kernels ran shorter than their launch call.`),
      el('table', { class: 'ks-table ks-compact' }, el('thead', {}, el('tr', {}, el('th', {}, ''), ['p50', 'p90', 'p99', 'max'].map((k) => el('th', {}, k)))),
        el('tbody', {}, pctRow('offset', p.offset_us), pctRow('queued', p.queued_us), pctRow('latency', p.latency_us))),
      el('div', { class: 'ks-two' }, topTable('Kernels (largest total offset first)', d.by_kernel), topTable('Ops issuing them', d.by_op)));
  }

  /** @param {number} xCss @param {number} yCss */
  hover(xCss, yCss) {
    const h = this.data?.histogram;
    const bins = h?.offset?.length ?? 0;
    if (!bins || xCss < HIST_PAD.left) return this.tooltip.hide();
    const k = Math.floor(((xCss - HIST_PAD.left) * bins) / (edgeX(bins, bins, this.view.widthCss) - HIST_PAD.left));
    if (k < 0 || k >= bins) return this.tooltip.hide();
    this.tooltip.show(xCss, yCss, `${formatDuration(h.edges_us[k])} \u2013 ${formatDuration(h.edges_us[k + 1])}`,
      SERIES.map((s) => /** @type {[string, string]} */ ([s.label, formatCount(h[s.key]?.[k] ?? 0)])));
  }
}

/** @param {string} title @param {any[]} rows */
function topTable(title, rows) {
  const head = ['name', 'count', 'offset p50', 'p99', 'queued p50', 'latency p50', 'short'];
  return el('div', {}, el('h4', {}, title), el('div', { class: 'ks-table-wrap' }, el('table', { class: 'ks-table ks-compact' },
    el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
    el('tbody', {}, (rows ?? []).slice(0, TOP_ROWS).map((r) => el('tr', {}, el('td', { class: 'ks-name', title: String(r.name) }, String(r.name)),
      el('td', {}, formatCount(r.count)), el('td', {}, formatDuration(r.offset_p50_us)), el('td', {}, formatDuration(r.offset_p99_us)),
      el('td', {}, formatDuration(r.queued_p50_us)), el('td', {}, formatDuration(r.latency_p50_us)), el('td', {}, formatCount(r.short))))))));
}
