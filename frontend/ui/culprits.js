// @ts-check
/**
 * The top culprits of one device (from the summary): what the CPU was running during the most
 * idle time of host gaps, which synchronizing call (in which op) drained the GPU, and what the host
 * ran while waiting on a collective; each with the user annotation around it. Folded by default.
 */
import { formatDuration } from '../model/format.js';
import { culpritGroups } from '../model/gaps.js';
import { el } from './dom.js';

/**
 * The culprit lists of `device` (one of `summary.devices`), or null when it has none.
 * @param {any} device
 * @returns {HTMLElement | null}
 */
export function culpritLists(device) {
  const groups = culpritGroups(device);
  if (groups.length === 0) return null;
  return el('details', { class: 'ks-culprits' },
    el('summary', {}, `Top CPU culprits of GPU ${device.device}: `, groups.map((g) => `${g.title} (${g.rows.length})`).join(', ')),
    groups.map((g) => el('div', { class: 'ks-culprit-group', dataset: { list: g.key } }, el('h4', { title: g.hint }, `Top culprits (${g.title})`),
      el('table', { class: 'ks-table ks-compact' },
        el('thead', {}, el('tr', {}, el('th', {}, 'CPU op'), el('th', {}, 'in annotation'), el('th', {}, 'idle caused'))),
        el('tbody', {}, g.rows.map((r) => el('tr', {},
          el('td', { class: 'ks-name', title: r.label }, r.text), el('td', { class: 'ks-name ks-annotation', title: r.annotation }, r.annotation || '\u2013'),
          el('td', {}, formatDuration(r.idleUs)))))))));
}
