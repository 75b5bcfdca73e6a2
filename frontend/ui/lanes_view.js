// @ts-check
/**
 * The lanes canvas: steps, CPU threads and GPU streams on one time axis. Owns the lanes payload
 * (fetched per window through WindowedLoader), the vertical layout and the drawing; input handling
 * lives in lanes_input.js, hover text in tooltip.js.
 */
import { getWhenLanesReady } from '../loading.js';
import { prepareLanes } from '../model/lanes.js';
import { hitTestLanes, intervalAt } from '../model/lanes_hit.js';
import { countersHeight } from '../model/counters.js';
import { PATH_COLORS } from '../model/critical_path.js';
import { drawPathOverlay } from '../render/critical_path.js';
import { AXIS_H, GUTTER_W, HEADER_H, LOADER_H, RIGHT_PAD, STEP_H, clampScroll, defaultPins, layoutLanes } from '../model/layout.js';
import { TextWidthCache, fetchWindow, payloadServes } from '../model/lod.js';
import { TimeScale } from '../model/scale.js';
import { CanvasView } from '../render/canvas_view.js';
import { COLORS, FONT } from '../render/frame.js';
import { drawLanes } from '../render/lanes.js';
import { el, errorText, message, spanErrorNote } from './dom.js';
import { WindowedLoader } from './windowed.js';

/** Lanes are fetched with this much of the window on each side, so pans draw real data at once. */
const MARGIN_FRAC = 0.5;
/** A payload up to this many times coarser than the view is still drawn without refetching. */
const COARSE_OK = 1.5;
const MIN_HEIGHT = 140;
const MAX_HEIGHT = 620;
/** GPU streams pinned on top by default when the host's threads would push the first one below the fold (the user can unpin them). */
const PIN_BY_DEFAULT = 8;

export class LanesView {
  /**
   * @param {import('./store.js').Store} store
   * @param {import('../api.js').Api} api
   */
  constructor(store, api) {
    this.store = store;
    this.api = api;
    this.canvas = el('canvas', { class: 'ks-lanes-canvas', tabIndex: 0, 'aria-label': 'CPU and GPU lanes' });
    this.status = el('div', { class: 'ks-lanes-status' });
    this.root = el('div', { class: 'ks-lanes' }, this.canvas, this.status);
    /** @type {import('../model/lanes.js').LanesData | null} */
    this.data = null;
    /** @type {((data: import('../model/lanes.js').LanesData) => void) | null} called with every accepted answer */
    this.onData = null;
    /** @type {ReturnType<typeof layoutLanes>} */
    this.layout = { blocks: [], heightCss: 0, groups: [], countersYCss: 0 };
    /** @type {Map<number, import('../model/layout.js').LaneBlock>} */
    this.byLane = new Map();
    /** @type {Set<number>} */
    this.collapsed = new Set();
    /** @type {number[]} lane ids pinned to the top, in pin order */
    this.pinned = [];
    /** @type {Set<string>} groups shown as their header only */
    this.closedGroups = new Set();
    this.collapseDefaultsSet = false;
    /** the user pinned or unpinned a lane: no more default pins */
    this.pinsByUser = false;
    this.scrollYCss = 0;
    /** @type {{laneId: number, depth: number, startUs: number, endUs: number} | null} */
    this.hover = null;
    /** @type {{startUs: number, endUs: number, kind: string, label: string, lane?: number}[]} the critical path's segments, when shown */
    this.path = [];
    const measure = /** @type {CanvasRenderingContext2D} */ (this.canvas.getContext('2d'));
    measure.font = FONT;
    this.widths = new TextWidthCache((text) => measure.measureText(text).width);
    this.view = new CanvasView(this.canvas, (ctx, w, h) => this.draw(ctx, w, h));
    this.view.setHeight(MIN_HEIGHT);
    this.loader = new WindowedLoader({
      fetch: (signal) => this.fetch(signal),
      serves: (payload) => this.serves(payload),
      accept: (payload) => this.accept(payload),
      fail: (err) => this.showStatus(message('error', `Lanes: ${errorText(err)}`)),
    });
    store.subscribe((changed) => {
      if (changed.has('span')) this.resetSpan();
      if (changed.has('spanError') && store.state.spanError) this.showStatus(spanErrorNote());
      // The window's bounds come with the lanes (or the summary): fetch nothing before. Lanes drawn before the
      // analyses ended are asked again when the summary arrives, for the gap and step overlays.
      if ((changed.has('win') || changed.has('lanesReady') || changed.has('summary')) && store.state.lanesReady) this.loader.update();
      if (changed.has('bounds')) this.canvas.dataset.durationUs = String(store.state.bounds.t1Us - store.state.bounds.t0Us);
      if (changed.has('area')) this.canvas.dataset.area = store.state.area ? `${store.state.area.t0Us},${store.state.area.t1Us}` : '';
      this.view.requestRedraw();
    });
  }

