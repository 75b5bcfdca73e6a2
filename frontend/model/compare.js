// @ts-check
/**
 * The Compare panel's data: which baselines can be picked, the `compare` route's parameters, and its
 * answer as texts and table rows (headline, verdicts, ranked changes with the kernels under compute,
 * summary figures, joined tables, ranks). Pure: no DOM.
 *
 * A baseline is a key: `run:NAME` (every span of a run) or `span:ID`. The candidate is the span on
 * screen, or its whole run.
 */
import { formatBytes, formatCount, formatDuration } from './format.js';
import { spanLabel } from './runs.js';
import { nameTitle } from './tables.js';
import { NOT_ENOUGH_DATA } from './verdict.js';

/** Figures of the summary table, in order (names of the route's `metrics`). */
export const SUMMARY_METRICS = ['step_time', 'step_time_p90', 'step_time_mean', 'compute', 'comm', 'exposed_comm', 'idle',
  'idle_dataloader', 'idle_host', 'idle_sync', 'idle_launch', 'idle_comm', 'idle_graph', 'idle_unlinked', 'outside', 'dataloader_wait',
  'launch_p50', 'launch_p99', 'memory_peak'];
/** Rows of each joined table shown. */
export const TABLE_ROWS = 20;

/** Characters of a kernel or op name shown in a table cell (the cell's title has it whole). */
export const NAME_CHARS = 100;

/**
 * A kernel or op name for a table: C++ kernels without `void` and their parameter list (templates tell
 * overloads apart, parameters rarely do), then the first NAME_CHARS characters.
 * @param {string} name
 */
export function shortName(name) {
  let out = String(name);
  if (out.startsWith('void ')) {
    out = out.slice(5);
    let depth = 0;
    // the parameter list: the group of parentheses that ends the name ("(anonymous namespace)" stays)
    for (let i = out.length - 1; i > 0 && out.endsWith(')'); i--) {
      depth += out[i] === ')' ? 1 : out[i] === '(' ? -1 : 0;
      if (depth === 0) {
        out = out.slice(0, i);
        break;
      }
    }
  }
  return out.length <= NAME_CHARS ? out : `${out.slice(0, NAME_CHARS - 1)}…`;
}

/**
 * Every baseline the runs listing offers: each run, then each span.
 * @param {import('./runs.js').RunInfo[]} runs
 * @returns {{value: string, label: string}[]}
 */
export function baseOptions(runs) {
  const out = runs.map((r) => ({ value: `run:${r.name}`, label: `run ${r.name}` }));
  for (const r of runs) {
    for (const w of r.workers) {
      for (const s of w.spans) out.push({ value: `span:${s.id}`, label: `${r.name} / ${w.name} / ${spanLabel(s)}` });
    }
  }
  return out;
}

/** Whether a string is a baseline key. @param {unknown} key */
export function isBaseKey(key) {
  return typeof key === 'string' && /^(run|span):./.test(key);
}

/**
 * The `compare` route's parameters, or null when there is nothing to compare.
 * @param {string | null | undefined} base a baseline key
 * @param {boolean} candRun the candidate is the whole run on screen, not its span
 * @param {{id: string, run: string} | null | undefined} span the span on screen
 * @returns {Record<string, string> | null}
 */
export function compareParams(base, candRun, span) {
  if (!span || !isBaseKey(base)) return null;
  const key = /** @type {string} */ (base);
  const params = key.startsWith('run:') ? { base_run: key.slice(4) } : { base: key.slice(5) };
  return { ...params, ...(candRun ? { cand_run: span.run } : { cand: span.id }) };
}

/**
 * A figure in its unit; `signed` puts a + before a positive change.
 * @param {number | null | undefined} value @param {string} unit `us` or `bytes` @param {boolean} [signed]
 */
export function formatFigure(value, unit, signed = false) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '\u2013';
  const text = unit === 'bytes' ? formatBytes(value) : formatDuration(value);
  return signed && value > 0 ? `+${text}` : text.replace(/^-/, '\u2212');
}

/** A relative change, "+4.2%". @param {number | null | undefined} pct */
export function formatPct(pct) {
  if (pct === null || pct === undefined || !Number.isFinite(pct)) return '\u2013';
  return `${pct > 0 ? '+' : pct < 0 ? '\u2212' : ''}${Math.abs(pct).toFixed(1)}%`;
}

/** @param {any} result @param {string} name */
export function metricOf(result, name) {
  return (result?.metrics ?? []).find((/** @type {any} */ m) => m.name === name) ?? null;
}

/**
 * One line: the median step time of both sides, its change and whether it is beyond the noise.
 * @param {any} result
 */
export function headline(result) {
  const m = metricOf(result, 'step_time');
  if (!m || m.delta === null) return 'Step time: not measured on both sides.';
  const noise = m.noise !== null ? `, noise \u00b1${formatFigure(m.noise, 'us')}` : '';
  return `Step time (median) ${formatFigure(m.base, 'us')} \u2192 ${formatFigure(m.cand, 'us')}: `
    + `${formatFigure(m.delta, 'us', true)} (${formatPct(m.delta_pct)}), ${m.status}${noise}`;
}

