// @ts-check
/**
 * The verdict block of the header: the run's verdict (when its run has more than one span) above
 * the span's, each with its bound, confidence, share, runner-up and evidence; the reasons when a
 * span is `not enough data`; the suggestion; the trace and device figures (idle, communication);
 * the loader's warnings. Every trace string goes in as text.
 */
import { commText, deviceIdleText } from '../model/devices.js';
import { formatCount, formatDuration, formatShare } from '../model/format.js';
import { PANEL_FIGURES, figureWarning, healthItems, healthLine, independentText, unreliableText } from '../model/health.js';
import { SHOWN_IN_VERDICT, savingRows, shareWindowText } from '../model/savings.js';
import { confidenceText, reasonsOf, ruleText, runnerUpText, runSpansText, shareText, showsRunVerdict, spanVerdict } from '../model/verdict.js';
import { el } from './dom.js';
import { gpuSummaryBlock } from './gpu_summary.js';

/** @param {import('../model/verdict.js').Verdict} v @param {string} [fallback] */
function boundChip(v, fallback = 'no verdict') {
  return el('span', { class: 'ks-bound', dataset: { bound: String(v.bound ?? '') } }, String(v.bound ?? fallback));
}

/**
 * Bound, confidence, share and runner-up of one verdict, as the parts of one line.
 * @param {import('../model/verdict.js').Verdict} v
 */
function headParts(v) {
  const confidence = confidenceText(v);
  const share = shareText(v);
  const runnerUp = runnerUpText(v);
  const rule = ruleText(v);
  return [boundChip(v),
    confidence ? el('span', { class: 'ks-confidence', dataset: { confidence: String(v.confidence) } }, confidence) : null,
    share ? el('span', { class: 'ks-share' }, share) : null,
    runnerUp ? el('span', { class: 'ks-runner-up' }, runnerUp) : null,
    rule ? el('span', { class: 'ks-rule' }, `(${rule})`) : null];
}

/**
 * The run's verdict line: "Run verdict: compute-bound · medium confidence · 2 of 2 spans", its evidence below.
 * @param {any} runAnswer
 */
function runBlock(runAnswer) {
  const v = runAnswer.verdict;
  return el('div', { class: 'ks-run-verdict', dataset: { scope: 'run', pending: String(runAnswer.pending ?? 0) } },
    el('div', { class: 'ks-verdict-line' }, el('span', { class: 'ks-verdict-label' }, 'Run verdict:'), ...headParts(v),
      el('span', { class: 'ks-run-spans' }, runSpansText(runAnswer))),
    v.evidence ? el('div', { class: 'ks-evidence' }, String(v.evidence)) : null);
}

/**
 * The span's verdict: the run's harmonized one when the run route has it, marked "(as the run)"
 * where it differs from the span's own.
 * @param {any} summary @param {any} runAnswer @param {boolean} withRun the run line is shown above
 */
function spanBlock(summary, runAnswer, withRun) {
  const { verdict: v, asRun } = spanVerdict(summary, runAnswer);
  const reasons = reasonsOf(v);
  return el('div', { class: 'ks-span-verdict', dataset: { scope: 'span' } },
    el('div', { class: 'ks-verdict-line' }, withRun ? el('span', { class: 'ks-verdict-label' }, 'Span verdict:') : null, ...headParts(v),
      asRun ? el('span', { class: 'ks-as-run', title: `on its own this span says ${summary.verdict?.bound}` }, '(as the run)') : null),
    v.evidence ? el('div', { class: 'ks-evidence' }, String(v.evidence)) : null,
    reasons.length ? el('div', { class: 'ks-reasons' }, 'Why there is not enough data:', el('ul', {}, reasons.map((r) => el('li', {}, r)))) : null,
    unreliableNote(summary, 'verdict'),
    v.suggestion ? el('div', { class: 'ks-suggestion' }, el('b', {}, 'Suggestion: '), String(v.suggestion)) : null,
    savingsBlock(summary),
    insightsBlock(summary.insights));
}

/**
 * The largest savings (`summary.savings`): what each fix would save per step, replayed; the panel lists them all.
 * @param {any} summary
 */
function savingsBlock(summary) {
  const rows = savingRows(summary).filter((r) => r.savingUs > 0).slice(0, SHOWN_IN_VERDICT);
  if (!rows.length) return null;
  // one line (the header stays short); the panel "What would it save?" lists them all with their edits
  return el('div', { class: 'ks-saves' },
    el('b', {}, `What a fix would save per step (${shareWindowText(rows[0], formatDuration)}): `),
    rows.map((r, k) => el('span', { class: 'ks-save', title: `${r.fix}\n${r.edits.join('\n')}` }, k ? ' \u00b7 ' : '',
      `${r.fix}: ${formatDuration(r.savingUs)}${r.share === null ? '' : ` (${formatShare(r.share)})`}`)));
}

/**
 * The note beside a figure that a trace-health warning makes unreliable, or null.
 * @param {any} summary @param {string} figure a key of model/health.js FIGURE_NAMES
 */
