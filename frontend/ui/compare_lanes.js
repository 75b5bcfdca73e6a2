// @ts-check
/**
 * The Compare panel's stacked lanes: the baseline's event lanes above the candidate's, on one time axis on
 * which step k of each side starts at 0 (the step chosen in the step strip's input). Each side asks its
 * own span's `lanes` route for the view window in its own clock (one request per side per view change,
 * latest wins, through WindowedLoader), and is drawn by the main lanes' render modules with a scale
 * shifted by its step's start. Wheel zooms and drag pans both sides together; hover names an event, a
 * click outlines it (and selects it in the main lanes when the side is the span on screen), a double click
 * zooms to it, a click on a thread's label folds it. The aligned step and the window ride in the URL with
 * the rest of the comparison (`store.state.compare.step`, `.win`).
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import {
  MAX_ALL_CPU_LANES, MAX_CPU_LANES, SIDE_H, anchorAt, busiestThreads, clampStep, defaultWindow, hitStack, laneSides, pickLanes, relativeBounds, sideRequest, sideServes, spanSteps, stackLayout,
} from '../model/compare_lanes.js';
import { formatDuration, formatTimestamp } from '../model/format.js';
import { eventName, prepareLanes } from '../model/lanes.js';
import { intervalAt } from '../model/lanes_hit.js';
import { findSpan } from '../model/runs.js';
import { AXIS_H, GUTTER_W, HEADER_H, LANE_PAD, RIGHT_PAD, ROW_H } from '../model/layout.js';
import { TextWidthCache, fitLabel } from '../model/lod.js';
import { TimeScale, clampWindow, panBy, windowAround, zoomAround } from '../model/scale.js';
import { drawAxis, drawGrid } from '../render/axis.js';
import { CanvasView } from '../render/canvas_view.js';
import { drawCpuLane } from '../render/cpu_lane.js';
import { COLORS, FONT } from '../render/frame.js';
import { drawGaps } from '../render/gaps.js';
import { drawGpuLane } from '../render/gpu_lane.js';
import { drawStepBar } from '../render/steps.js';
import { el, errorText, message } from './dom.js';
import { Tooltip } from './tooltip.js';
import { WindowedLoader } from './windowed.js';

/** Each side's lanes are asked with this much of the view on each side, so a pan draws data at once. */
const MARGIN_FRAC = 0.5;
/** A payload up to this many times coarser than the view is drawn without asking again. */
const COARSE_OK = 1.5;
const WHEEL_PX_PER_E = 500;
const DRAG_SLOP_PX = 3;
const KEY_ZOOM = 0.8;
const KEY_PAN_FRAC = 0.15;
/** Spans whose steps and duration are kept (by id and file version; the oldest leaves first). */
const MAX_SUMMARIES = 64;
/** The aligned steps' start, drawn across both sides. */
const ALIGN_COLOR = '#1e88e5';

/**
 * @typedef {object} SideState
 * @property {import('../model/compare_lanes.js').SideSpec} spec
 * @property {string} spanId the span drawn (of the spec's spans, the one holding the aligned step)
 * @property {import('../model/compare_lanes.js').Anchor} anchor
 * @property {import('../model/lanes.js').LanesData | null} data
 * @property {number[] | null} shown lane ids shown
 * @property {number[] | null} rank the span's threads, busiest first in its first answer (around the aligned step)
 * @property {WindowedLoader<import('../model/lanes.js').LanesData>} loader
 */

/** @typedef {{side: number, laneId: number, depth: number, startUs: number, endUs: number, text: string}} Marked */

/** What a comparison compares: its baseline and candidate, and the span on screen. @param {import('./store.js').State} state */
function comparedKey(state) {
  const c = state.compare;
  return c ? JSON.stringify([c.base, Boolean(c.candRun), state.span?.id ?? null]) : '';
}