  /** The plot's scale for the current window and canvas width. */
  scale() {
    const { win } = this.store.state;
    return new TimeScale(win.t0Us, win.t1Us, GUTTER_W, Math.max(GUTTER_W + 1, this.view.widthCss - RIGHT_PAD));
  }

  resetSpan() {
    this.loader.reset();
    this.data = null;
    this.layout = { blocks: [], heightCss: 0, groups: [], countersYCss: 0 };
    this.byLane = new Map();
    this.collapsed = new Set();
    this.pinned = [];
    this.pinsByUser = false;
    this.closedGroups = new Set();
    this.collapseDefaultsSet = false;
    this.scrollYCss = 0;
    this.hover = null;
    this.path = [];
    delete this.canvas.dataset.analysed;
    this.showStatus(this.store.state.span ? message('info', 'Loading lanes\u2026') : null);
  }

  /** @param {AbortSignal} signal */
  async fetch(signal) {
    const { span, win, bounds } = this.store.state;
    if (!span) throw new Error('no span selected');
    const w = fetchWindow(win, Math.max(1, this.view.widthCss - GUTTER_W - RIGHT_PAD), MARGIN_FRAC, bounds);
    const body = await getWhenLanesReady(this.api, 'lanes', { span: span.id, start_us: w.startUs, end_us: w.endUs, width_px: w.widthPx }, signal);
    return prepareLanes(body);
  }

  /** @param {import('../model/lanes.js').LanesData} payload */
  serves(payload) {
    const { win, bounds, summary } = this.store.state;
    if (summary && !payload.analysed) return false;
    const fetched = { startUs: Math.max(payload.startUs, bounds.t0Us), endUs: Math.min(payload.endUs, bounds.t1Us), usPerPx: payload.usPerPx };
    return payloadServes(fetched, win, this.scale().usPerPx, COARSE_OK);
  }

  /** @param {import('../model/lanes.js').LanesData} payload */
  accept(payload) {
    this.data = payload;
    // For automation: whether the lanes on screen carry the analyses' overlays yet (false while the server analyses).
    this.canvas.dataset.analysed = String(payload.analysed);
    this.canvas.dataset.span = String(this.store.state.span?.id ?? '');  // which span the lanes on screen are of
    this.onData?.(payload);
    if (!this.collapseDefaultsSet) {
      // Deep threads (autograd, DataLoader workers) start collapsed when there are many lanes.
      const deep = payload.lanes.filter((l) => l.kind !== 'gpu' && l.maxDepth > 0);
      if (deep.length > 3) for (const lane of deep.slice(1)) this.collapsed.add(lane.id);
      this.collapseDefaultsSet = true;
    }
    this.relayout();
    this.autoPin();
    this.showStatus(null);
  }

  /**
   * Pins the GPU streams on top when the host's threads would push the first one below the fold, counting
   * what sits above the canvas (the sticky page header included) and the window's height. Asked again when
   * the page above grows (the verdict arrives, the header unfolds, the window shrinks) until the user pins
   * or unpins a lane; it never unpins.
   */
  autoPin() {
    if (!this.data || this.pinsByUser || this.pinned.length) return;
    const topCss = this.canvas.getBoundingClientRect().top + window.scrollY;
    const roomCss = Math.min(MAX_HEIGHT, window.innerHeight - topCss) - HEADER_H;
    const ids = defaultPins(this.data.lanes, this.collapsed, roomCss, PIN_BY_DEFAULT);
    if (!ids.length) return;
    this.pinned = ids;
    this.relayout();
  }

