// @ts-check
/**
 * The ranks view of a distributed run (`ranks?run=NAME`, HTTP_API.md) as rows, heatmap cells and
 * sentences. Pure: no DOM.
 */
import { formatBytes, formatDuration } from './format.js';

/**
 * Whether a run has two ranks or more (workers) in the listing: the tab shows its Ranks panel.
 * @param {import('./runs.js').RunInfo[]} runs @param {string | undefined} run
 */
export function isMultiRank(runs, run) {
  const found = runs.find((r) => r.name === run);
  return Boolean(found && found.workers.length > 1);
}

/** The table's columns: key, header, tooltip, and how a row shows it. */
export const RANK_COLUMNS = [
  { key: 'rank', label: 'rank', title: 'distributedInfo.rank, else the order of the worker names', show: (/** @type {any} */ r) => String(r.rank) },
  { key: 'worker', label: 'worker', title: 'the trace file\'s worker name', show: (/** @type {any} */ r) => String(r.worker) },
  { key: 'step_median_us', label: 'median step', title: 'median ProfilerStep duration', show: (/** @type {any} */ r) => formatDuration(r.step_median_us) },
  { key: 'wait_us', label: 'its wait', title: 'time this rank spent waiting in matched collectives (their duration minus the transfer time): the others held it up', show: (/** @type {any} */ r) => formatDuration(r.wait_us) },
  { key: 'waited_for', label: 'last in', title: 'how many matched collectives this rank came last in: there the others waited for it (it held them up)', show: (/** @type {any} */ r) => String(r.waited_for) },
  { key: 'caused_wait_us', label: 'caused wait', title: 'per collective it was last in, the mean wait of the other ranks; summed', show: (/** @type {any} */ r) => formatDuration(r.caused_wait_us) },
  { key: 'exposed_comm_us', label: 'exposed comm', title: 'communication kernels no compute kernel overlaps', show: (/** @type {any} */ r) => formatDuration(r.exposed_comm_us) },
  { key: 'overlap_pct', label: 'overlap', title: 'share of communication overlapped by compute', show: (/** @type {any} */ r) => (r.overlap_pct === null || r.overlap_pct === undefined ? '\u2013' : `${Number(r.overlap_pct).toFixed(1)}%`) },
  { key: 'cpu_collectives_us', label: 'CPU collectives', title: 'union of the CPU-side collective calls (gloo: includes the wait)', show: (/** @type {any} */ r) => formatDuration(r.cpu_collectives_us) },
  { key: 'cpu_collectives_exposed_us', label: 'CPU coll. exposed', title: 'the part of the CPU-side collectives no CPU operator hid: time the host only waited', show: (/** @type {any} */ r) => formatDuration(r.cpu_collectives_exposed_us) },
  { key: 'memory_peak_bytes', label: 'memory peak', title: 'peak allocated device memory', show: (/** @type {any} */ r) => formatBytes(r.memory_peak_bytes) },
  { key: 'verdict', label: 'verdict', title: 'the rank\'s own verdict', show: (/** @type {any} */ r) => String(r.verdict ?? '\u2013') },
];

/**
 * Rank x step cells of one metric, with each value's fraction of the largest (for the color).
 * @param {any} view @param {'step' | 'wait'} metric
 * @returns {{steps: number[], rows: {rank: number, worker: string, id: string | null, cells: {value: number | null, frac: number}[]}[]}}
 */
export function heatmap(view, metric) {
  const steps = Array.isArray(view?.steps) ? view.steps : [];
  const ranks = Array.isArray(view?.ranks) ? view.ranks : [];
  const values = ranks.map((/** @type {any} */ r, /** @type {number} */ i) => (metric === 'wait' ? view.wait_by_step_us?.[i] ?? [] : r.step_us ?? []));
  const finite = values.flat().filter((/** @type {any} */ v) => typeof v === 'number' && Number.isFinite(v));
  const max = finite.length ? Math.max(...finite) : 0;
  return {
    steps,
    rows: ranks.map((/** @type {any} */ r, /** @type {number} */ i) => ({
      rank: r.rank, worker: r.worker, id: r.id ?? null,
      cells: steps.map((/** @type {number} */ _, /** @type {number} */ j) => {
        const v = values[i][j];
        const value = typeof v === 'number' && Number.isFinite(v) ? v : null;
        return { value, frac: value !== null && max > 0 ? value / max : 0 };
      }),
    })),
  };
}

/** One straggler as a sentence. @param {any} s */
export function stragglerText(s) {
  const doing = (s.doing ?? []).slice(0, 3).map((/** @type {any} */ d) => `${d.name} (${formatDuration(d.self_us)})`).join(', ');
  const steps = (s.steps_last ?? []).slice(0, 10).join(', ');
  return `Rank ${s.rank} (${s.worker}) holds the others back: they waited for it in ${s.waited_for} of ${s.of} collectives, `
    + `${formatDuration(s.caused_wait_us)} in all${steps ? `; last in step${s.steps_last.length > 1 ? 's' : ''} ${steps}` : ''}`
    + `${doing ? `. Meanwhile it ran ${doing}` : ''}${s.slow_steps ? '; its steps are slower outside communication too' : ''}.`;
}

/**
 * What making the stragglers as fast as the median rank would save (`straggler_whatif`, replayed on the server),
 * or '' when there is no straggler.
 * @param {any} view
 */
