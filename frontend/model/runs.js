// @ts-check
/**
 * The `runs` listing as the run / worker / span selectors show it. The page refreshes the listing
 * while it is open, so new traces appear without a reload; `mergeRuns` keeps the span on screen
 * listed, marked `gone`, when its file has left the logdir, so the selectors still name what the
 * page shows. Pure: no DOM, inputs never modified.
 */

/**
 * @typedef {object} SpanInfo one span of the `runs` answer
 * @property {string} id
 * @property {number} index
 * @property {string | null} span
 * @property {string} file
 * @property {string} state
 */
/** @typedef {{name: string, spans: SpanInfo[]}} WorkerInfo */
/** @typedef {{name: string, workers: WorkerInfo[]}} RunInfo */
/** @typedef {{run: string, worker: string, span: SpanInfo}} Located a span with its run and worker */

/** The state shown for the span on screen once its file is no longer listed. */
export const GONE = 'gone';

/**
 * The `runs` of an answer, or [] when it has none.
 * @param {any} body
 * @returns {RunInfo[]}
 */
export function runsOf(body) {
  return Array.isArray(body?.runs) ? body.runs : [];
}

/**
 * Every span with its run and worker, in listing order.
 * @param {RunInfo[]} runs
 * @returns {Located[]}
 */
export function spanList(runs) {
  return runs.flatMap((r) => r.workers.flatMap((w) => w.spans.map((span) => ({ run: r.name, worker: w.name, span }))));
}

/**
 * Where span `id` is listed, or null.
 * @param {RunInfo[]} runs @param {string | null | undefined} id
 */
export function findSpan(runs, id) {
  return spanList(runs).find((x) => x.span.id === id) ?? null;
}

/**
 * How many spans run `run` lists, over all its workers (0 when it is not listed).
 * @param {RunInfo[]} runs @param {string} run
 */
export function runSpanCount(runs, run) {
  return runs.filter((r) => r.name === run).reduce((n, r) => n + r.workers.reduce((m, w) => m + w.spans.length, 0), 0);
}

/**
 * The span a selector change asks for: the named run, worker and span, each falling back to the
 * first of its parent when it is not listed (a run change resets the worker and the span).
 * @param {RunInfo[]} runs @param {string} run @param {string} worker @param {string | null} id
 * @returns {Located | null}
 */
export function resolvePick(runs, run, worker, id) {
  const r = runs.find((x) => x.name === run) ?? runs[0];
  const w = r?.workers.find((x) => x.name === worker) ?? r?.workers[0];
  const s = w?.spans.find((x) => x.id === id) ?? w?.spans[0];
  return r && w && s ? { run: r.name, worker: w.name, span: s } : null;
}

/**
 * The span a link opens: its span id, else the first span of its run (and worker), else the first.
 * @param {RunInfo[]} runs @param {{run?: string, worker?: string, span?: string}} link
 * @returns {Located | null}
 */
export function linkedSpan(runs, link) {
  const all = spanList(runs);
  return (link.span ? all.find((x) => x.span.id === link.span) : undefined)
    ?? all.find((x) => x.run === link.run && (!link.worker || x.worker === link.worker))
    ?? all[0] ?? null;
}

/**
 * What a link asked for that the logdir does not have, as a notice naming it and what opened instead;
 * null when the link is honoured (or names nothing).
 * @param {{run?: string, worker?: string, span?: string, t0Us?: number, sel?: number}} link
 * @param {Located | null} opened
 * @returns {string | null}
 */
export function linkMismatch(link, opened) {
  const asked = [link.run && `run \u201c${link.run}\u201d`, link.worker && `worker \u201c${link.worker}\u201d`,
    link.span && `span ${link.span}`].filter(Boolean).join(', ');
  if (!asked) return null;
  const missing = (link.span && opened?.span.id !== link.span) || (link.run && opened?.run !== link.run)
    || (link.worker && opened?.worker !== link.worker);
  if (!missing) return null;
  const instead = opened ? `opened run \u201c${opened.run}\u201d, worker \u201c${opened.worker}\u201d, ` +
    `${opened.span.span ? `span ${opened.span.span}` : opened.span.file ?? opened.span.id} instead` : 'nothing is listed yet';
  const dropped = link.t0Us !== undefined || link.sel !== undefined ? '; the link\u2019s window and selection were not applied' : '';
  return `The link asks for ${asked}, which this logdir does not list: ${instead}${dropped}.`;
}

/**
 * The listing to show: `fresh` (the latest answer), plus the span on screen when it is no longer
 * in it, taken from `shown` (the listing shown so far) and marked `gone`, in its run and worker
 * (added back at the end when they are gone too).
 * @param {RunInfo[]} shown @param {RunInfo[]} fresh @param {string | null} currentId
 * @returns {RunInfo[]}
 */
export function mergeRuns(shown, fresh, currentId) {
  if (!currentId || findSpan(fresh, currentId)) return fresh;
  const old = findSpan(shown, currentId);
  if (!old) return fresh;
  const ghost = { ...old.span, state: GONE };
  const runs = fresh.some((r) => r.name === old.run) ? fresh : [...fresh, { name: old.run, workers: [] }];
  return runs.map((r) => {
    if (r.name !== old.run) return r;
    const workers = r.workers.some((w) => w.name === old.worker) ? r.workers : [...r.workers, { name: old.worker, spans: [] }];
    return { ...r, workers: workers.map((w) => (w.name === old.worker ? { ...w, spans: [...w.spans, ghost] } : w)) };
  });
}

/**
 * The label of a span in the span selector: index, numeric suffix (else the file name) and its
 * state unless ready.
 * @param {SpanInfo} s
 */
export function spanLabel(s) {
  return `${s.index}${s.span ? ` \u00b7 ${s.span}` : ` \u00b7 ${s.file}`}${s.state && s.state !== 'ready' ? ` (${s.state})` : ''}`;
}

/**
 * Whether the span on screen must be loaded again: the listing shows another version of its file
 * (replaced or completed), or it failed before and is now being (or has been) loaded again.
 * @param {{version?: string, state?: string} | null | undefined} before the listing entry it was loaded from
 * @param {{version?: string, state?: string} | null | undefined} now the latest listing entry
 */
export function spanChanged(before, now) {
  if (!before || !now) return false;
  if (before.version !== undefined && now.version !== undefined && before.version !== now.version) return true;
  return before.state === 'error' && now.state !== 'error';
}

/**
 * The notice for links in the logdir that the server did not follow (they lead outside it), from a `runs` answer's
 * `skipped_links`; null when there are none. Names at most 3 of them, as paths inside the logdir.
 * @param {{count?: number, links?: string[], option?: string} | null | undefined} skipped
 * @returns {string | null}
 */
export function skippedLinksNotice(skipped) {
  const count = Number(skipped?.count) || 0;
  if (count <= 0) return null;
  const links = (skipped?.links ?? []).slice(0, 3);
  const more = count > links.length ? `, and ${count - links.length} more` : '';
  const named = links.length ? ` (${links.join(', ')}${more})` : '';
  const one = count === 1;
  return `${count} link${one ? ' points' : 's point'} outside the logdir and ${one ? 'was' : 'were'} not followed${named}. `
    + `A shared logdir may not lead the server to other files on this machine; to read ${one ? 'it' : 'them'}, start `
    + `TensorBoard with ${skipped?.option || '--kinetoscope_allow_links_to'} DIR.`;
}
