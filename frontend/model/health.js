// @ts-check
/**
 * Trace health (`summary.health`, HTTP_API.md): the findings as lines, and which of them make a figure on
 * screen unreliable (`warn` items whose `affects` names it). Pure: no DOM, inputs never modified.
 */

/** The figures a health item can affect, as the tab names them. */
export const FIGURE_NAMES = {
  busy_idle: 'device busy and idle time',
  verdict: 'the verdict',
  host_gaps: 'host gaps and culprits',
  launch: 'launch offsets',
  kernel_table: 'kernel and operator GPU times',
  devices: 'device names',
  comm: 'communication',
  op_table: 'backward operator attribution',
};

/**
 * @typedef {object} HealthItem
 * @property {string} check
 * @property {string} severity 'warn' | 'info'
 * @property {string} found
 * @property {string[]} affects
 * @property {string} effect
 * @property {number} [count]
 */

/** The summary's health items (warnings first, as the server sends them); [] for old answers. @param {any} summary */
export function healthItems(summary) {
  const items = summary?.health;
  return Array.isArray(items) ? items.filter((/** @type {any} */ h) => h && typeof h.check === 'string') : [];
}

/**
 * The warnings that make one figure unreliable.
 * @param {any} summary @param {string} figure a key of FIGURE_NAMES
 * @returns {HealthItem[]}
 */
export function unreliableFor(summary, figure) {
  return healthItems(summary).filter((h) => h.severity === 'warn' && Array.isArray(h.affects) && h.affects.includes(figure));
}

/**
 * The note shown beside a figure a warning makes unreliable ('' when none does):
 * "unreliable: cropped, pre_window (see Trace health)".
 * @param {any} summary @param {string} figure
 */
export function unreliableText(summary, figure) {
  const checks = unreliableFor(summary, figure).map((h) => h.check);
  return checks.length ? `unreliable: ${checks.join(', ')} (see Trace health)` : '';
}

/**
 * The figures each panel shows, as keys of FIGURE_NAMES: what `figureWarning` is asked about there.
 * Gaps are idle time split by cause (busy_idle) with their culprits (host_gaps); steps split device time
 * (busy_idle) and, when the span communicates, communication (comm); the operator table attributes
 * GPU time (kernel_table) and backward ops (op_table).
 */
export const PANEL_FIGURES = {
  launch: ['launch'],
  gaps: ['busy_idle', 'host_gaps'],
  steps: ['busy_idle'],
  stepsComm: ['busy_idle', 'comm'],
  opTable: ['kernel_table', 'op_table'],
  kernelTable: ['kernel_table'],
  moduleTable: ['kernel_table'],
  comm: ['comm'],
};

/**
 * The line a panel shows when a warning in the health list makes one of its figures unreliable, or null:
 * "unreliable: launch offsets (pre_window, kernel_causality); see Trace health". Figures in the order
 * asked, each check once per figure; `info` items and malformed entries never count.
 * @param {any} health `summary.health` (anything else reads as no findings)
 * @param {string | string[]} figures one key of FIGURE_NAMES or several
 * @returns {string | null}
 */
export function figureWarning(health, figures) {
  const items = healthItems({ health });
  const parts = [];
  for (const figure of new Set(Array.isArray(figures) ? figures : [figures])) {
    const checks = [...new Set(items.filter((h) => h.severity === 'warn' && Array.isArray(h.affects) && h.affects.includes(figure))
      .map((h) => h.check))];
    if (checks.length) parts.push(`${/** @type {Record<string, string>} */ (FIGURE_NAMES)[figure] ?? figure} (${checks.join(', ')})`);
  }
  return parts.length ? `unreliable: ${parts.join('; ')}; see Trace health` : null;
}

/**
 * One finding as a line: "cropped: no 'Trace' span ... Affects device busy and idle time, the verdict: ...".
 * @param {HealthItem} h
 */
export function healthLine(h) {
  const figures = (h.affects ?? []).map((f) => /** @type {Record<string, string>} */ (FIGURE_NAMES)[f] ?? f).join(', ');
  return `${h.check}: ${h.found}.${figures ? ` Affects ${figures}: ${h.effect}` : ''}`;
}

/**
 * Why a run has no ranks view and no run verdict: its traces are independent profiles ('' when they are not).
 * @param {any} answer the `ranks?run=` or `verdict?run=` answer
 */
export function independentText(answer) {
  const groups = Array.isArray(answer?.groups) ? answer.groups : [];
  const alone = groups.filter((/** @type {any} */ g) => g.basis === 'independent').length;
  if (groups.length < 2 || groups.some((/** @type {any} */ g) => g.basis !== 'independent' && (g.workers?.length ?? 0) > 1)) return '';
  return `${alone} independent profile${alone === 1 ? '' : 's'}, not ranks of one job (no distributedInfo with world_size > 1, `
    + 'no rank naming, no matching collectives): each trace has its own verdict; none is pooled across them.';
}
