// @ts-check
/**
 * The Compare panel's step strip: the baseline's and the candidate's steps stacked on one time axis,
 * both starting at a chosen step (matched by position), each step split into its parts (compute,
 * exposed communication, idle by cause, outside the device's activity). Plain positioned boxes, widths
 * in percent of the longer side, so it needs no canvas and follows the panel's width.
 */
import { gapSolid, gapText } from '../model/colors.js';
import { PART_COLORS, PART_LABELS, stripLayout } from '../model/compare.js';
import { formatDuration } from '../model/format.js';
import { el } from './dom.js';

/** Steps shown per side. */
const STRIP_STEPS = 6;

/** @param {string} part */
const partColor = (part) => PART_COLORS[part] ?? gapSolid(part);
/** @param {string} part */
const partLabel = (part) => PART_LABELS[part] ?? `idle: ${gapText(part) || part}`;

export class CompareStrip {
  constructor() {
    /** @type {any} */
    this.series = null;
    this.input = el('input', { type: 'number', min: '1', step: '1', value: '1', class: 'ks-compare-align', 'aria-label': 'align at step',
      onchange: () => this.draw() });
    this.rows = el('div', { class: 'ks-compare-strip-rows' });
    this.legend = el('div', { class: 'ks-compare-legend' });
    this.root = el('div', { class: 'ks-compare-strip' },
      el('h4', {}, 'Steps on one time axis, aligned at step ', this.input), this.rows, this.legend);
  }

  /** @param {any} series the route's `series` */
  show(series) {
    this.series = series;
    const n = Math.min(series?.base?.step_us?.length ?? 0, series?.cand?.step_us?.length ?? 0);
    this.root.hidden = n === 0;
    this.input.max = String(Math.max(n, 1));
    if (Number(this.input.value) > n) this.input.value = '1';
    this.draw();
  }

  draw() {
    const n = Number(this.input.max) || 1;
    const alignAt = Math.min(Math.max(Math.round(Number(this.input.value)) || 1, 1), n) - 1;
    const strip = stripLayout(this.series, alignAt, STRIP_STEPS);
    const spanUs = strip.spanUs || 1;
    const pct = (/** @type {number} */ us) => `${(100 * us) / spanUs}%`;
    const lane = (/** @type {'base' | 'cand'} */ side) => el('div', { class: 'ks-compare-lane', dataset: { side } },
      strip.rects.filter((r) => r.side === side).map((r) => el('div', {
        class: 'ks-compare-part', title: `step ${r.step + 1}: ${partLabel(r.part)} ${formatDuration(r.t1Us - r.t0Us)}`,
        style: { left: pct(r.t0Us), width: pct(r.t1Us - r.t0Us), background: partColor(r.part) } })),
      strip.steps.filter((s) => s.side === side).map((s) => el('div', {
        class: 'ks-compare-step', title: `step ${s.step + 1}: ${formatDuration(s.t1Us - s.t0Us)}`,
        style: { left: pct(s.t0Us), width: pct(s.t1Us - s.t0Us) } }, `#${s.step + 1}`)));
    this.rows.replaceChildren(
      el('div', { class: 'ks-compare-lane-label' }, 'baseline'), lane('base'),
      el('div', { class: 'ks-compare-lane-label' }, 'candidate'), lane('cand'),
      el('div', { class: 'ks-hint' }, `0 \u2026 ${formatDuration(spanUs)} from the start of step ${alignAt + 1} of each side`));
    const shown = [...new Set(strip.rects.map((r) => r.part))];
    this.legend.replaceChildren(...shown.map((p) => el('span', { class: 'ks-compare-key' },
      el('span', { class: 'ks-compare-swatch', style: { background: partColor(p) } }), partLabel(p))));
  }
}
