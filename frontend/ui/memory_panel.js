// @ts-check
/**
 * The memory section: allocated and reserved bytes per device on the lanes' time axis (same gutter,
 * same scale), refetched per window like the lanes, with the peak named above the chart, and a note
 * when the curve is relative to the trace start or reserved bytes were not recorded.
 */
import { getWhenReady } from '../loading.js';
import { formatBytes, formatTimestamp } from '../model/format.js';
import { bisectRight } from '../model/hit.js';
import { memoryLabels, memoryNote } from '../model/memory.js';
import { GUTTER_W, RIGHT_PAD } from '../model/layout.js';
import { TextWidthCache, fetchWindow, payloadServes } from '../model/lod.js';
import { TimeScale, windowAround } from '../model/scale.js';
import { CanvasView } from '../render/canvas_view.js';
import { COLORS, FONT } from '../render/frame.js';
import { BAND_H, drawMemoryBand } from '../render/memory.js';
import { collapsible, el, errorText, message, spanErrorNote } from './dom.js';
import { Tooltip } from './tooltip.js';
import { WindowedLoader } from './windowed.js';

/**
 * One device of the `memory` answer; reserved bytes that were not recorded (`null`) stay empty, so
 * no line is drawn at 0.
 * @param {any} d @returns {import('../render/memory.js').MemorySeries}
 */
function toSeries(d) {
  const labels = memoryLabels(d);
  return { device: String(d.device), tsUs: Float64Array.from(d.ts_us ?? []), allocated: Float64Array.from(d.allocated_bytes ?? []),
    reserved: Float64Array.from(labels.recorded ? d.reserved_bytes ?? [] : []), peakAllocated: Number(d.peak_allocated_bytes) || 0,
    peakReserved: Number(d.peak_reserved_bytes) || 0, peakAtUs: Number(d.peak_at_us), peakOp: String(d.peak_op ?? ''),
    labels, note: memoryNote(d) };
}