export class CompareLanes {
  /**
   * @param {import('./store.js').Store} store
   * @param {import('../api.js').Api} api
   * @param {HTMLInputElement} stepInput the step strip's "aligned at step" input, shared
   */
  constructor(store, api, stepInput) {
    this.store = store;
    this.api = api;
    this.input = stepInput;
    this.canvas = el('canvas', { class: 'ks-compare-lanes-canvas', tabIndex: 0, 'aria-label': 'both sides\u2019 lanes aligned at a step' });
    this.status = el('div', { class: 'ks-hint' });
    this.picked = el('div', { class: 'ks-hint ks-compare-lanes-picked' });
    this.allThreads = el('input', { type: 'checkbox', class: 'ks-compare-lanes-all', onchange: () => this.pickAgain() });
    this.wrap = el('div', { class: 'ks-compare-lanes-wrap' }, this.canvas);
    this.root = el('div', { class: 'ks-compare-lanes', hidden: true },
      el('h4', {}, 'Lanes on one time axis, 0 at the start of the aligned step of each side'), this.status, this.wrap, this.picked,
      el('label', { class: 'ks-hint' }, this.allThreads, ` every CPU thread (up to ${MAX_ALL_CPU_LANES}; the ${MAX_CPU_LANES} busiest open), not only the ${MAX_CPU_LANES} busiest`),
      el('div', { class: 'ks-hint' }, 'wheel: zoom both \u00b7 drag: pan both \u00b7 click: select \u00b7 double-click: zoom to it \u00b7 W/S A/D \u00b7 0: the aligned steps \u00b7 thread labels: fold'));
    this.tooltip = new Tooltip(this.wrap);
    /** @type {import('../model/runs.js').RunInfo[]} */
    this.runs = [];
    this.matched = 0;
    this.active = false;
    /** the comparison (baseline, candidate, span on screen) of the result shown: another one waits for its result */
    this.shownFor = '';
    /** @type {SideState[]} */
    this.sides = [];
    /** the sides' specs and step last anchored */
    this.anchoredKey = '';
    this.anchorChannel = new LatestChannel();
    /** @type {Map<string, import('../model/compare_lanes.js').SpanSteps>} */
    this.summaries = new Map();
    /** @type {import('../model/scale.js').Window} relative view window */
    this.win = { t0Us: 0, t1Us: 1 };
    /** @type {Set<string>} `${side}:${laneId}` of folded threads */
    this.collapsed = new Set();
    /** @type {ReturnType<typeof stackLayout>} */
    this.layout = { sides: [], heightCss: 0 };
    /** @type {Marked | null} */
    this.hover = null;
    /** @type {Marked | null} */
    this.marked = null;
    const measure = /** @type {CanvasRenderingContext2D} */ (this.canvas.getContext('2d'));
    measure.font = FONT;
    this.widths = new TextWidthCache((text) => measure.measureText(text).width);
    this.view = new CanvasView(this.canvas, (ctx, w, h) => this.draw(ctx, w, h));
    this.view.setHeight(AXIS_H + 2 * (SIDE_H + 40));
    this.input.addEventListener('change', () => {
      const { compare } = this.store.state;
      if (!compare) return;
      this.store.set({ compare: { ...compare, step: clampStep(this.input.value, this.matched), win: undefined } });
    });
    store.subscribe((changed) => {
      if (changed.has('compare') || changed.has('span')) this.sync();
      if (changed.has('sel')) this.view.requestRedraw();
    });
    this.attachInput();
  }

  /** @param {import('../model/runs.js').RunInfo[]} runs */
  setRuns(runs) {
    this.runs = runs;
    if (this.active && !this.sides.length) this.sync();
  }

  /**
   * A comparison arrived: show both sides' lanes at the chosen step. Called before the strip draws, so the
   * shared input holds the step of the link.
   * @param {any} result the `compare` route's result
   */
  show(result) {
    const s = result?.series;
    this.matched = Math.min(s?.base?.step_us?.length ?? 0, s?.cand?.step_us?.length ?? 0); // the strip's steps
    this.input.value = String(clampStep(this.store.state.compare?.step ?? this.input.value, this.matched));
    this.active = true;
    this.shownFor = comparedKey(this.store.state);
    this.root.hidden = false;
    this.anchoredKey = '';
    this.sync();
  }

  /** Nothing compared (or the comparison failed): hidden, nothing in flight. */
  hide() {
    this.active = false;
    this.root.hidden = true;
    this.anchorChannel.cancel();
    for (const s of this.sides) s.loader.reset();
    this.sides = [];
    this.anchoredKey = '';
  }