/** @param {any} v a side's verdict */
function verdictText(v) {
  if (!v) return '\u2013';
  const share = v.share !== null && v.share !== undefined ? `, ${Math.round(100 * v.share)}%` : '';
  // not enough data has no confidence to give: what the figures lean to, if anything
  if (v.bound === NOT_ENOUGH_DATA) return `${v.bound}${v.runner_up ? ` (the figures lean to ${v.runner_up})` : ''}`;
  return `${v.bound} (${v.confidence}${share}${v.runner_up ? `; runner-up ${v.runner_up}` : ''})`;
}

/** "Verdict (changed): a → b". @param {any} result */
export function verdictLine(result) {
  const v = result?.verdict;
  if (!v) return '';
  return `Verdict (${v.changed ? 'changed' : 'unchanged'}): ${verdictText(v.base)} \u2192 ${verdictText(v.cand)}`;
}

/** "12 steps matched by position (...)". @param {any} result */
export function stepsLine(result) {
  const s = result?.steps;
  if (!s) return '';
  return `${s.matched} steps matched by position (${s.base} in the baseline, ${s.cand} in the candidate)`;
}

/**
 * Each name as a row shows it (kernels shortened by `shortName`), where two shortened names would read alike
 * shown from a little before the first place they differ ("…<f16, 128>"), so no two rows look the same.
 * @param {string[]} names @param {boolean[]} kernel whether each is a kernel name (shortened)
 */
export function distinctNames(names, kernel) {
  const shown = names.map((n, i) => (kernel[i] ? shortName(n) : n));
  /** @type {Map<string, number[]>} */
  const alike = new Map();
  shown.forEach((text, i) => alike.set(text, [...(alike.get(text) ?? []), i]));
  for (const group of alike.values()) {
    if (group.length < 2) continue;
    for (const i of group) {
      let at = 0; // the first character where this name differs from another of its group
      for (const j of group) {
        if (j === i || names[j] === names[i]) continue;
        let d = 0;
        while (d < names[i].length && names[i][d] === names[j][d]) d += 1;
        at = Math.max(at, d);
      }
      if (at === 0) continue;
      const from = Math.max(0, at - 16);
      const tail = names[i].slice(from);
      shown[i] = `\u2026${tail.length <= NAME_CHARS - 1 ? tail : `${tail.slice(0, NAME_CHARS - 2)}\u2026`}`;
    }
  }
  return shown;
}

/**
 * The ranked changes as table rows: each part (numbered), and under compute its kernels (`child`).
 * @param {any} result
 * @returns {{rank: string, name: string, full: string, change: string, base: string, cand: string, share: string, child: boolean,
 *   sign: number}[]}
 */
export function changeRows(result) {
  const out = [];
  const rows = result?.changes?.rows ?? [];
  rows.forEach((/** @type {any} */ r, /** @type {number} */ i) => {
    out.push({ rank: String(i + 1), name: r.name, full: r.name, change: formatFigure(r.delta_us, 'us', true), base: formatFigure(r.base_us, 'us'),
      cand: formatFigure(r.cand_us, 'us'), share: r.share_of_change === null ? '\u2013' : `${formatCount(100 * r.share_of_change)}%`,
      child: false, sign: Math.sign(r.delta_us) });
    const kernels = r.kernels ?? [];
    const shown = distinctNames(kernels.map((/** @type {any} */ k) => String(k.name)), kernels.map((/** @type {any} */ k) => Boolean(k.kernel)));
    kernels.forEach((/** @type {any} */ k, /** @type {number} */ j) => {
      out.push({ rank: '', name: shown[j], full: nameTitle(k), change: formatFigure(k.delta_us, 'us', true), base: formatFigure(k.base_us, 'us'),
        cand: formatFigure(k.cand_us, 'us'), share: '', child: true, sign: Math.sign(k.delta_us) });
    });
  });
  return out;
}

/** The sentence under the ranked changes. @param {any} result */
export function changesNote(result) {
  const ch = result?.changes;
  if (!ch) return '';
  const rest = ch.rest_rows ? `; the other ${ch.rest_rows} parts: ${formatFigure(ch.rest_us, 'us', true)}` : '';
  const mean = metricOf(result, 'step_time_mean');
  // the headline is the median step: say which statistic each figure is, so the two totals do not read as one
  const which = mean && mean.base !== null && mean.cand !== null
    ? ` (mean step ${formatFigure(mean.base, 'us')} \u2192 ${formatFigure(mean.cand, 'us')}; the headline gives the median step, which uneven steps move differently)`
    : ' (the headline gives the median step)';
  return `The numbered rows add up to ${formatFigure(ch.explained_us, 'us', true)} of the ${formatFigure(ch.delta_us, 'us', true)} `
    + `change of the mean step time${rest}${which}.`;
}

