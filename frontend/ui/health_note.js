// @ts-check
/**
 * The small line a panel shows under its heading when a trace-health warning makes one of its figures
 * unreliable (`model/health.js figureWarning`): text only, empty when nothing affects the panel.
 */
import { figureWarning } from '../model/health.js';
import { el } from './dom.js';

/**
 * An empty slot for the note, placed under a panel's heading.
 * @returns {HTMLElement}
 */
export function healthSlot() {
  return el('div', { class: 'ks-panel-health' });
}

/**
 * Fills `slot` with the note for `figures` of `summary` ('\u26a0 unreliable: ...'), or empties it.
 * @param {HTMLElement} slot from healthSlot @param {any} summary the `summary` answer, or null (empties)
 * @param {string[]} figures keys of model/health.js FIGURE_NAMES (see PANEL_FIGURES)
 */
export function showHealthNote(slot, summary, figures) {
  const text = summary ? figureWarning(summary.health, figures) : null;
  slot.replaceChildren(...(text ? [el('div', { class: 'ks-unreliable', dataset: { figure: figures.join(' ') } }, `\u26a0 ${text}`)] : []));
}