  /** Follows the store: new sides or step (anchors resolved again), or a new window (each side asks if it must). */
  sync() {
    if (!this.active || comparedKey(this.store.state) !== this.shownFor) return; // a new comparison: its result comes first
    const { compare, span } = this.store.state;
    const specs = laneSides(compare, span, this.runs);
    if (!specs || !compare) {
      this.status.replaceChildren(compare ? message('info', 'Waiting for the runs listing\u2026') : '');
      return;
    }
    const step = clampStep(compare.step ?? this.input.value, this.matched);
    if (String(step) !== this.input.value) this.input.value = String(step);
    const key = JSON.stringify([specs, step]);
    if (key !== this.anchoredKey) {
      this.anchoredKey = key;
      this.anchor(specs, step);
      return;
    }
    this.setWindow(compare.win);
  }

  /**
   * Finds step `step` on each side (the sides' summaries: steps and duration), then draws.
   * @param {import('../model/compare_lanes.js').SideSpec[]} specs @param {number} step 1-based
   */
  anchor(specs, step) {
    this.status.replaceChildren(message('info', `Finding step ${step} on both sides\u2026`));
    this.anchorChannel.run(async (signal) => {
      const out = [];
      for (const spec of specs) {
        const steps = [];
        let count = 0;
        for (const id of spec.spans) { // a run's spans in order, up to the one holding the step
          const known = await this.stepsOf(id, signal);
          steps.push(known);
          count += known.startUs.length;
          if (count >= step) break;
        }
        out.push(anchorAt(steps, step - 1));
      }
      return out;
    }).then((r) => {
      if (r.stale) return;
      const anchors = r.value;
      if (anchors.some((a) => !a)) throw new Error('a side has no trace');
      this.install(specs, /** @type {import('../model/compare_lanes.js').Anchor[]} */ (anchors));
    }).catch((err) => {
      this.anchoredKey = '';
      this.status.replaceChildren(message('error', `Stacked lanes: ${errorText(err)}`));
    });
  }

  /** @param {string} id @param {AbortSignal} signal */
  async stepsOf(id, signal) {
    const key = `${id}:${/** @type {any} */ (findSpan(this.runs, id)?.span)?.version ?? ''}`; // a file that changed is read again
    const known = this.summaries.get(key);
    if (known) return known;
    const { span, summary } = this.store.state;
    const body = span?.id === id && summary ? summary : await getWhenReady(this.api, 'summary', { span: id }, signal);
    const steps = spanSteps(body);
    if (this.summaries.size >= MAX_SUMMARIES) this.summaries.delete(this.summaries.keys().next().value ?? '');
    this.summaries.set(key, steps);
    return steps;
  }

  /**
   * @param {import('../model/compare_lanes.js').SideSpec[]} specs
   * @param {import('../model/compare_lanes.js').Anchor[]} anchors
   */
  install(specs, anchors) {
    const old = this.sides;
    this.sides = specs.map((spec, i) => {
      const spanId = spec.spans[anchors[i].spanIndex];
      const prev = old[i]?.spanId === spanId ? old[i] : null;
      if (old[i] && !prev) old[i].loader.reset();
      if (prev) { // the same span, another step: its loader (whose callbacks read the side) stays
        prev.spec = spec;
        prev.anchor = anchors[i];
        return prev;
      }
      /** @type {SideState} */
      const side = { spec, spanId, anchor: anchors[i], data: null, shown: null, rank: null, loader: /** @type {any} */ (null) };
      {
        side.loader = new WindowedLoader({
          fetch: (signal) => this.fetchSide(side, signal),
          serves: (payload) => sideServes(payload, this.win, side.anchor, this.plotWidth(), COARSE_OK),
          accept: (payload) => this.accept(side, payload),
          fail: (err) => this.status.replaceChildren(message('error', `Lanes of the ${side.spec.title}: ${errorText(err)}`)),
        });
      }
      return side;
    });
    this.marked = null;
    this.picked.replaceChildren();
    const notes = this.sides.filter((s) => !s.anchor.fromSteps).map((s) => `the ${s.spec.title} has no ProfilerStep: aligned at its trace start`);
    this.status.replaceChildren(notes.length ? message('warn', `${notes.join('; ')}.`) : '');
    this.relayout();
    this.setWindow(this.store.state.compare?.win);
  }

