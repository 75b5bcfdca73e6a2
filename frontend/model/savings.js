// @ts-check
/**
 * What a fix would save: the summary's `savings` (each suggestion replayed with the edit that stands for it,
 * largest first) as rows, the what-if answer (`whatif?span=&edit=`) as step bars, and the edits box's text as
 * edits. Pure.
 */
import { firstEditError } from './edits.js';

export const MAX_EDITS = 16; // the whatif route's limit
export const MAX_EDIT_CHARS = 1000;
export const SHOWN_IN_VERDICT = 3; // savings listed under the verdict; the panel lists them all

/**
 * @typedef {object} SavingRow
 * @property {string} fix what the change is
 * @property {string} source verdict, runner-up, culprit or insight:KIND
 * @property {number} savingUs per step, the mean
 * @property {number | null} share of `shareBaseUs`
 * @property {string | null} shareOf the step the share is of: "judged" (the verdict's), "recorded" or "replayed"
 * @property {number | null} shareBaseUs that step
 * @property {number} beforeUs median step before
 * @property {number} afterUs median step after
 * @property {string[]} edits as `kinetoscope whatif --edit` spells them
 */

/**
 * The summary's savings, largest first, malformed entries left out.
 * @param {any} summary
 * @returns {SavingRow[]}
 */
export function savingRows(summary) {
  const list = Array.isArray(summary?.savings) ? summary.savings : [];
  /** @type {SavingRow[]} */
  const rows = [];
  for (const s of list) {
    if (!s || typeof s.fix !== 'string' || !Number.isFinite(s.saving_us) || !Array.isArray(s.edits)) continue;
    rows.push({ fix: s.fix, source: String(s.source ?? ''), savingUs: s.saving_us,
      share: Number.isFinite(s.saving_share) ? s.saving_share : null,
      ...shareWindow(s),
      beforeUs: Number(s.recorded_median_step_us), afterUs: Number(s.median_step_us),
      edits: s.edits.filter((/** @type {unknown} */ e) => typeof e === 'string') });
  }
  return rows.sort((a, b) => b.savingUs - a.savingUs);
}

/**
 * The step the savings' shares are of, in words: "shares of the 10.6 ms step the verdict judges" (its share has the
 * same denominator), of the replay's median step (the device runs behind the host) or of the median step.
 * @param {{ shareOf: string | null, shareBaseUs: number | null } | undefined} row
 * @param {(us: number) => string} duration
 */
export function shareWindowText(row, duration) {
  if (row?.shareOf === 'judged' && row.shareBaseUs !== null) return `shares of the ${duration(row.shareBaseUs)} step the verdict judges`;
  if (row?.shareOf === 'replayed') return 'shares of the replay\'s median step (the device runs behind the host)';
  return 'shares of the median step';
}

/**
 * A saving's or a what-if answer's share window (`share_of`, `share_base_us`), checked.
 * @param {any} s
 */
export function shareWindow(s) {
  return { shareOf: typeof s?.share_of === 'string' ? s.share_of : null,
    shareBaseUs: Number.isFinite(s?.share_base_us) ? s.share_base_us : null };
}

/** Where a saving came from, for a label. @param {string} source */
export function sourceText(source) {
  if (source === 'verdict') return 'the verdict';
  if (source === 'runner-up') return 'the runner-up';
  if (source === 'culprit') return 'a top culprit';
  if (source.startsWith('insight:')) return `the ${source.slice('insight:'.length)} insight`;
  return source;
}

/**
 * The edits of the edits box: one per line, blank lines dropped; an error where the server would refuse them (too
 * many, too long, or one it cannot read: `edits.parseEdit`), so nothing it would refuse is sent.
 * @param {string} text
 * @returns {{edits: string[], error: string | null}}
 */
export function parseEditsText(text) {
  const edits = String(text ?? '').split(/\r?\n/).map((line) => line.trim()).filter((line) => line.length > 0);
  if (edits.length > MAX_EDITS) return { edits: [], error: `at most ${MAX_EDITS} edits, one per line (not ${edits.length})` };
  const long = edits.find((e) => e.length > MAX_EDIT_CHARS);
  if (long) return { edits: [], error: `an edit has ${long.length} characters; at most ${MAX_EDIT_CHARS}` };
  const refused = firstEditError(edits);
  return refused === null ? { edits, error: null } : { edits: [], error: refused };
}

/**
 * @typedef {object} SelectionEdit
 * @property {string} label what the edit stands for
 * @property {string} edit as `kinetoscope whatif --edit` spells it
 */

/**
 * The edits a selected event of a CPU lane stands for (an op, a Python frame of `with_stack`, an annotation): its
 * host time gone, or halved (`host:NAME*F` matches the name exactly); none for other lanes, an unnamed selection,
 * or a name the edits cannot carry (a line break, over MAX_EDIT_CHARS with its prefix).
 * @param {{laneKind?: string, name?: string} | null | undefined} sel
 * @returns {SelectionEdit[]}
 */
export function selectionEdits(sel) {
  const name = typeof sel?.name === 'string' ? sel.name : '';
  if (sel?.laneKind !== 'cpu' || !name || /[\r\n]/.test(name) || name.length + 8 > MAX_EDIT_CHARS) return [];
  return [{ label: 'costs no host time', edit: `host:${name}*0` }, { label: 'half its host time', edit: `host:${name}*0.5` }];
}

/**
 * @typedef {object} StepBar
 * @property {string} name
 * @property {number} recordedUs
 * @property {number} predictedUs
 * @property {number} recordedFrac width of the recorded bar, of the longest bar (0..1)
 * @property {number} predictedFrac
 */

/**
 * The what-if answer as one pair of bars per step, scaled to the longest bar.
 * @param {any} answer
 * @returns {StepBar[]}
 */
export function stepBars(answer) {
  const steps = Array.isArray(answer?.steps) ? answer.steps : [];
  const ok = steps.filter((/** @type {any} */ s) => Number.isFinite(s?.recorded_us) && Number.isFinite(s?.predicted_us));
  const longest = Math.max(1e-9, ...ok.map((/** @type {any} */ s) => Math.max(s.recorded_us, s.predicted_us)));
  return ok.map((/** @type {any} */ s) => ({ name: String(s.name ?? ''), recordedUs: s.recorded_us, predictedUs: s.predicted_us,
    recordedFrac: Math.max(0, s.recorded_us) / longest, predictedFrac: Math.max(0, s.predicted_us) / longest }));
}