export function stragglerSavingText(view) {
  const w = view?.straggler_whatif;
  if (!w || !Number.isFinite(w.saving_us) || !Number.isFinite(w.recorded_median_step_us) || !Number.isFinite(w.median_step_us)) return '';
  const share = Number.isFinite(w.saving_share) ? ` (${(100 * w.saving_share).toFixed(1)}%)` : '';
  return `What a fix would save: with the stragglers as fast as the median rank (${w.edit ?? 'straggler=median'}), `
    + `the job's median step goes from ${formatDuration(w.recorded_median_step_us)} to ${formatDuration(w.median_step_us)}: `
    + `${formatDuration(Math.max(0, w.saving_us))} per step${share}.${extraWorkText(w)}`;
}

/** The straggler's extra work the prediction removes, by name (` Rank 1's extra work per step: ...`), or ''. @param {any} w */
function extraWorkText(w) {
  const parts = (Array.isArray(w.extra_work) ? w.extra_work : []).map((e) => {
    const names = (Array.isArray(e?.names) ? e.names : []).slice(0, 3)
      .filter((n) => typeof n?.name === 'string' && Number.isFinite(n.per_step_us))
      .map((n) => `${n.name} ${formatDuration(n.per_step_us)}`);
    return names.length ? ` Rank ${e.rank}'s extra work per step, beyond the median rank's: ${names.join(', ')}.` : '';
  });
  return parts.join('');
}

/**
 * The line above the table: how many ranks, which are missing, whether anyone held the others back. While ranks
 * are still loading (`pending`), the ranks not in the view yet are not called missing: the figures are so far.
 * @param {any} view @param {number} [pending] ranks of the run still loading
 */
export function ranksSummary(view, pending = 0) {
  if (!view) return '';
  const missing = Array.isArray(view.missing_ranks) ? view.missing_ranks : [];
  const listed = missing.slice(0, 12).join(', ') + (missing.length > 12 ? ` and ${missing.length - 12} more` : '');
  const parts = [];
  if (pending > 0) {
    parts.push(`${view.ranks_present} of ${view.world_size} ranks loaded, ${pending} still loading (figures so far, among the ranks loaded)`);
  } else {
    parts.push(`${view.ranks_present} of ${view.world_size} ranks present`);
    if (missing.length) parts.push(`missing: ${listed} (figures among the ranks present)`);
  }
  parts.push(`${view.matched_instances} collectives matched across ranks`);
  if (!view.stragglers?.length && !pending) parts.push(view.matched_instances ? 'no rank held the others back' : 'nothing to compare');
  return parts.join('; ');
}

/** The heatmap's colour at its largest value; lighter toward white for smaller ones. */
const HEAT_RGB = [198, 40, 40];

/**
 * A heatmap cell's colours: white to red with the value's fraction of the largest, opaque, and black or
 * white text, whichever reads better (both reach 4.5:1 on every shade of this ramp: black from relative
 * luminance 0.175 up, white below 0.183).
 * @param {number} frac in [0, 1]
 * @returns {{background: string, color: string}}
 */
export function heatStyle(frac) {
  const a = 0.08 + 0.8 * Math.min(1, Math.max(0, Number(frac) || 0));
  const rgb = HEAT_RGB.map((c) => Math.round(255 - a * (255 - c)));
  return { background: `rgb(${rgb.join(', ')})`, color: relativeLuminance(rgb) >= 0.18 ? '#000' : '#fff' };
}

/** WCAG 2 relative luminance of an sRGB colour. @param {number[]} rgb 0-255 */
export function relativeLuminance(rgb) {
  const [r, g, b] = rgb.map((v) => {
    const x = v / 255;
    return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/**
 * The run's process groups (where its collectives name them: `process_groups` of the ranks view), as table rows.
 * @param {any} view
 * @returns {{name: string, desc: string, ranks: string, collectives: number, matched: number, skew: string, waitedFor: string}[]}
 */
export function groupRows(view) {
  const groups = Array.isArray(view?.process_groups) ? view.process_groups : [];
  return groups.filter((g) => g && typeof g.name === 'string').map((g) => ({
    name: g.name, desc: typeof g.desc === 'string' ? g.desc : '\u2013',
    ranks: (Array.isArray(g.ranks) ? g.ranks : []).slice(0, 16).join(', ') + ((g.ranks?.length ?? 0) > 16 ? ' \u2026' : ''),
    collectives: Number(g.collectives) || 0, matched: Number(g.matched_instances) || 0,
    skew: g.skew_us_median === null || g.skew_us_median === undefined ? '\u2013' : formatDuration(g.skew_us_median),
    waitedFor: g.waited_for ? `rank ${g.waited_for.rank} (${g.waited_for.instances} of ${g.waited_for.of})` : '\u2013',
  }));
}

/**
 * The ranks' clock offsets as one sentence (`clock_offsets`), or '' when no rank's clock is measurably apart.
 * @param {any} view
 */
export function clockText(view) {
  const clocks = view?.clock_offsets;
  const rows = (Array.isArray(clocks?.ranks) ? clocks.ranks : []).filter((/** @type {any} */ c) => c.rank !== clocks.reference_rank);
  const apart = rows.some((/** @type {any} */ c) => typeof c.offset_us === 'number' && Math.abs(c.offset_us) > Math.max(c.spread_us || 0, 1));
  if (!apart) return '';
  const shown = rows.slice(0, 16).map((/** @type {any} */ c) => `rank ${c.rank} ${typeof c.offset_us === 'number'
    ? `${c.offset_us >= 0 ? '+' : '\u2212'}${formatDuration(Math.abs(c.offset_us))}${c.spread_us ? ` \u00b1${formatDuration(c.spread_us)}` : ''}` : '?'}`);
  return `Clocks, from the collectives' ends, against rank ${clocks.reference_rank}: ${shown.join(', ')}${rows.length > 16 ? ' \u2026' : ''}`;
}
