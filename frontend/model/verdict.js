// @ts-check
/**
 * Verdict texts: the bound with its confidence, share and runner-up (the header and the Markdown
 * export say the same words), and the run-level verdict of `verdict?run=` with the span's verdict
 * made consistent with it. Pure: no DOM, inputs never modified.
 */
import { formatDuration, formatShare } from './format.js';

/** The bound of a trace too short or too odd to judge; its `runner_up` is what the figures lean to. */
export const NOT_ENOUGH_DATA = 'not enough data';

/**
 * @typedef {object} Verdict the `verdict` object of `summary` and `verdict?run=` (fields may be missing in old answers)
 * @property {string} [bound]
 * @property {string} [confidence] high / medium / low
 * @property {number | null} [share] fraction of the judged time
 * @property {string | null} [runner_up]
 * @property {number | null} [runner_up_share]
 * @property {string} [evidence]
 * @property {string} [suggestion]
 * @property {string[]} [reasons] why `not enough data`
 * @property {string | null} [rule] why the bound wins though the runner-up's share is larger
 */

/** @param {unknown} x */
const isNumber = (x) => typeof x === 'number' && Number.isFinite(x);

/**
 * "medium confidence", or '' without one; '' for `not enough data`, which shows its reasons instead (a
 * confidence in having too little data reads as a confidence in the figures).
 * @param {Verdict | null | undefined} v
 */
export function confidenceText(v) {
  return v?.confidence && v.bound !== NOT_ENOUGH_DATA ? `${v.confidence} confidence` : '';
}

/**
 * Why the bound wins though its runner-up has the larger share (the server's `rule`), or ''.
 * @param {Verdict | null | undefined} v
 */
export function ruleText(v) {
  return v?.rule && v.bound ? `${v.bound} wins by the rule: ${v.rule}` : '';
}

/** "60.2% of the judged time", or '' when not measured. @param {Verdict | null | undefined} v */
export function shareText(v) {
  return isNumber(v?.share) ? `${formatShare(/** @type {number} */ (v?.share))} of the judged time` : '';
}

/**
 * The runner-up with its share: "runner-up: host-bound (20.9%)"; for `not enough data` what the
 * figures lean to instead: "the figures lean to host-bound (43.0%)". '' without a runner-up.
 * @param {Verdict | null | undefined} v
 */
export function runnerUpText(v) {
  if (!v?.runner_up) return '';
  const share = isNumber(v.runner_up_share) ? ` (${formatShare(/** @type {number} */ (v.runner_up_share))})` : '';
  return v.bound === NOT_ENOUGH_DATA ? `the figures lean to ${v.runner_up}${share}` : `runner-up: ${v.runner_up}${share}`;
}

/**
 * The bound and what qualifies it in one phrase: "compute-bound (medium confidence, 60.2% of the judged time)".
 * @param {Verdict | null | undefined} v
 */
export function verdictHeadline(v) {
  const bound = v?.bound || 'unknown';
  const details = [confidenceText(v), shareText(v)].filter(Boolean);
  return details.length ? `${bound} (${details.join(', ')})` : bound;
}

/**
 * The verdict in one line, for the folded header: the bound, its share and the largest saving, e.g.
 * {bound: "sync-bound", text: "35.7% of the time \u00b7 top saving 4.1 ms/step (12.0%): remove syncs"} (the figures first, so a
 * cut brief keeps them).
 * A `not enough data` verdict gives its first reason instead of a share.
 * @param {Verdict | null | undefined} v @param {{fix: string, savingUs: number, share: number | null} | null | undefined} saving the largest
 * @returns {{bound: string, text: string}}
 */
export function verdictBrief(v, saving) {
  const bound = v?.bound || 'no verdict';
  const reasons = reasonsOf(v);
  const parts = reasons.length ? [reasons[0]] : [isNumber(v?.share) ? `${formatShare(/** @type {number} */ (v?.share))} of the time` : ''];
  if (saving && saving.savingUs > 0) {
    parts.push(`top saving ${formatDuration(saving.savingUs)}/step${saving.share === null ? '' : ` (${formatShare(saving.share)})`}: ${saving.fix}`);
  }
  return { bound, text: parts.filter(Boolean).join(' \u00b7 ') };
}

/** The reasons of a `not enough data` verdict ([] otherwise). @param {Verdict | null | undefined} v */
export function reasonsOf(v) {
  return v?.bound === NOT_ENOUGH_DATA && Array.isArray(v.reasons) ? v.reasons.map(String) : [];
}

/**
 * The verdict to show for a span: the run's harmonized one when `verdict?run=` has it (it may say
 * the run's bound where the span alone was a close call), else the summary's own.
 * @param {any} summary the `summary` answer
 * @param {any} runAnswer the `verdict?run=` answer of the span's run, or null
 * @returns {{verdict: Verdict, asRun: boolean}} asRun: the run changed the bound the summary gives
 */
export function spanVerdict(summary, runAnswer) {
  const own = summary?.verdict ?? {};
  const row = runAnswer && runAnswer.run === summary?.run && Array.isArray(runAnswer.spans)
    ? runAnswer.spans.find((/** @type {any} */ s) => s.id === summary?.id) : null;
  if (!row?.verdict) return { verdict: own, asRun: false };
  return { verdict: row.verdict, asRun: Boolean(own.bound) && row.verdict.bound !== own.bound };
}

/**
 * The run verdict is worth a line when its run has more than one span and some span has loaded.
 * @param {any} runAnswer @param {string} [run] the run on screen
 */
export function showsRunVerdict(runAnswer, run) {
  return Boolean(runAnswer?.verdict) && (run === undefined || runAnswer.run === run)
    && Array.isArray(runAnswer.spans) && runAnswer.spans.length > 1;
}

/**
 * How many spans the run verdict pools: "2 of 2 spans", "1 of 3 spans, 2 loading", "1 of 2 spans, 1 failed".
 * @param {any} runAnswer
 */
export function runSpansText(runAnswer) {
  const spans = Array.isArray(runAnswer?.spans) ? runAnswer.spans : [];
  const judged = spans.filter((/** @type {any} */ s) => s.verdict).length;
  const extra = [Number(runAnswer?.pending) > 0 ? `${runAnswer.pending} loading` : '',
    Number(runAnswer?.failed) > 0 ? `${runAnswer.failed} failed` : ''].filter(Boolean);
  return [`${judged} of ${spans.length} spans`, ...extra].join(', ');
}

/**
 * The run verdict in one line: "Run verdict: compute-bound (medium) - 2 of 2 spans".
 * @param {any} runAnswer
 */
export function runVerdictLine(runAnswer) {
  const v = runAnswer?.verdict ?? {};
  return `Run verdict: ${v.bound ?? 'unknown'}${v.confidence ? ` (${v.confidence})` : ''} - ${runSpansText(runAnswer)}`;
}
