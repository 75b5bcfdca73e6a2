// @ts-check
/**
 * The Compare panel's stacked lanes: the baseline's event lanes above the candidate's, on one time axis on
 * which step k of each side starts at 0 (the step chosen in the step strip's input). Each side asks its
 * own span's `lanes` route for the view window in its own clock (one request per side per view change,
 * latest wins, through WindowedLoader), and is drawn by `render/compare_lanes.js`; its input (one window
 * for both sides, hover, click, folds) is `compare_lanes_input.js`. The aligned step and the window ride
 * in the URL with the rest of the comparison (`store.state.compare.step`, `.win`).
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import {
  MAX_ALL_CPU_LANES, MAX_CPU_LANES, SIDE_H, SIDE_STEPS_H, anchorAt, busiestThreads, clampStep, defaultWindow, foldToFit, hitStack, laneSides, pickLanes, relativeBounds, sideRequest, sideServes, spanSteps, stackLayout,
} from '../model/compare_lanes.js';
import { prepareLanes } from '../model/lanes.js';
import { AXIS_H, GUTTER_W, RIGHT_PAD, ROW_H } from '../model/layout.js';
import { TextWidthCache } from '../model/lod.js';
import { findSpan } from '../model/runs.js';
import { TimeScale, clampWindow } from '../model/scale.js';
import { CanvasView } from '../render/canvas_view.js';
import { drawCompareLanes } from '../render/compare_lanes.js';
import { FONT } from '../render/frame.js';
import { attachCompareLanesInput } from './compare_lanes_input.js';
import { el, errorText, message } from './dom.js';
import { Tooltip } from './tooltip.js';
import { WindowedLoader } from './windowed.js';

/** Each side's lanes are asked with this much of the view on each side, so a pan draws data at once. */
const MARGIN_FRAC = 0.5;
/** A payload up to this many times coarser than the view is drawn without asking again. */
const COARSE_OK = 1.5;
/** Spans whose steps and duration are kept (by id and file version; the oldest leaves first). */
const MAX_SUMMARIES = 64;
/** The Compare panel's rows around the stacked canvas (step picker, legend), kept in view with it. */
const FIT_CHROME_H = 64;

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
    /** @type {(() => void) | null} called after a side's new lanes are in (the hover box redescribes what is under the pointer) */
    this.afterData = null;
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
    attachCompareLanesInput(this);
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
    const body = await getWhenReady(this.api, 'lanes', { span: side.spanId, start_us: r.startUs, end_us: r.endUs, width_px: r.widthPx, counters: 0 }, signal);
    return prepareLanes(body);
  }

  /** @param {SideState} side @param {import('../model/lanes.js').LanesData} payload */
  accept(side, payload) {
    if (!this.sides.includes(side)) return;
    side.data = payload;
    if (!side.shown) {
      this.pick(side);
      this.fit(side);
    }
    this.relayout();
    this.describe();
    this.afterData?.();
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

  /**
   * Folds a side's threads until each side takes at most half the window under the sticky header, so both
   * sides show at once (the user can unfold them again).
   * @param {SideState} side
   */
  fit(side) {
    const header = /** @type {HTMLElement | null} */ (document.querySelector('.ks-header'));
    const maxSideHCss = Math.max(SIDE_H + SIDE_STEPS_H + 2 * ROW_H, (window.innerHeight - (header?.offsetHeight ?? 0) - FIT_CHROME_H - AXIS_H) / 2);
    this.collapsed = foldToFit([{ side: side.spec.side, lanes: side.data?.lanes ?? null, shown: side.shown ?? [] }], this.collapsed, maxSideHCss);
  }

  /** The "every thread" choice changed. */
  pickAgain() {
    for (const side of this.sides) {
      this.pick(side);
      this.fit(side);
    }
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

  /** @param {number} xCss @param {number} yCss */
  hitAt(xCss, yCss) {
    return hitStack(this.layout, this.sides.map((s) => s.data), this.scale(), this.sides.map((s) => s.anchor), xCss, yCss);
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
    const mainSel = this.store.state.sel;
    const marked = this.marked;
    /** @type {import('../render/compare_lanes.js').CompareSide[]} */
    const sides = this.sides.map((side, i) => ({ block: this.layout.sides[i] ?? null, spec: side.spec, anchor: side.anchor, data: side.data,
      hover: this.hover?.side === i ? this.hover : null,
      // The event selected here, else (nothing selected here) the main lanes' selection on the span on screen.
      selected: marked ? (marked.side === i ? marked : null) : (mainSel && side.spanId === this.store.state.span?.id ? mainSel : null) }));
    drawCompareLanes({ ctx, scale: this.scale(), widthCss, heightCss, widths: this.widths }, sides, `from the start of step ${this.input.value}`);
  }
}