  relayout() {
    if (!this.data) return;
    this.layout = layoutLanes(this.data.lanes, this.collapsed, { groups: true, pinned: this.pinned, closedGroups: this.closedGroups,
      countersHCss: countersHeight(this.data.counters) });
    this.byLane = new Map(this.layout.blocks.map((b) => [b.laneId, b]));
    // Lane geometry for automation (browser tests, screen readers' tooling): written per layout, not per frame.
    this.canvas.dataset.layout = JSON.stringify(this.layout.blocks.map((b) => ({ laneId: b.laneId, kind: b.kind, yCss: HEADER_H + b.yCss, hCss: b.hCss })));
    this.view.setHeight(Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, HEADER_H + this.layout.heightCss + 4)));
    this.scrollBy(0);
    this.view.requestRedraw();
  }

  /** @param {HTMLElement | null} node */
  showStatus(node) {
    this.status.replaceChildren(...(node ? [node] : []));
  }

  /** @param {number} dyCss */
  scrollBy(dyCss) {
    this.scrollYCss = clampScroll(this.scrollYCss + dyCss, this.layout.heightCss, this.view.heightCss - HEADER_H);
    this.view.requestRedraw();
  }

  /** @param {number} laneId */
  toggleLane(laneId) {
    if (this.collapsed.has(laneId)) this.collapsed.delete(laneId);
    else this.collapsed.add(laneId);
    this.relayout();
  }

  /** Pins a lane to the top, or unpins it. @param {number} laneId */
  togglePin(laneId) {
    this.pinned = this.pinned.includes(laneId) ? this.pinned.filter((id) => id !== laneId) : [...this.pinned, laneId];
    this.pinsByUser = true;
    this.relayout();
  }

  /** Collapses a group of lanes to its header, or opens it. @param {string} key */
  toggleGroup(key) {
    if (this.closedGroups.has(key)) this.closedGroups.delete(key);
    else this.closedGroups.add(key);
    this.relayout();
  }

  /** @param {number} xCss @param {number} yCss */
  hitAt(xCss, yCss) {
    if (!this.data) return null;
    return hitTestLanes(this.data, this.layout, this.scale(), this.scrollYCss, xCss, yCss);
  }

  /** Whether tUs lies in a step the analyses flagged as stalled. @param {number} tUs */
  stalledAt(tUs) {
    const s = this.data?.steps;
    if (!s) return false;
    const i = intervalAt(s.startUs, s.endUs, tUs);
    return i >= 0 && Boolean(s.stalled[i]);
  }

  /**
   * @param {CanvasRenderingContext2D} ctx @param {number} widthCss @param {number} heightCss
   */
  draw(ctx, widthCss, heightCss) {
    ctx.font = FONT;
    ctx.fillStyle = COLORS.background;
    ctx.fillRect(0, 0, widthCss, heightCss);
    const data = this.data;
    if (!data) return;
    /** @type {import('../render/frame.js').Frame} */
    const frame = { ctx, scale: this.scale(), widthCss, heightCss, data, widths: this.widths, scrollYCss: this.scrollYCss,
      stalledAt: (tUs) => this.stalledAt(tUs) };
    drawLanes(frame, this.layout, this.byLane, this.store.state.sel, this.hover, new Set(this.pinned));
    drawArea(ctx, frame.scale, this.store.state.area ?? null, heightCss);
    drawPathOverlay(frame, this.byLane, this.path);
    drawPath(ctx, frame.scale, this.path);
  }

  /** The critical-path segment at a time, or null. @param {number} tUs */
  pathAt(tUs) {
    for (const s of this.path) if (s.startUs <= tUs && tUs < s.endUs) return s;
    return null;
  }
}

/** Top of the critical-path strip: under the DataLoader row of the header. */
export const PATH_Y = AXIS_H + STEP_H + LOADER_H + 1;

/**
 * The critical path as a strip under the step bar, coloured by what held the step up then.
 * @param {CanvasRenderingContext2D} ctx @param {TimeScale} scale
 * @param {{startUs: number, endUs: number, kind: string}[]} path
 */
function drawPath(ctx, scale, path) {
  if (!path.length) return;
  ctx.save();
  ctx.beginPath();
  ctx.rect(scale.x0Css, PATH_Y, scale.x1Css - scale.x0Css, 3);
  ctx.clip();
  for (const s of path) {
    const x0 = scale.tToX(s.startUs);
    const x1 = Math.max(scale.tToX(s.endUs), x0 + 1);
    if (x1 < scale.x0Css || x0 > scale.x1Css) continue;
    ctx.fillStyle = PATH_COLORS[s.kind] ?? PATH_COLORS.wait;
    ctx.fillRect(x0, PATH_Y, x1 - x0, 3);
  }
  ctx.restore();
}

/**
 * The area selection (Shift+drag) as a tinted band with edges, over every lane.
 * @param {CanvasRenderingContext2D} ctx @param {TimeScale} scale
 * @param {import('../model/scale.js').Window | null} area @param {number} heightCss
 */
function drawArea(ctx, scale, area, heightCss) {
  if (!area) return;
  const x0 = Math.max(GUTTER_W, scale.tToX(area.t0Us));
  const x1 = Math.min(scale.tToX(area.t1Us), scale.x1Css);
  if (x1 <= x0) return;
  ctx.fillStyle = 'rgba(66, 133, 244, 0.15)';
  ctx.fillRect(x0, 0, x1 - x0, heightCss);
  ctx.fillStyle = 'rgba(66, 133, 244, 0.9)';
  ctx.fillRect(x0, 0, 1, heightCss);
  ctx.fillRect(x1 - 1, 0, 1, heightCss);
}
