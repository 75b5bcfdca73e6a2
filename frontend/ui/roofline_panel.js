// @ts-check
/**
 * The Roofline panel: every op shape of the span (or of the area selected in the lanes) with a work model, placed
 * by its arithmetic intensity and achieved TFLOP/s under the device's roofs (`tables?by=roofline`), area by kernel
 * time, colour by category. Hover (or the arrow keys on the focused chart) describes a point; a click (or Enter)
 * selects its first kernel on the lanes, zoomed to at least SHOW_PX wide as a search hit is, and brings the lanes
 * into view; "kernel n of m" steps through its other kernels, each selected in turn (the lanes hold one selection,
 * and the Selection drawer, in view wherever the page is scrolled, describes each).
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { formatCount, formatTimestamp } from '../model/format.js';
import { PANEL_FIGURES } from '../model/health.js';
import { chartPoints, coverageLines, focusStep, hitPoint, layoutChart, legendCategories, pointTooltip, pointsBelow } from '../model/roofline.js';
import { windowShowing } from '../model/scale.js';
import { CanvasView } from '../render/canvas_view.js';
import { FONT } from '../render/frame.js';
import { drawRoofline } from '../render/roofline.js';
import { el, errorText, message, spanErrorNote } from './dom.js';
import { healthSlot, showHealthNote } from './health_note.js';
import { Tooltip } from './tooltip.js';

/** Op shapes asked for: the route's most, the ones with the most kernel time. */
const LIMIT = 500;
const CHART_H = 380;
/** A selected kernel is shown at least this wide on the lanes (the search's SEARCH_HIT_PX): a 1 px outline is not found by eye. */
const SHOW_PX = 40;