export class MemoryPanel {
  /**
   * @param {import('./store.js').Store} store @param {import('../api.js').Api} api
   * @param {typeof collapsible} [fold] makes the section foldable (returns its setter)
   */
  constructor(store, api, fold = collapsible) {
    this.store = store;
    this.api = api;
    /** @type {{startUs: number, endUs: number, usPerPx: number, downsampled: boolean, series: import('../render/memory.js').MemorySeries[]} | null} */
    this.data = null;
    this.canvas = el('canvas', { class: 'ks-memory-canvas', 'aria-label': 'memory timeline' });
    this.peaks = el('div', { class: 'ks-peaks' });
    this.notes = el('div', { class: 'ks-hint ks-memory-notes' });
    this.status = el('div', {});
    const wrap = el('div', { class: 'ks-canvas-wrap' }, this.canvas);
    this.root = el('section', { class: 'ks-section' }, el('h3', {}, 'Memory'), this.peaks, this.notes, this.status, wrap);
    this.root.dataset.foldable = 'yes';
    /** Folds the panel to its heading when the trace has no memory events. */
    this.fold = fold(this.root);
    this.tooltip = new Tooltip(wrap);
    const measure = /** @type {CanvasRenderingContext2D} */ (this.canvas.getContext('2d'));
    measure.font = FONT;
    this.widths = new TextWidthCache((t) => measure.measureText(t).width);
    this.view = new CanvasView(this.canvas, (ctx, w) => this.draw(ctx, w));
    this.view.setHeight(BAND_H);
    this.loader = new WindowedLoader({ fetch: (s) => this.fetch(s), serves: (p) => this.serves(p), accept: (p) => this.accept(p),
      fail: (err) => this.status.replaceChildren(message('error', `Memory: ${errorText(err)}`)) });
    /** the pointer of the hover box, in the canvas: a zoom or a pan redescribes what is now under it */
    this.pointer = { xCss: 0, yCss: 0 };
    this.canvas.addEventListener('pointermove', (e) => {
      this.pointer = { xCss: e.offsetX, yCss: e.offsetY };
      this.hover(e.offsetX, e.offsetY);
    });
    this.canvas.addEventListener('pointerleave', () => this.tooltip.hide());
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if (changed.has('spanError') && store.state.spanError) this.status.replaceChildren(spanErrorNote());
      if ((changed.has('win') || changed.has('summary')) && store.state.summary) this.loader.update();
      if (changed.has('win')) this.view.requestRedraw();
      if (changed.has('win') && this.tooltip.shown) this.hover(this.pointer.xCss, this.pointer.yCss);
    });
  }

  reset() {
    this.loader.reset();
    this.data = null;
    this.canvas.hidden = false;
    this.peaks.replaceChildren();
    this.notes.replaceChildren();
    this.status.replaceChildren(message('info', 'Loading memory\u2026'));
    this.view.requestRedraw();
  }

  widthPx() {
    return Math.max(1, this.view.widthCss - GUTTER_W - RIGHT_PAD);
  }

  /** @param {AbortSignal} signal */
  async fetch(signal) {
    const { span, win, bounds } = this.store.state;
    if (!span) throw new Error('no span selected');
    const w = fetchWindow(win, this.widthPx(), 0.5, bounds);
    // uPlot's rule: 4 samples per pixel keep the min/max envelope exact after downsampling.
    const maxPoints = Math.min(100000, Math.max(16, 4 * w.widthPx));
    const body = await getWhenReady(this.api, 'memory', { span: span.id, start_us: w.startUs, end_us: w.endUs, max_points: maxPoints }, signal);
    const devices = Array.isArray(body.devices) ? body.devices : [];
    return { startUs: w.startUs, endUs: w.endUs, usPerPx: (w.endUs - w.startUs) / w.widthPx,
      downsampled: devices.some((/** @type {any} */ d) => d.downsampled), series: devices.map(toSeries) };
  }

  /** @param {NonNullable<MemoryPanel['data']>} p */
  serves(p) {
    const { win, bounds } = this.store.state;
    const covers = p.startUs <= Math.max(win.t0Us, bounds.t0Us) + 1e-9 && p.endUs >= Math.min(win.t1Us, bounds.t1Us) - 1e-9;
    if (!p.downsampled) return covers;
    return payloadServes(p, win, (win.t1Us - win.t0Us) / this.widthPx(), 1.5);
  }

  /** @param {NonNullable<MemoryPanel['data']>} p */
  accept(p) {
    this.data = p;
    this.status.replaceChildren(p.series.length ? '' : message('info', 'This trace has no memory events (profile_memory=True records them).'));
    if (p.series.length === 0) this.fold(true, 'none recorded (profile_memory=True records them)');
    else if (!this.opened) this.fold(false);
    this.opened = p.series.length > 0;
    this.canvas.hidden = p.series.length === 0;
    this.view.setHeight(Math.max(1, p.series.length) * BAND_H);
    this.peaks.replaceChildren(...p.series.map((s) => el('span', { class: 'ks-chip' },
      `${s.device}: peak ${formatBytes(s.peakAllocated)} ${s.labels.allocatedShort} at ${formatTimestamp(s.peakAtUs)}`,
      s.peakOp ? [' by ', el('code', {}, s.peakOp)] : null, ' ',
      el('button', { class: 'ks-link', type: 'button', onclick: () => this.store.set({ win: windowAround(s.peakAtUs - 50, s.peakAtUs + 50, 0.5, this.store.state.bounds) }) }, 'zoom'))));
    this.notes.replaceChildren(...p.series.filter((s) => s.note).map((s) => el('div', { dataset: { device: s.device } }, s.note)));
    this.view.requestRedraw();
  }

  /** The lanes' mapping (same gutter and padding, same window), so both charts line up. */
  scaleOf() {
    const { win } = this.store.state;
    return new TimeScale(win.t0Us, win.t1Us, GUTTER_W, Math.max(GUTTER_W + 1, this.view.widthCss - RIGHT_PAD));
  }

  /** @param {CanvasRenderingContext2D} ctx @param {number} widthCss */
  draw(ctx, widthCss) {
    ctx.font = FONT;
    ctx.fillStyle = COLORS.background;
    ctx.fillRect(0, 0, widthCss, this.view.heightCss);
    if (!this.data) return;
    const scale = this.scaleOf();
    this.data.series.forEach((s, k) => drawMemoryBand(ctx, scale, s, k * BAND_H, widthCss, this.widths));
  }

  /** @param {number} xCss @param {number} yCss */
  hover(xCss, yCss) {
    const s = this.data?.series[Math.floor(yCss / BAND_H)];
    if (!s || xCss < GUTTER_W || s.tsUs.length === 0) return this.tooltip.hide();
    const tUs = this.scaleOf().xToT(xCss);
    const i = Math.max(0, bisectRight(s.tsUs, tUs) - 1);
    this.tooltip.show(xCss, yCss, `${s.device} at ${formatTimestamp(tUs)}`,
      [[s.labels.allocatedShort, formatBytes(s.allocated[i])], ['reserved', s.labels.recorded ? formatBytes(s.reserved[i]) : 'not recorded']]);
  }
}