  /** @param {import('../model/scale.js').Window | undefined} win */
  setWindow(win) {
    if (!this.sides.length) return;
    const anchors = this.sides.map((s) => s.anchor);
    this.win = win && win.t1Us > win.t0Us ? clampWindow(win, relativeBounds(anchors)) : defaultWindow(anchors);
    this.canvas.dataset.win = `${this.win.t0Us},${this.win.t1Us}`;
    this.updateLoaders();
    this.describe();
    this.view.requestRedraw();
  }

  /** Asks each side for what the view needs, once the canvas has a width (a folded panel asks nothing). */
  updateLoaders() {
    if (this.view.widthCss <= GUTTER_W + RIGHT_PAD) return;
    for (const s of this.sides) s.loader.update();
  }

  /** Sets the shared window (zoom, pan): both sides follow, and the link keeps it. @param {import('../model/scale.js').Window} win */
  moveTo(win) {
    const { compare } = this.store.state;
    if (compare) this.store.set({ compare: { ...compare, win } });
  }

  plotWidth() {
    return Math.max(1, this.view.widthCss - GUTTER_W - RIGHT_PAD);
  }

  /** @param {SideState} side @param {AbortSignal} signal */
  async fetchSide(side, signal) {
    const r = sideRequest(this.win, side.anchor, this.plotWidth(), MARGIN_FRAC);
    const body = await getWhenReady(this.api, 'lanes', { span: side.spanId, start_us: r.startUs, end_us: r.endUs, width_px: r.widthPx }, signal);
    return prepareLanes(body);
  }

  /** @param {SideState} side @param {import('../model/lanes.js').LanesData} payload */
  accept(side, payload) {
    if (!this.sides.includes(side)) return;
    side.data = payload;
    if (!side.shown) this.pick(side);
    this.relayout();
    this.describe();
  }

  /** The lanes a side shows, from its latest answer; with every thread, all but the busiest start folded. @param {SideState} side */
  pick(side) {
    if (!side.data) return;
    const all = this.allThreads.checked;
    side.rank ??= busiestThreads(side.data.lanes);
    side.shown = pickLanes(side.data.lanes, all ? MAX_ALL_CPU_LANES : MAX_CPU_LANES, side.rank);
    for (const id of side.rank.slice(MAX_CPU_LANES)) {
      const key = `${side.spec.side}:${id}`;
      if (all) this.collapsed.add(key);
      else this.collapsed.delete(key);
    }
  }

  /** The "every thread" choice changed. */
  pickAgain() {
    for (const side of this.sides) this.pick(side);
    this.relayout();
    this.describe();
  }

  relayout() {
    this.layout = stackLayout(this.sides.map((s) => ({ side: s.spec.side, lanes: s.data?.lanes ?? null, shown: s.shown ?? [] })), this.collapsed, AXIS_H);
    this.view.setHeight(this.layout.heightCss + 2);
    this.view.requestRedraw();
  }

  /** What each side shows, for automation (browser checks) and tooling: written per answer and window. */
  describe() {
    this.canvas.dataset.sides = JSON.stringify(this.sides.map((s, i) => {
      const b = this.layout.sides[i];
      return { side: s.spec.side, span: s.spanId, step: s.anchor.stepName, anchorUs: s.anchor.anchorUs, stepUs: s.anchor.stepUs,
        fetched: s.data ? [s.data.startUs, s.data.endUs, s.data.usPerPx] : null,
        rects: s.data ? s.data.lanes.filter((l) => s.shown?.includes(l.id)).reduce((n, l) => n + l.ev.startUs.length, 0) : 0,
        lanes: b ? b.blocks.map((x) => x.kind) : [], yCss: b?.lanesYCss ?? 0, hCss: b ? b.hCss - (b.lanesYCss - b.yCss) : 0 };
    }));
  }

  /** The relative scale (the axis); each side's own is this one shifted by its step's start. */
  scale() {
    return new TimeScale(this.win.t0Us, this.win.t1Us, GUTTER_W, Math.max(GUTTER_W + 1, this.view.widthCss - RIGHT_PAD));
  }

  /** @param {number} i side index */
  sideScale(i) {
    const a = this.sides[i].anchor.anchorUs;
    return new TimeScale(this.win.t0Us + a, this.win.t1Us + a, GUTTER_W, Math.max(GUTTER_W + 1, this.view.widthCss - RIGHT_PAD));
  }

  /** @param {number} xCss @param {number} yCss */
  hitAt(xCss, yCss) {
    return hitStack(this.layout, this.sides.map((s) => s.data), this.scale(), this.sides.map((s) => s.anchor), xCss, yCss);
  }

