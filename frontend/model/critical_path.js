// @ts-check
/**
 * The critical-path overlay of the lanes: the `critical_path?span=&start_us=&end_us=` answer as segments to
 * draw, coloured by what holds the step up at that time. Pure.
 */
import { formatCount, formatDuration } from './format.js';

/** @type {Record<string, string>} */
export const PATH_COLORS = {
  host: '#4263eb', dataloader: '#f08c00', sync: '#e03131', launch: '#9c36b5', wait: '#868e96', comm: '#0c8599',
  backlog: '#8d6e63', device: '#2f9e44',
};

/** What each kind means, for the legend and the tooltip. @type {Record<string, string>} */
export const PATH_TEXT = {
  host: 'host time on the main thread', dataloader: 'waiting for the DataLoader', sync: 'a sync returning',
  launch: 'from a launch call to its kernel', wait: 'a stream waiting (dependency, another stream)',
  comm: 'communication', backlog: 'device work launched before the window', device: 'device work on a stream',
};

/** @param {string} kind a segment's kind (`stream LABEL` counts as device work) */
export function pathKind(kind) {
  return kind.startsWith('stream ') ? 'device' : kind in PATH_COLORS ? kind : 'wait';
}

/**
 * The answer's segments, flattened and sorted by start.
 * @param {any} answer
 * @returns {{startUs: number, endUs: number, kind: string, label: string, lane?: number}[]}
 */
export function pathSegments(answer) {
  const out = [];
  for (const step of Array.isArray(answer?.steps) ? answer.steps : []) {
    for (const s of Array.isArray(step?.segments) ? step.segments : []) {
      if (!Number.isFinite(s?.start_us) || !Number.isFinite(s?.end_us) || s.end_us <= s.start_us) continue;
      const label = String(s.kind ?? '');
      /** @type {{startUs: number, endUs: number, kind: string, label: string, lane?: number}} */
      const seg = { startUs: s.start_us, endUs: s.end_us, kind: pathKind(label), label };
      if (Number.isInteger(s.lane) && s.lane >= 0) seg.lane = s.lane;
      out.push(seg);
    }
  }
  return out.sort((a, b) => a.startUs - b.startUs);
}

/**
 * What the answer left out to stay small (its steps' `segments_omitted`, `omitted_us`): a note for the strip, or ''.
 * Every step in view keeps its share of segments; a step with more keeps its longest ones.
 * @param {any} answer
 */
export function pathOmittedNote(answer) {
  let steps = 0;
  let segments = 0;
  let us = 0;
  for (const step of Array.isArray(answer?.steps) ? answer.steps : []) {
    const n = Number(step?.segments_omitted);
    if (!(n > 0)) continue;
    steps += 1;
    segments += n;
    us += Number(step.omitted_us) || 0;
  }
  if (!steps) return '';
  const total = Number(answer?.total);
  const listed = Array.isArray(answer?.steps) ? answer.steps.length : 0;
  const more = total > listed ? `; ${formatCount(total - listed)} more steps in view not drawn` : '';
  return `critical path: ${formatCount(segments)} short segments (${formatDuration(us)}) of ${formatCount(steps)} `
    + `step${steps === 1 ? '' : 's'} not drawn, so that every step in view keeps its longest ones${more}`;
}