function unreliableNote(summary, figure) {
  const text = unreliableText(summary, figure);
  return text ? el('div', { class: 'ks-unreliable', dataset: { figure } }, `\u26a0 ${text}`) : null;
}

/**
 * Trace health: each finding, what it does to which figure; warnings open, notes folded.
 * @param {any} summary
 */
function healthBlock(summary) {
  const items = healthItems(summary);
  if (!items.length) return null;
  const warns = items.filter((h) => h.severity === 'warn').length;
  return el('details', { class: 'ks-health', open: warns > 0 },
    el('summary', {}, `Trace health: ${warns} warning${warns === 1 ? '' : 's'}, ${items.length - warns} note${items.length - warns === 1 ? '' : 's'}`),
    el('ul', {}, items.map((h) => el('li', { dataset: { check: h.check, severity: h.severity } },
      el('b', {}, h.severity === 'warn' ? '\u26a0 ' : '\u2139 '), healthLine(h)))));
}

/**
 * What to do next from the tables (`summary.insights`): each pattern's evidence and its suggestion.
 * @param {any} insights
 */
function insightsBlock(insights) {
  if (!Array.isArray(insights) || insights.length === 0) return null;
  // folded to one line: the header stays short enough to leave the lanes in view on a laptop screen
  const kinds = insights.map((/** @type {any} */ i) => String(i.kind)).join(', ');
  return el('details', { class: 'ks-next' }, el('summary', {}, el('b', {}, 'What to do next (from the tables): '), kinds),
    el('ul', { class: 'ks-insights' }, insights.map((/** @type {any} */ i) => el('li', { dataset: { kind: String(i.kind) } },
      el('b', {}, `${i.kind}: `), String(i.evidence), el('br'), el('i', {}, 'Suggestion: '), String(i.suggestion)))));
}

/**
 * The figures under the verdict: trace length and events, each device's idle share and communication.
 * @param {any} summary
 */
function chips(summary) {
  const devices = Array.isArray(summary.devices) ? summary.devices : [];
  const idleNote = unreliableText(summary, 'busy_idle');
  const commNote = figureWarning(summary.health, PANEL_FIGURES.comm);
  return el('div', { class: 'ks-chips' }, el('span', { class: 'ks-chip' }, `${formatDuration(summary.duration_us)} \u00b7 ${formatCount(summary.events)} events`),
    devices.map((/** @type {any} */ d) => el('span', idleNote ? { class: 'ks-chip ks-chip-unreliable', title: idleNote } : { class: 'ks-chip' },
      idleNote ? `\u26a0 ${deviceIdleText(d)}` : deviceIdleText(d))),
    devices.map((/** @type {any} */ d) => {
      const text = commText(d.device, d.comm);
      return text ? el('span', { class: commNote ? 'ks-chip ks-comm ks-chip-unreliable' : 'ks-chip ks-comm', dataset: { device: String(d.device) },
        title: `communication kernels (NCCL/RCCL): their time, the part no compute kernel covers, the overlap; compute ${formatDuration(d.comm.compute_us)}`
          + (commNote ? `\n${commNote}` : '') }, commNote ? `\u26a0 ${text}` : text) : null;
    }));
}

/**
 * The note under the communication chips when a warning makes them unreliable, or null (also when the span
 * has no communication to show).
 * @param {any} summary
 */
function commNoteLine(summary) {
  const devices = Array.isArray(summary.devices) ? summary.devices : [];
  const text = devices.some((/** @type {any} */ d) => commText(d.device, d.comm)) ? figureWarning(summary.health, PANEL_FIGURES.comm) : null;
  return text ? el('div', { class: 'ks-unreliable', dataset: { figure: 'comm' } }, `\u26a0 ${text}`) : null;
}

/**
 * Everything the header's verdict area shows for a loaded summary.
 * @param {any} summary the `summary` answer @param {any} runAnswer the `verdict?run=` answer of its run, or null
 * @returns {HTMLElement[]}
 */
export function verdictNodes(summary, runAnswer) {
  const withRun = showsRunVerdict(runAnswer, summary.run);
  const warnings = Array.isArray(summary.warnings) ? summary.warnings : [];
  const alone = runAnswer && runAnswer.run === summary.run ? independentText(runAnswer) : '';
  return [withRun ? runBlock(runAnswer) : null, alone ? el('div', { class: 'ks-hint ks-independent' }, alone) : null,
    spanBlock(summary, runAnswer, withRun), chips(summary), unreliableNote(summary, 'busy_idle'), commNoteLine(summary), gpuSummaryBlock(summary),
    healthBlock(summary),
    warnings.length ? el('details', { class: 'ks-warnings' }, el('summary', {}, `${warnings.length} loader warning(s)`),
      el('ul', {}, warnings.map((/** @type {any} */ w) => el('li', {}, typeof w === 'string' ? w : JSON.stringify(w))))) : null]
    .filter((x) => x !== null);
}
