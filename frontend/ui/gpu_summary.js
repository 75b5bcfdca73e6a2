// @ts-check
/**
 * The overview's GPU-summary block: each device and torch-tb-profiler's figures (model/gpu_summary.js),
 * folded under a one-line summary of the first device. Every trace string goes in as text.
 */
import { gpuSummaryRows } from '../model/gpu_summary.js';
import { el } from './dom.js';

/**
 * The block, or null when no device ran a kernel.
 * @param {any} summary the `summary` answer
 */
export function gpuSummaryBlock(summary) {
  const rows = gpuSummaryRows(summary);
  if (rows.length === 0) return null;
  const first = rows[0].figures[0];
  return el('details', { class: 'ks-gpu-summary' },
    el('summary', { title: first.title }, `GPU summary (torch-tb-profiler's definitions): ${rows[0].heading}, ${first.label} ${first.value}`),
    rows.map((r) => el('div', { class: 'ks-gpu', dataset: { device: r.device } }, el('b', {}, r.heading),
      el('ul', {}, r.figures.map((f) => el('li', { title: f.title, dataset: { figure: f.key } }, `${f.label}: ${f.value}`))))));
}
