// @ts-check
/**
 * Gap-table texts: the `cause` filter of the `gaps` route, what the CPU was doing during a gap
 * (its culprit, composed like the server's `label`: "after aten::mm", "cudaStreamSynchronize in
 * aten::item", then " in <annotation>") and the summary's top-culprit lists. Pure.
 */
import { GAP_CAUSES } from './colors.js';

/**
 * The `cause` parameter for a set of ticked causes: null when every cause is ticked (no filter),
 * else the ticked ones comma-separated in the analyses' order (unknown names dropped).
 * @param {Iterable<string>} selected
 * @returns {string | null}
 */
export function causeParam(selected) {
  const set = new Set(selected);
  const known = GAP_CAUSES.map((c) => c.cause).filter((c) => set.has(c));
  return known.length === GAP_CAUSES.length ? null : known.join(',');
}

/**
 * @typedef {object} Culprit
 * @property {string} text the op (with "after" and the sync call's op), '' when none
 * @property {string} annotation the user annotation around it, '' when none
 * @property {string} label both: "<text> in <annotation>"
 */

/**
 * Composes a culprit from its parts (names already resolved; '' or null for none).
 * @param {string | null | undefined} name the culprit op or sync call
 * @param {{after?: boolean, caller?: string | null, annotation?: string | null}} [parts]
 * @returns {Culprit}
 */
export function composeCulprit(name, { after = false, caller = null, annotation = null } = {}) {
  if (!name) return { text: '', annotation: '', label: '' };
  let text = after ? `after ${name}` : String(name);
  if (caller) text = `${text} in ${caller}`;
  const ann = annotation ? String(annotation) : '';
  return { text, annotation: ann, label: ann ? `${text} in ${ann}` : text };
}

/**
 * The culprit of row `i` of a `gaps` answer (`culprit`, `culprit_after`, `caller` and `annotation`
 * index `names`; -1 or out of range: none).
 * @param {string[]} names
 * @param {Record<string, any[] | undefined>} gaps the answer's `gaps` columns
 * @param {number} i
 * @returns {Culprit}
 */
export function gapCulprit(names, gaps, i) {
  const name = (/** @type {string} */ key) => {
    const k = gaps[key]?.[i];
    return typeof k === 'number' && k >= 0 && k < names.length ? String(names[k]) : null;
  };
  return composeCulprit(name('culprit'), { after: Boolean(gaps.culprit_after?.[i]), caller: name('caller'), annotation: name('annotation') });
}

/** The summary's culprit lists, with what each covers. */
const CULPRIT_LISTS = /** @type {const} */ ([
  ['top_culprits', 'host gaps', 'what the CPU was running while the GPU waited for work'],
  ['top_sync_culprits', 'sync gaps', 'the synchronizing call and the op that made it'],
  ['top_comm_culprits', 'comm gaps', 'what the host ran while waiting on a collective'],
]);

/**
 * The non-empty top-culprit lists of one device of `summary.devices[]`, rows as {label, annotation, idleUs}.
 * @param {any} device
 * @returns {{key: string, title: string, hint: string, rows: {text: string, annotation: string, label: string, idleUs: number}[]}[]}
 */
export function culpritGroups(device) {
  const gaps = device?.gaps ?? {};
  return CULPRIT_LISTS.map(([key, title, hint]) => ({ key, title, hint,
    rows: (Array.isArray(gaps[key]) ? gaps[key] : []).map((/** @type {any} */ r) => {
      const c = composeCulprit(r.name ?? r.label, { annotation: r.annotation });
      return { ...c, label: typeof r.label === 'string' && r.label ? r.label : c.label, idleUs: Number(r.idle_us) };
    }) })).filter((g) => g.rows.length > 0);
}