  /**
   * The event under a hit, as the outline and the texts need it.
   * @param {import('../model/compare_lanes.js').StackHit} hit
   * @returns {(Marked & {lane: import('../model/lanes.js').Lane, index: number}) | null}
   */
  eventAt(hit) {
    if (hit.area !== 'lane' || hit.event < 0) return null;
    const side = this.sides[hit.side];
    const b = this.layout.sides[hit.side]?.blocks[hit.block];
    const lane = b && side.data?.lanes[b.index];
    if (!lane || !side.data) return null;
    const i = hit.event;
    const startUs = lane.ev.startUs[i];
    const rel = startUs - side.anchor.anchorUs;
    const text = `${side.spec.title}: ${eventName(side.data, lane, i)} \u00b7 ${formatDuration(lane.ev.durUs[i])} \u00b7 `
      + `${rel < 0 ? '\u2212' : '+'}${formatDuration(Math.abs(rel))} from the start of ${side.anchor.stepName} \u00b7 ${lane.label}`;
    return { side: hit.side, laneId: lane.id, depth: lane.ev.depth[i], startUs, endUs: startUs + lane.ev.durUs[i], text, lane, index: i };
  }

  attachInput() {
    const canvas = this.canvas;
    /** @type {{x: number, win: import('../model/scale.js').Window, usPerPx: number, moved: boolean} | null} */
    let drag = null;
    canvas.addEventListener('wheel', (e) => {
      if (!this.sides.length) return;
      e.preventDefault();
      const px = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
      const bounds = relativeBounds(this.sides.map((s) => s.anchor));
      const scale = this.scale();
      if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) this.moveTo(panBy(this.win, e.deltaX * px * scale.usPerPx, bounds));
      else {
        const tUs = e.offsetX >= GUTTER_W ? scale.xToT(e.offsetX) : (this.win.t0Us + this.win.t1Us) / 2;
        this.moveTo(zoomAround(this.win, tUs, Math.exp((e.deltaY * px) / WHEEL_PX_PER_E), bounds));
      }
    }, { passive: false });
    canvas.addEventListener('pointerdown', (e) => {
      if (e.button !== 0 || !this.sides.length) return;
      this.showHover(null, 0, 0);
      canvas.focus({ preventScroll: true });
      canvas.setPointerCapture(e.pointerId);
      drag = { x: e.offsetX, win: this.win, usPerPx: this.scale().usPerPx, moved: false };
    });
    canvas.addEventListener('pointermove', (e) => {
      if (drag) {
        const dx = e.offsetX - drag.x;
        if (!drag.moved && Math.abs(dx) < DRAG_SLOP_PX) return;
        drag.moved = true;
        this.moveTo(panBy(drag.win, -dx * drag.usPerPx, relativeBounds(this.sides.map((s) => s.anchor))));
        return;
      }
      this.showHover(this.hitAt(e.offsetX, e.offsetY), e.offsetX, e.offsetY);
    });
    canvas.addEventListener('pointerup', (e) => {
      const wasClick = drag && !drag.moved;
      drag = null;
      if (wasClick) this.click(this.hitAt(e.offsetX, e.offsetY));
    });
    canvas.addEventListener('pointerleave', () => {
      if (!drag) this.showHover(null, 0, 0);
    });
    // Keys act on this view while it has the focus (not on the main lanes): W/S zoom, A/D pan, 0 back to
    // the aligned steps, Escape clears the outline.
    canvas.addEventListener('keydown', (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || !this.sides.length) return;
      const bounds = relativeBounds(this.sides.map((s) => s.anchor));
      const span = this.win.t1Us - this.win.t0Us;
      const mid = (this.win.t0Us + this.win.t1Us) / 2;
      const key = e.key.toLowerCase();
      if (key === 'w') this.moveTo(zoomAround(this.win, mid, KEY_ZOOM, bounds));
      else if (key === 's') this.moveTo(zoomAround(this.win, mid, 1 / KEY_ZOOM, bounds));
      else if (key === 'a') this.moveTo(panBy(this.win, -span * KEY_PAN_FRAC, bounds));
      else if (key === 'd') this.moveTo(panBy(this.win, span * KEY_PAN_FRAC, bounds));
      else if (key === '0') this.moveTo(defaultWindow(this.sides.map((s) => s.anchor)));
      else if (key === 'escape') this.click({ side: -1, area: 'none', block: -1, depth: -1, event: -1, tUs: NaN });
      else return;
      e.preventDefault();
      e.stopPropagation();
    });
    canvas.addEventListener('dblclick', (e) => {
      const ev = this.eventAt(this.hitAt(e.offsetX, e.offsetY));
      if (!ev) return;
      const a = this.sides[ev.side].anchor.anchorUs;
      this.moveTo(windowAround(ev.startUs - a, ev.endUs - a, 0.1, relativeBounds(this.sides.map((s) => s.anchor))));
    });
  }

  /** @param {import('../model/compare_lanes.js').StackHit | null} hit @param {number} xCss @param {number} yCss */
  showHover(hit, xCss, yCss) {
    const ev = hit ? this.eventAt(hit) : null;
    const hover = ev ? { side: ev.side, laneId: ev.laneId, depth: ev.depth, startUs: ev.startUs, endUs: ev.endUs, text: ev.text } : null;
    if (JSON.stringify(hover) !== JSON.stringify(this.hover)) {
      this.hover = hover;
      this.view.requestRedraw();
    }
    if (ev && hit) {
      const side = this.sides[ev.side];
      const data = /** @type {import('../model/lanes.js').LanesData} */ (side.data);
      const i = ev.index;
      const rel = ev.startUs - side.anchor.anchorUs;
      /** @type {[string, string][]} */
      const rows = [['duration', formatDuration(ev.lane.ev.durUs[i])],
        ['from the step start', `${rel < 0 ? '\u2212' : '+'}${formatDuration(Math.abs(rel))}`],
        ['start', formatTimestamp(ev.startUs)], ['kind', ev.lane.ev.kind[i]], ['lane', ev.lane.label], ['side', side.spec.title]];
      if (ev.lane.ev.count[i] > 1) rows.push(['merged', `${ev.lane.ev.count[i]} events (double-click to zoom in)`]);
      this.tooltip.show(xCss, yCss, eventName(data, ev.lane, i), rows, `${ev.side}:${ev.laneId}:${ev.startUs}:${ev.depth}`);
      return;
    }
    if (hit && hit.area === 'steps' && hit.side >= 0) {
      const s = this.sides[hit.side].data?.steps;
      const i = s ? intervalAt(s.startUs, s.endUs, hit.tUs) : -1;
      if (s && i >= 0) {
        const rel = s.startUs[i] - this.sides[hit.side].anchor.anchorUs;
        this.tooltip.show(xCss, yCss, s.name[i], [['duration', formatDuration(s.endUs[i] - s.startUs[i])],
          ['from the step start', `${rel < 0 ? '\u2212' : '+'}${formatDuration(Math.abs(rel))}`], ['DataLoader stall', s.stalled[i] ? 'yes' : 'no'],
          ['side', this.sides[hit.side].spec.title]], `step${hit.side}:${i}`);
        return;
      }
    }
    this.tooltip.hide();
  }

  /** @param {import('../model/compare_lanes.js').StackHit} hit */
  click(hit) {
    if (hit.area === 'gutter') {
      const b = this.layout.sides[hit.side].blocks[hit.block];
      if (!b.collapsible) return;
      const key = `${this.sides[hit.side].spec.side}:${b.laneId}`;
      if (this.collapsed.has(key)) this.collapsed.delete(key);
      else this.collapsed.add(key);
      this.relayout();
      this.describe();
      return;
    }
    const ev = this.eventAt(hit);
    this.marked = ev ? { side: ev.side, laneId: ev.laneId, depth: ev.depth, startUs: ev.startUs, endUs: ev.endUs, text: ev.text } : null;
    this.picked.replaceChildren(ev ? ev.text : '');
    this.view.requestRedraw();
    // The span on screen: the main lanes select it too, with its launch flow and details.
    const side = ev ? this.sides[ev.side] : null;
    const row = ev ? Number(ev.lane.ev.row[ev.index]) : -1;
    if (ev && side?.data && side.spanId === this.store.state.span?.id && row >= 0 && ev.lane.ev.count[ev.index] === 1) {
      this.store.set({ sel: { laneId: ev.laneId, depth: ev.depth, startUs: ev.startUs, endUs: ev.endUs, row, laneKind: ev.lane.kind,
        name: eventName(side.data, ev.lane, ev.index) }, selRow: null });
    }
  }

  /**
   * @param {CanvasRenderingContext2D} ctx @param {number} widthCss @param {number} heightCss
   */
  draw(ctx, widthCss, heightCss) {
    this.updateLoaders(); // after a resize (the panel unfolded, the window widened): cheap while the answers serve
    const t0 = performance.now();
    this.drawFrame(ctx, widthCss, heightCss);
    // Draw times for tooling (the browser check reports them): the last and the longest, in ms.
    const ms = performance.now() - t0;
    const stats = /** @type {any} */ (this.canvas).ksDraw ?? { count: 0, lastMs: 0, maxMs: 0, recentMs: [] };
    /** @type {any} */ (this.canvas).ksDraw = { count: stats.count + 1, lastMs: ms, maxMs: Math.max(stats.maxMs, ms),
      recentMs: [...stats.recentMs.slice(-99), Math.round(ms * 100) / 100] };
  }

  /**
   * @param {CanvasRenderingContext2D} ctx @param {number} widthCss @param {number} heightCss
   */
  drawFrame(ctx, widthCss, heightCss) {
    ctx.font = FONT;
    ctx.fillStyle = COLORS.background;
    ctx.fillRect(0, 0, widthCss, heightCss);
    if (!this.sides.length) return;
    const rel = this.scale();
    this.sides.forEach((side, i) => {
      const s = this.layout.sides[i];
      if (s) this.drawSide(ctx, i, side, s, widthCss, heightCss);
    });
    // t = 0: where both aligned steps start.
    const x0 = rel.tToX(0);
    if (x0 >= GUTTER_W && x0 <= rel.x1Css) {
      ctx.fillStyle = ALIGN_COLOR;
      ctx.fillRect(Math.round(x0) - 1, AXIS_H, 2, heightCss - AXIS_H);
    }
    drawAxis(ctx, rel, widthCss);
    ctx.fillStyle = COLORS.gutter;
    ctx.fillRect(0, 0, GUTTER_W, AXIS_H - 1);
    ctx.fillStyle = COLORS.axisText;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.fillText(fitLabel(`from the start of step ${this.input.value}`, GUTTER_W - 12, this.widths), 6, AXIS_H / 2);
  }

  /**
   * One side: its name row, its step bar, its lanes (gaps shaded, events, the hovered and selected
   * outlines) and their labels.
   * @param {CanvasRenderingContext2D} ctx @param {number} i @param {SideState} side
   * @param {import('../model/compare_lanes.js').SideBlock} s @param {number} widthCss @param {number} heightCss
   */
  drawSide(ctx, i, side, s, widthCss, heightCss) {
    const scale = this.sideScale(i);
    ctx.fillStyle = COLORS.laneAlt;
    ctx.fillRect(0, s.yCss, widthCss, SIDE_H);
    ctx.fillStyle = COLORS.text;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    const a = side.anchor;
    const where = a.fromSteps ? `${a.stepName} (${formatDuration(a.stepUs)}) starts at ${formatTimestamp(a.anchorUs)}` : 'no steps: aligned at the trace start';
    ctx.font = `600 ${FONT}`;
    const which = side.spec.names[a.spanIndex] ? ` (${side.spec.names[a.spanIndex]})` : '';
    ctx.fillText(fitLabel(`${side.spec.title}: ${side.spec.label}${which} \u00b7 ${where}`, widthCss - 12, this.widths), 6, s.yCss + SIDE_H / 2);
    ctx.font = FONT;
    ctx.strokeStyle = COLORS.gutterLine;
    ctx.beginPath();
    ctx.moveTo(0, s.yCss + 0.5);
    ctx.lineTo(widthCss, s.yCss + 0.5);
    ctx.stroke();
    const data = side.data;
    if (!data) return;
    /** @type {import('../render/frame.js').Frame} */
    const frame = { ctx, scale, widthCss, heightCss, data, widths: this.widths, scrollYCss: HEADER_H - s.lanesYCss,
      stalledAt: (tUs) => {
        const k = intervalAt(data.steps.startUs, data.steps.endUs, tUs);
        return k >= 0 && Boolean(data.steps.stalled[k]);
      } };
    ctx.save();
    ctx.translate(0, s.stepsYCss - AXIS_H);
    drawStepBar(frame);
    ctx.restore();
    const lanesH = s.hCss - (s.lanesYCss - s.yCss);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, s.lanesYCss, widthCss - GUTTER_W, lanesH);
    ctx.clip();
    ctx.fillStyle = COLORS.laneAlt;
    s.blocks.forEach((b, k) => {
      if (k % 2) ctx.fillRect(GUTTER_W, s.lanesYCss + b.yCss, widthCss - GUTTER_W, b.hCss);
    });
    drawGrid(ctx, this.scale(), s.lanesYCss, s.lanesYCss + lanesH);
    drawGaps(frame, s.blocks);
    for (const b of s.blocks) {
      const lane = data.lanes[b.index];
      if (lane.kind === 'gpu') drawGpuLane(frame, lane, b, s.lanesYCss + b.yCss);
      else drawCpuLane(frame, lane, b, s.lanesYCss + b.yCss);
    }
    const mainSel = this.store.state.sel;
    const outlines = /** @type {[Marked | null, string, number][]} */ ([[this.hover, COLORS.hover, 1], [this.marked, COLORS.selection, 2]]);
    if (mainSel && side.spanId === this.store.state.span?.id && !this.marked) {
      outlines.push([{ side: i, laneId: mainSel.laneId, depth: mainSel.depth, startUs: mainSel.startUs, endUs: mainSel.endUs, text: '' }, COLORS.selection, 2]);
    }
    for (const [m, color, width] of outlines) {
      const b = m && m.side === i ? s.blocks.find((x) => x.laneId === m.laneId) : null;
      if (!m || !b) continue;
      const y = s.lanesYCss + b.yCss + LANE_PAD / 2 + Math.min(m.depth, b.depths - 1) * ROW_H;
      const x0 = scale.tToX(m.startUs);
      const x1 = Math.max(scale.tToX(m.endUs), x0 + 1);
      ctx.strokeStyle = color;
      ctx.lineWidth = width;
      ctx.strokeRect(x0 - width / 2, y - width / 2, x1 - x0 + width, ROW_H - 1 + width);
    }
    // The end of the aligned step, dashed, on this side only.
    const xEnd = scale.tToX(a.anchorUs + a.stepUs);
    if (a.fromSteps && xEnd >= GUTTER_W && xEnd <= scale.x1Css) {
      ctx.strokeStyle = ALIGN_COLOR;
      ctx.lineWidth = 1;
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(Math.round(xEnd) + 0.5, s.lanesYCss);
      ctx.lineTo(Math.round(xEnd) + 0.5, s.lanesYCss + lanesH);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.restore();
    this.drawLabels(ctx, s, widthCss);
  }

  /**
   * The lane labels of a side (a fold arrow on threads with nested rows) and the lanes' separators.
   * @param {CanvasRenderingContext2D} ctx @param {import('../model/compare_lanes.js').SideBlock} s @param {number} widthCss
   */
  drawLabels(ctx, s, widthCss) {
    const lanesH = s.hCss - (s.lanesYCss - s.yCss);
    ctx.fillStyle = COLORS.gutter;
    ctx.fillRect(0, s.lanesYCss, GUTTER_W, lanesH);
    ctx.strokeStyle = COLORS.gutterLine;
    ctx.lineWidth = 1;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    let previous = '';
    for (const b of s.blocks) {
      const y = s.lanesYCss + b.yCss;
      ctx.beginPath();
      ctx.moveTo(0, Math.round(y) + 0.5);
      ctx.lineTo(b.kind !== previous ? widthCss : GUTTER_W, Math.round(y) + 0.5);
      ctx.stroke();
      previous = b.kind;
      ctx.fillStyle = b.kind === 'gpu' ? COLORS.gpuLabel : COLORS.text;
      const arrow = b.collapsible ? (b.collapsed ? '\u25b8 ' : '\u25be ') : '  ';
      ctx.fillText(arrow + fitLabel(b.label, GUTTER_W - 24, this.widths), 6, y + 11);
    }
    ctx.beginPath();
    ctx.moveTo(GUTTER_W - 0.5, s.lanesYCss);
    ctx.lineTo(GUTTER_W - 0.5, s.lanesYCss + lanesH);
    ctx.stroke();
  }
}
