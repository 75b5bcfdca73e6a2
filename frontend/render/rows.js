// @ts-check
/**
 * The event rectangles of one depth row, shared by the CPU and GPU lane drawers: a bisected visible
 * range, per-pixel merging (model/lod.js), fill style changed only when the colour does, labels
 * only where they fit.
 */
import { eventColor } from '../model/colors.js';
import { visibleRange } from '../model/hit.js';
import { ROW_H } from '../model/layout.js';
import { fitLabel, forEachDrawRect } from '../model/lod.js';
import { COLORS, MIN_LABEL_PX } from './frame.js';

/**
 * Called for every single event drawn (not for merged blocks), e.g. to outline stalled DataLoader spans.
 * @callback OnEvent
 * @param {number} i event index in the lane's columns
 * @param {number} x0Css @param {number} x1Css
 * @returns {void}
 */

/**
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/lanes.js').Lane} lane
 * @param {import('../model/lanes.js').DepthRow} row
 * @param {number} yCss top of the row
 * @param {OnEvent} [onEvent]
 * @param {() => void} [decorate] drawn over the rectangles and under the labels
 */
export function drawDepthRow(frame, lane, row, yCss, onEvent, decorate) {
  const { ctx, scale, data } = frame;
  const xMin = scale.x0Css - 1;
  const xMax = scale.x1Css + 1;
  const [i0, i1] = visibleRange(row.startUs, row.maxDurUs, scale.t0Us, scale.t1Us);
  const ev = lane.ev;
  /** @type {number[]} */
  const labels = [];
  let lastColor = '';
  let lastAlpha = 1;
  forEachDrawRect(row.startUs, row.durUs, i0, i1, scale, 1, (xa, xb, k, n) => {
    if (xb < xMin || xa > xMax) return;
    const i = row.idx[k];
    const merged = n > 1 || ev.count[i] > 1;
    const nameIx = ev.name[i];
    const color = eventColor(ev.kind[i], merged || nameIx < 0 ? '' : data.names[nameIx], merged);
    if (color !== lastColor) {
      ctx.fillStyle = color;
      lastColor = color;
    }
    // A merged block's opacity shows how busy it is (server `fill`; client runs are assumed dense).
    const alpha = n > 1 ? 0.85 : 0.35 + 0.65 * ev.fill[i];
    if (alpha !== lastAlpha) {
      ctx.globalAlpha = alpha;
      lastAlpha = alpha;
    }
    const x0 = Math.max(xa, xMin);
    const x1 = Math.min(xb, xMax);
    ctx.fillRect(x0, yCss, x1 - x0, ROW_H - 1);
    if (!merged) {
      if (x1 - x0 >= MIN_LABEL_PX && nameIx >= 0) labels.push(i, x0, x1);
      if (onEvent) onEvent(i, x0, x1);
    }
  });
  ctx.globalAlpha = 1;
  if (decorate) decorate();
  if (labels.length) drawLabels(frame, lane, labels, yCss);
}

/**
 * @param {import('./frame.js').Frame} frame
 * @param {import('../model/lanes.js').Lane} lane
 * @param {number[]} labels flat (index, x0Css, x1Css) triples
 * @param {number} yCss
 */
function drawLabels(frame, lane, labels, yCss) {
  const { ctx, data, widths } = frame;
  ctx.fillStyle = COLORS.textOnFill;
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'left';
  // Labels go left to right; where events of one depth overlap (python_function beside cpu_op),
  // a label stops at the next one's start so texts never overprint.
  for (let j = 0; j < labels.length; j += 3) {
    const x0 = labels[j + 1];
    const x1 = j + 4 < labels.length ? Math.min(labels[j + 2], labels[j + 4]) : labels[j + 2];
    const text = fitLabel(data.names[lane.ev.name[labels[j]]], x1 - x0 - 6, widths);
    if (text) ctx.fillText(text, x0 + 3, yCss + ROW_H / 2);
  }
}
