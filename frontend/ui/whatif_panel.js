// @ts-check
/**
 * "What would it save?": every suggestion's saving (the summary's `savings`, largest first), each with its edits;
 * an edits box (one edit per line, as `kinetoscope whatif --edit` spells them) and the steps it re-times
 * (`whatif?span=&edit=`), recorded beside predicted as bars. Picking a saving puts its edits in the box.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { formatCount, formatDuration, formatShare } from '../model/format.js';
import { SPELLINGS as EDIT_SPELLINGS } from '../model/edits.js';
import { parseEditsText, savingRows, selectionEdits, shareWindow, shareWindowText, sourceText, stepBars } from '../model/savings.js';
import { el, errorText, message, replace } from './dom.js';

// a span's edits (straggler=median re-times a run's ranks: the Ranks panel's)
const SPELLINGS = EDIT_SPELLINGS.filter((s) => s !== 'straggler=median').join(' \u00b7 ');

export class WhatIfPanel {
  /** @param {import('./store.js').Store} store @param {import('../api.js').Api} api */
  constructor(store, api) {
    this.store = store;
    this.api = api;
    this.channel = new LatestChannel();
    this.list = el('div', { class: 'ks-savings' });
    this.box = /** @type {HTMLTextAreaElement} */ (el('textarea', { class: 'ks-edits', rows: 3, spellcheck: false,
      'aria-label': 'edits, one per line', placeholder: 'dataloader=0\nsync:aten::item=0' }));
    this.result = el('div', { class: 'ks-whatif-result' });
    this.selected = el('div', { class: 'ks-whatif-selected' });
    const run = el('button', { type: 'button', onclick: () => this.replay() }, 'Replay');
    this.root = el('section', { class: 'ks-section', dataset: { panel: 'whatif' } }, el('h3', {}, 'What would it save?'),
      el('p', { class: 'ks-hint' }, 'Each suggestion replayed from the trace\u2019s own dependencies with the edit that stands for it; '
        + 'an estimate (README, \u201cWhat would a fix save\u201d).'),
      this.list, this.selected, el('div', { class: 'ks-whatif-edit' }, this.box, run), el('div', { class: 'ks-keys' }, SPELLINGS), this.result);
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if (changed.has('sel') || changed.has('span')) this.showSelected();
      if (changed.has('summary') && store.state.summary) this.showSavings(store.state.summary);
    });
  }

  reset() {
    this.channel.cancel();
    this.list.replaceChildren();
    this.result.replaceChildren();
  }

  /** @param {any} summary */
  showSavings(summary) {
    const rows = savingRows(summary);
    if (!rows.length) {
      this.list.replaceChildren(message('info', 'No suggestion to replay: the trace has no steps, or nothing to edit.'));
      return;
    }
    this.list.replaceChildren(el('p', { class: 'ks-hint' }, `Saved per step: ${shareWindowText(rows[0], formatDuration)}.`),
      el('table', { class: 'ks-table ks-compact' },
      el('thead', {}, el('tr', {}, ['fix', 'from', 'saved per step', 'median step', 'edits', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows.map((r) => el('tr', {},
        el('td', { class: 'ks-name', title: r.fix }, r.fix), el('td', {}, sourceText(r.source)),
        el('td', {}, `${formatDuration(r.savingUs)}${r.share === null ? '' : ` (${formatShare(r.share)})`}`),
        el('td', {}, `${formatDuration(r.beforeUs)} \u2192 ${formatDuration(r.afterUs)}`),
        el('td', { class: 'ks-name', title: r.edits.join('\n') }, r.edits.join(', ')),
        el('td', {}, el('button', { type: 'button', onclick: () => { this.box.value = r.edits.join('\n'); this.replay(); } }, 'Apply')))))));
  }

  /** The selected CPU event's own edits (an op or a Python frame: `host:NAME*0`), each a button that replays it. */
  showSelected() {
    const { sel } = this.store.state;
    const edits = selectionEdits(sel);
    this.selected.replaceChildren(...(edits.length && sel ? [el('span', { class: 'ks-hint' }, 'The selected ',
      el('b', { class: 'ks-name', title: sel.name }, sel.name), ': '),
    ...edits.map((e) => el('button', { type: 'button', title: e.edit,
      onclick: () => { this.box.value = e.edit; this.replay(); } }, e.label))] : []));
  }

  async replay() {
    const { span } = this.store.state;
    if (!span) return;
    const { edits, error } = parseEditsText(this.box.value);
    if (error) {
      this.result.replaceChildren(message('error', error));
      return;
    }
    this.result.replaceChildren(message('info', 'Replaying\u2026'));
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'whatif', { span: span.id, edit: edits }, signal));
      if (r.stale) return;
      this.render(r.value);
    } catch (err) {
      this.result.replaceChildren(message('error', `What-if: ${errorText(err)}`));
    }
  }

  /** @param {any} answer */
  render(answer) {
    if (answer.note) {
      this.result.replaceChildren(message('info', String(answer.note)));
      return;
    }
    const bars = stepBars(answer);
    const matched = Object.entries(answer.matched ?? {}).map(([e, n]) => `${e}: ${formatCount(n)} events`).join('; ');
    const notes = Object.entries(answer.notes ?? {}).map(([e, why]) => `${e}: ${why}`).join('; ');
    replace(this.result,
      el('p', {}, `Median step ${formatDuration(answer.recorded_median_step_us)} recorded, ${formatDuration(answer.median_step_us)} predicted; `
        + `${formatDuration(answer.saving_us)} saved per step${answer.saving_share === null ? '' : ` (${formatShare(answer.saving_share)}; `
        + `${shareWindowText(shareWindow(answer), formatDuration)})`}.`),
      matched ? el('p', { class: 'ks-hint' }, matched) : null,
      notes ? message('info', notes) : null,
      answer.device_behind ? message('warn', `The device takes ${formatDuration(answer.replay_median_step_us)} per step, behind the host: `
        + 'the saving is on the device\u2019s pace.') : null,
      el('div', { class: 'ks-step-bars' }, bars.map((b) => el('div', { class: 'ks-step-bar' },
        el('span', { class: 'ks-step-bar-name', title: b.name }, b.name),
        el('span', { class: 'ks-bars' },
          el('i', { class: 'ks-bar-recorded', style: { width: `${(100 * b.recordedFrac).toFixed(2)}%` }, title: `recorded ${formatDuration(b.recordedUs)}` }),
          el('i', { class: 'ks-bar-predicted', style: { width: `${(100 * b.predictedFrac).toFixed(2)}%` }, title: `predicted ${formatDuration(b.predictedUs)}` })),
        el('span', { class: 'ks-step-bar-value' }, `${formatDuration(b.recordedUs)} \u2192 ${formatDuration(b.predictedUs)}`)))));
  }
}