/**
 * The summary figures as rows (figures zero or missing on both sides left out).
 * @param {any} result
 * @returns {{label: string, base: string, cand: string, change: string, pct: string, noise: string, status: string}[]}
 */
export function summaryRows(result) {
  return SUMMARY_METRICS.map((name) => metricOf(result, name)).filter((m) => m && (m.base || m.cand)).map((m) => ({
    label: m.label, base: formatFigure(m.base, m.unit), cand: formatFigure(m.cand, m.unit), change: formatFigure(m.delta, m.unit, true),
    pct: formatPct(m.delta_pct), noise: m.noise === null ? '\u2013' : `\u00b1${formatFigure(m.noise, m.unit)}`, status: m.status,
  }));
}

/**
 * A joined table's first rows as texts.
 * @param {any} table the route's `kernels` or `ops`
 * @param {number} [limit]
 */
export function joinedRows(table, limit = TABLE_ROWS) {
  const rows = (table?.rows ?? []).slice(0, limit);
  const shown = distinctNames(rows.map((/** @type {any} */ r) => String(r.name)), rows.map(() => true));
  return rows.map((/** @type {any} */ r, /** @type {number} */ i) => ({
    name: shown[i], full: nameTitle(r), base: formatFigure(r.base_us, 'us'), cand: formatFigure(r.cand_us, 'us'), change: formatFigure(r.delta_us, 'us', true),
    pct: formatPct(r.delta_pct), calls: `${Number(r.base_count.toPrecision(3))} \u2192 ${Number(r.cand_count.toPrecision(3))}`,
    only: r.only_in === 'base' ? 'baseline only' : r.only_in === 'cand' ? 'candidate only' : '', sign: Math.sign(r.delta_us),
  }));
}

/**
 * Rank-by-rank rows of a multi-rank comparison (empty otherwise) and the ranks on one side only.
 * @param {any} result
 */
export function rankRows(result) {
  const rows = [];
  let unmatched = [];
  for (const r of result?.ranks ?? []) {
    if (r.rank === null) {
      unmatched = r.unmatched ?? [];
      continue;
    }
    const step = (r.metrics ?? []).find((/** @type {any} */ m) => m.name === 'step_time') ?? {};
    rows.push({ rank: String(r.rank), base: formatFigure(step.base, 'us'), cand: formatFigure(step.cand, 'us'), pct: formatPct(step.delta_pct),
      status: step.status ?? '\u2013', top: r.top_change ? `${r.top_change.name} ${formatFigure(r.top_change.delta_us, 'us', true)}` : '\u2013',
      verdict: `${r.verdict?.base ?? '\u2013'} \u2192 ${r.verdict?.cand ?? '\u2013'}` });
  }
  return { rows, unmatched };
}

/** Colours of the step parts in the step strip: idle causes as the gap shading, compute and exposed communication apart. */
export const PART_COLORS = /** @type {Record<string, string>} */ ({ compute: '#81c784', exposed_comm: '#4db6ac', outside: '#e0e0e0' });
/** Labels of the step parts. */
export const PART_LABELS = /** @type {Record<string, string>} */ ({ compute: 'compute', exposed_comm: 'exposed communication',
  outside: 'outside device activity' });

/**
 * Both sides' steps on one time axis from the start of step `alignAt` (0-based, matched by position):
 * each step split into its parts, as rectangles in µs from that start.
 * @param {any} series the route's `series`
 * @param {number} alignAt first step shown
 * @param {number} count steps shown per side
 * @returns {{spanUs: number, rects: {side: 'base' | 'cand', step: number, part: string, t0Us: number, t1Us: number}[],
 *   steps: {side: 'base' | 'cand', step: number, t0Us: number, t1Us: number}[]}}
 */
export function stripLayout(series, alignAt, count) {
  /** @type {{side: 'base' | 'cand', step: number, part: string, t0Us: number, t1Us: number}[]} */
  const rects = [];
  /** @type {{side: 'base' | 'cand', step: number, t0Us: number, t1Us: number}[]} */
  const steps = [];
  let spanUs = 0;
  const parts = series?.parts ?? [];
  for (const side of /** @type {const} */ (['base', 'cand'])) {
    const s = series?.[side];
    if (!s) continue;
    let t = 0;
    for (let i = alignAt; i < Math.min(alignAt + count, s.step_us.length); i++) {
      let x = t;
      (s.parts_us[i] ?? []).forEach((/** @type {number} */ us, /** @type {number} */ j) => {
        if (us > 0) rects.push({ side, step: i, part: parts[j], t0Us: x, t1Us: x + us });
        x += Math.max(us, 0);
      });
      steps.push({ side, step: i, t0Us: t, t1Us: t + s.step_us[i] });
      t += s.step_us[i];
    }
    spanUs = Math.max(spanUs, t);
  }
  return { spanUs, rects, steps };
}
