// @ts-check
/**
 * The gap table: one device's idle gaps from the `gaps` route, sorted on the server (click the
 * start or duration header), filtered by cause and optionally to the visible window, paged; a click
 * on a row zooms the lanes to that gap. Each gap names its CPU culprit with the annotation around
 * it; the device's top culprits (from the summary) fold above the table.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { GAP_CAUSES, gapSolid } from '../model/colors.js';
import { hasNoDevice } from '../model/devices.js';
import { formatCount, formatDuration, formatTimestamp } from '../model/format.js';
import { causeParam, gapCulprit } from '../model/gaps.js';
import { PANEL_FIGURES } from '../model/health.js';
import { windowAround } from '../model/scale.js';
import { culpritLists } from './culprits.js';
import { el, errorText, message, spanErrorNote } from './dom.js';
import { healthSlot, showHealthNote } from './health_note.js';

const PAGE = 50;

/** The GPU activity that ends gap i (`next_kernel` indexes the page's `names`). @param {string[]} names @param {any} g @param {number} i */
function nextName(names, g, i) {
  const k = Number(g.next_kernel?.[i]);
  return Number.isInteger(k) && k >= 0 && k < names.length ? String(names[k]) : '';
}

export class GapTable {
  /**
   * @param {import('./store.js').Store} store @param {import('../api.js').Api} api
   * @param {() => void} reveal scrolls the lanes into view after a zoom
   */
  constructor(store, api, reveal) {
    this.store = store;
    this.api = api;
    this.reveal = reveal;
    this.channel = new LatestChannel();
    this.sort = '-dur';
    this.offset = 0;
    this.inView = false;
    this.causes = new Set(GAP_CAUSES.map((c) => c.cause));
    /** @type {any[]} */
    this.devices = [];
    this.deviceSel = el('select', { 'aria-label': 'device', onchange: () => this.pickDevice() });
    this.filters = el('span', { class: 'ks-filters' }, GAP_CAUSES.map((c) => el('label', { class: 'ks-cause', title: c.text },
      el('input', { type: 'checkbox', checked: true, dataset: { cause: c.cause }, onchange: (/** @type {Event} */ e) => {
        const box = /** @type {HTMLInputElement} */ (e.target);
        if (box.checked) this.causes.add(c.cause);
        else this.causes.delete(c.cause);
        this.refresh(true);
      } }), el('i', { style: { background: c.solid } }), c.cause)));
    const inView = el('label', {}, el('input', { type: 'checkbox', onchange: (/** @type {Event} */ e) => {
      this.inView = /** @type {HTMLInputElement} */ (e.target).checked;
      this.refresh(true);
    } }), 'in view only');
    this.pager = el('span', { class: 'ks-pager' });
    this.table = el('div', { class: 'ks-table-wrap' });
    this.culprits = el('div', {});
    this.health = healthSlot();
    this.root = el('section', { class: 'ks-section ks-gaps' }, el('h3', {}, 'GPU idle gaps'), this.health,
      el('div', { class: 'ks-toolbar' }, el('label', {}, 'Device ', this.deviceSel), this.filters, inView, this.pager), this.culprits, this.table);
    /** @type {number} */
    this.viewTimer = 0;
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if (changed.has('span') || changed.has('summary')) this.root.hidden = hasNoDevice(store.state.summary); // CPU-only: no GPU gaps
      if (changed.has('summary')) showHealthNote(this.health, store.state.summary, PANEL_FIGURES.gaps);
      if (changed.has('summary') && store.state.summary) this.setDevices(store.state.summary.devices ?? []);
      if (changed.has('spanError') && store.state.spanError) this.table.replaceChildren(spanErrorNote());
      if (changed.has('win') && this.inView) {
        clearTimeout(this.viewTimer);
        this.viewTimer = window.setTimeout(() => this.refresh(true), 250);
      }
    });
  }

  reset() {
    this.channel.cancel();
    this.devices = [];
    this.deviceSel.replaceChildren();
    this.culprits.replaceChildren();
    this.table.replaceChildren(message('info', 'Loading gaps\u2026'));
    this.pager.replaceChildren();
  }

  /** @param {any[]} devices */
  setDevices(devices) {
    this.devices = devices;
    this.deviceSel.replaceChildren(...devices.map((d) => el('option', { value: String(d.device) }, `GPU ${d.device}`)));
    this.deviceSel.disabled = devices.length < 2;
    if (devices.length === 0) this.table.replaceChildren(message('info', 'No GPU activity in this trace: nothing can idle.'));
    else this.pickDevice();
  }

  /** Shows the selected device's top culprits and its first page of gaps. */
  pickDevice() {
    const device = this.devices.find((d) => String(d.device) === this.deviceSel.value);
    const lists = device ? culpritLists(device) : null;
    this.culprits.replaceChildren(...(lists ? [lists] : []));
    this.refresh(true);
  }

  /** @param {boolean} [first] back to the first page */
  async refresh(first) {
    const { span, win } = this.store.state;
    if (!span || this.deviceSel.value === '') return;
    if (first) this.offset = 0;
    if (this.causes.size === 0) {
      this.table.replaceChildren(message('info', 'No cause selected.'));
      this.pager.replaceChildren();
      return;
    }
    const params = { span: span.id, device: this.deviceSel.value, sort: this.sort, offset: this.offset, limit: PAGE,
      cause: causeParam(this.causes),
      start_us: this.inView ? win.t0Us : null, end_us: this.inView ? win.t1Us : null };
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'gaps', params, signal));
      if (!r.stale) this.render(r.value);
    } catch (err) {
      this.table.replaceChildren(message('error', `Gaps: ${errorText(err)}`));
    }
  }

  /** @param {any} body */
  render(body) {
    const g = body.gaps ?? {};
    const n = (g.start_us ?? []).length;
    const names = body.names ?? [];
    /** @param {string} key @param {string} text */
    const sortable = (key, text) => {
      const active = this.sort.replace('-', '') === key;
      const arrow = active ? (this.sort.startsWith('-') ? ' \u25bc' : ' \u25b2') : '';
      return el('th', { class: 'ks-sortable', 'aria-sort': active ? (this.sort.startsWith('-') ? 'descending' : 'ascending') : 'none',
        onclick: () => { this.sort = active && this.sort.startsWith('-') ? key : `-${key}`; this.refresh(true); } }, text + arrow);
    };
    const rows = [];
    for (let i = 0; i < n; i++) {
      const start = g.start_us[i];
      const dur = g.dur_us[i];
      const culprit = gapCulprit(names, g, i);
      rows.push(el('tr', { class: 'ks-clickable', dataset: { startUs: String(start), durUs: String(dur), cause: String(g.cause[i]) },
        onclick: (/** @type {Event} */ e) => this.zoom(/** @type {HTMLElement} */ (e.currentTarget), start, dur) },
        el('td', {}, formatTimestamp(start)), el('td', {}, formatDuration(dur)),
        el('td', {}, el('i', { class: 'ks-swatch', style: { background: gapSolid(g.cause[i]) } }), String(g.cause[i]),
          g.lead?.[i] ? el('span', { class: 'ks-annotation', title: 'idle the verdict judges before the device\'s first activity' },
            ' before its first activity') : null),
        el('td', { class: 'ks-name ks-culprit', title: culprit.label }, culprit.text,
          culprit.annotation ? el('span', { class: 'ks-annotation' }, ` in ${culprit.annotation}`) : null),
        el('td', { class: 'ks-name', title: nextName(names, g, i) }, nextName(names, g, i)),
        el('td', {}, g.launch_us?.[i] === null || g.launch_us?.[i] === undefined ? '\u2013' : formatTimestamp(g.launch_us[i]))));
    }
    this.table.replaceChildren(n === 0 ? message('info', 'No gap matches.') : el('table', { class: 'ks-table' },
      el('thead', {}, el('tr', {}, sortable('start', 'start'), sortable('dur', 'duration'), el('th', {}, 'cause'), el('th', {}, 'CPU culprit'),
        el('th', {}, 'next GPU activity'), el('th', {}, 'its launch'))), el('tbody', {}, rows)));
    this.renderPager(body.total ?? n, n);
  }

  /** @param {number} total @param {number} shown */
  renderPager(total, shown) {
    const prev = el('button', { type: 'button', disabled: this.offset === 0, onclick: () => { this.offset = Math.max(0, this.offset - PAGE); this.refresh(); } }, '\u2039 prev');
    const next = el('button', { type: 'button', disabled: this.offset + shown >= total, onclick: () => { this.offset += PAGE; this.refresh(); } }, 'next \u203a');
    this.pager.replaceChildren(prev, ` ${shown ? formatCount(this.offset + 1) : 0}\u2013${formatCount(this.offset + shown)} of ${formatCount(total)} `, next);
  }

  /** @param {HTMLElement} row @param {number} start @param {number} dur */
  zoom(row, start, dur) {
    for (const other of this.table.querySelectorAll('tr.ks-active')) other.classList.remove('ks-active');
    row.classList.add('ks-active');
    this.store.set({ win: windowAround(start, start + dur, 0.5, this.store.state.bounds) });
    this.reveal();
  }
}