export class RooflinePanel {
  /**
   * @param {import('./store.js').Store} store @param {import('../api.js').Api} api
   * @param {(row: number) => void} selectRow selects an event row on the lanes (details, outline)
   * @param {() => void} reveal scrolls the lanes into view
   * @param {() => number} [plotWidth] the lanes' plot width (CSS px): a selected kernel is zoomed to SHOW_PX of it
   */
  constructor(store, api, selectRow, reveal, plotWidth = () => 1000) {
    this.store = store;
    this.api = api;
    this.selectRow = selectRow;
    this.reveal = reveal;
    this.plotWidth = plotWidth;
    /** @type {number | null} the kernel row asked for, zoomed to when its selection arrives */
    this.pendingRow = null;
    this.channel = new LatestChannel();
    /** @type {any} the answer on screen */
    this.body = null;
    /** @type {import('../model/roofline.js').Chart | null} the last drawing's geometry (the hit test's too) */
    this.chart = null;
    this.hover = -1;
    this.focus = -1;
    /** @type {{index: number, k: number} | null} the row picked (index into the answer's rows) and which of its kernels is selected */
    this.picked = null;
    this.canvas = el('canvas', { class: 'ks-roofline-canvas', tabIndex: 0,
      'aria-label': 'roofline chart: arrow keys move between op shapes (most kernel time first), Enter selects their kernels on the lanes' });
    const wrap = el('div', { class: 'ks-canvas-wrap' }, this.canvas);
    this.tooltip = new Tooltip(wrap);
    this.health = healthSlot();
    this.legend = el('div', { class: 'ks-legend ks-roofline-legend' });
    this.note = el('div', { class: 'ks-hint ks-roofline-note' });
    this.status = el('div', { class: 'ks-roofline-status' });
    this.picker = el('div', { class: 'ks-roofline-picked', 'aria-live': 'polite' });
    this.scope = el('div', { class: 'ks-hint ks-roofline-scope' });
    this.root = el('section', { class: 'ks-section ks-roofline' }, el('h3', {}, 'Roofline'), this.health, this.scope, this.legend,
      this.status, wrap, this.note, this.picker);
    this.view = new CanvasView(this.canvas, (ctx, w, h) => this.draw(ctx, w, h));
    this.view.setHeight(CHART_H);
    this.canvas.addEventListener('pointermove', (e) => this.hoverAt(e.offsetX, e.offsetY));
    this.canvas.addEventListener('pointerleave', () => this.setHover(-1));
    // A click picks what the hover box describes (a click's offsets are whole pixels, the pointer's are not: at the rim
    // of a point they may tell another); with no hover (touch), what lies under it.
    this.canvas.addEventListener('click', (e) => {
      const k = this.hover >= 0 ? this.hover : this.chart ? hitPoint(this.chart, e.offsetX, e.offsetY) : -1;
      if (k >= 0) this.pick(k);
    });
    this.canvas.addEventListener('keydown', (e) => this.key(e));
    this.canvas.addEventListener('blur', () => { this.focus = -1; this.setHover(-1); });
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if (changed.has('summary')) showHealthNote(this.health, store.state.summary, PANEL_FIGURES.kernelTable);
      if ((changed.has('summary') || changed.has('area')) && store.state.summary) this.load();
      if (changed.has('spanError') && store.state.spanError) this.status.replaceChildren(spanErrorNote());
      if (changed.has('sel')) this.followSelection();
    });
  }

  reset() {
    this.channel.cancel();
    this.body = null;
    this.picked = null;
    this.pendingRow = null;
    this.hover = this.focus = -1;
    this.tooltip.hide();
    this.legend.replaceChildren();
    this.note.replaceChildren();
    this.picker.replaceChildren();
    this.status.replaceChildren(message('info', 'Loading the roofline\u2026'));
    this.view.requestRedraw();
  }

  async load() {
    const { span, area } = this.store.state;
    if (!span) return;
    /** @type {Record<string, string | number>} */
    const params = { span: span.id, by: 'roofline', limit: LIMIT };
    if (area) Object.assign(params, { start_us: area.t0Us, end_us: area.t1Us });
    this.scope.textContent = area ? `Selected area ${formatTimestamp(area.t0Us)} \u2013 ${formatTimestamp(area.t1Us)}.` : '';
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'tables', params, signal));
      if (r.stale) return;
      this.show(r.value);
    } catch (err) {
      this.body = null;
      this.status.replaceChildren(message('error', `Roofline: ${errorText(err)}`));
      this.view.requestRedraw();
    }
  }

  /** @param {any} body */
  show(body) {
    this.body = body;
    this.picked = null;
    this.hover = this.focus = -1;
    this.tooltip.hide();
    this.picker.replaceChildren();
    const rows = Array.isArray(body?.rows) ? body.rows : [];
    const points = chartPoints(rows);
    this.legend.replaceChildren(...legendCategories(rows, points).map((c) => el('span', { class: 'ks-legend-item', dataset: { category: c.key } },
      el('i', { style: { background: c.color, borderRadius: '50%' } }), c.label)),
    el('span', { class: 'ks-keys' }, 'area: kernel time; click a point to select its kernels'));
    this.note.replaceChildren(...coverageLines(body, points.length, pointsBelow(rows, body?.totals?.roofs)).map((t) => el('span', {}, `${t} `)));
    this.status.replaceChildren(...(points.length ? [] : [message('info', emptyText(rows, body?.totals))]));
    this.canvas.dataset.points = String(points.length);
    this.view.requestRedraw();
  }

  /** @param {CanvasRenderingContext2D} ctx @param {number} widthCss @param {number} heightCss */
  draw(ctx, widthCss, heightCss) {
    const rows = this.body?.rows;
    if (!Array.isArray(rows)) {
      this.chart = null;
      return;
    }
    ctx.font = FONT;
    this.chart = layoutChart(rows, this.body.totals?.roofs, widthCss, heightCss);
    const placedOf = (/** @type {number} */ index) => this.chart?.placed.findIndex((p) => p.index === index) ?? -1;
    drawRoofline(ctx, this.chart, { hover: this.hover, selected: this.picked ? placedOf(this.picked.index) : -1 });
  }

  /** @param {number} xCss @param {number} yCss */
  hoverAt(xCss, yCss) {
    this.setHover(this.chart ? hitPoint(this.chart, xCss, yCss) : -1, xCss, yCss);
  }

  /** Shows the hover box of placed point `k` (-1 hides it) at (xCss, yCss), its centre by default. @param {number} k @param {number} [xCss] @param {number} [yCss] */
  setHover(k, xCss, yCss) {
    const p = this.chart?.placed[k];
    this.canvas.style.cursor = p ? 'pointer' : '';
    this.canvas.dataset.hover = p ? String(p.index) : ''; // the answer's row under the pointer (the browser tests read it)
    if (k !== this.hover) {
      this.hover = p ? k : -1;
      this.view.requestRedraw();
    }
    if (!p) {
      this.tooltip.hide();
      return;
    }
    const text = pointTooltip(this.body.rows[p.index]);
    this.tooltip.show(xCss ?? p.xCss, yCss ?? p.yCss, text.title, text.rows, `roofline:${p.index}`);
  }

  /** @param {KeyboardEvent} e */
  key(e) {
    const count = this.chart?.placed.length ?? 0;
    if (e.key === 'Escape') {
      this.focus = -1;
      this.setHover(-1);
      return;
    }
    if ((e.key === 'Enter' || e.key === ' ') && this.focus >= 0) {
      e.preventDefault();
      this.pick(this.focus);
      return;
    }
    const next = focusStep(this.focus, e.key, count);
    if (next === null) return;
    e.preventDefault();
    e.stopPropagation(); // the lanes' keys (A/D, W/S) are letters; arrows here are the chart's
    this.focus = next;
    this.setHover(next);
  }

  /** Selects the kernels of placed point `k`: its first kernel on the lanes, brought into view. @param {number} k */
  pick(k) {
    const p = this.chart?.placed[k];
    if (!p) return;
    this.picked = { index: p.index, k: 0 };
    this.selectKernel(0);
    this.reveal();
  }

  /** Selects kernel `k` of the picked row on the lanes and says which one it is. @param {number} k */
  selectKernel(k) {
    const row = this.picked ? this.body?.rows?.[this.picked.index] : null;
    const kernelRows = Array.isArray(row?.kernel_rows) ? row.kernel_rows : [];
    if (!this.picked || !row) return;
    this.view.requestRedraw();
    if (!kernelRows.length) {
      this.picker.replaceChildren(el('span', { class: 'ks-hint' }, `${row.name}: no kernel of it can be shown on the lanes.`));
      return;
    }
    this.picked.k = (k + kernelRows.length) % kernelRows.length;
    this.pendingRow = Number(kernelRows[this.picked.k]);
    this.selectRow(this.pendingRow);
    const total = Number(row.kernel_count ?? kernelRows.length);
    const step = (/** @type {number} */ d) => () => this.picked && this.selectKernel(this.picked.k + d);
    this.picker.replaceChildren(el('span', { class: 'ks-roofline-picked-name' }, `${row.name} ${String(row.input_dims ?? '')}`), ' \u2014 ',
      el('span', { class: 'ks-roofline-picked-count', dataset: { k: String(this.picked.k), rows: String(kernelRows.length) } },
        `kernel ${formatCount(this.picked.k + 1)} of ${formatCount(kernelRows.length)}${total > kernelRows.length ? ` (the earliest of ${formatCount(total)})` : ''}`),
      ' ', el('button', { class: 'ks-roofline-prev', title: 'select the previous kernel', onclick: step(-1) }, '\u25c0'),
      el('button', { class: 'ks-roofline-next', title: 'select the next kernel', onclick: step(1) }, '\u25b6'));
  }

  /** The kernel asked for is selected: zoom the lanes to it. A selection made elsewhere (another event, or none) drops the picked point. */
  followSelection() {
    const { sel, win, bounds } = this.store.state;
    if (sel && sel.row === this.pendingRow) {
      this.pendingRow = null;
      const to = windowShowing(win, bounds, sel.startUs, sel.endUs, this.plotWidth(), SHOW_PX);
      if (to !== win) queueMicrotask(() => this.store.set({ win: to })); // after every view has seen the selection
    }
    const row = this.picked ? this.body?.rows?.[this.picked.index] : null;
    if (!row || (sel && Array.isArray(row.kernel_rows) && row.kernel_rows.includes(sel.row))) return;
    this.picked = null;
    this.picker.replaceChildren();
    this.view.requestRedraw();
  }
}

/** Why nothing is drawn. @param {any[]} rows @param {any} totals */
function emptyText(rows, totals) {
  if (!rows.length) return 'No kernel ran inside an op here.';
  return totals?.recorded_inputs === false
    ? 'No op shape here has a work model: the trace records no input shapes (profile with record_shapes=True).'
    : 'No op shape here has a work model (FLOPs and bytes), so none can be placed.';
}
