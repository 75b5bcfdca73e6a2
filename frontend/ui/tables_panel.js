// @ts-check
/**
 * The Tables panel: the operator, kernel and module tables (`tables` route) for the whole span or the area
 * selected in the lanes (Shift+drag; it lives in the link), sorted on the server by a click on a column,
 * filtered by name and paged; and the search box over op and kernel names (`search` route) with "n of m",
 * next/previous, which jumps the lanes to each occurrence and selects it.
 */
import { LatestChannel } from '../api.js';
import { getWhenReady } from '../loading.js';
import { formatBytes, formatCount, formatDuration, formatNumber, formatShare, formatTimestamp } from '../model/format.js';
import { PANEL_FIGURES } from '../model/health.js';
import { windowShowing } from '../model/scale.js';
import { ANNOTATION_SCOPES, ANNOTATION_SIDES, EXTRA_TABS, KERNEL_SPLITS, OP_COLUMN, extraColumns, extraDefaultSort, launchersText,
  treeParents, visibleTreeRows } from '../model/extra_tables.js';
import { OP_GROUPS, defaultSort, nameTitle, nextSort, searchLabel, searchStep, tableColumns } from '../model/tables.js';
import { el, errorText, message, spanErrorNote } from './dom.js';
import { WholeName } from './full_name.js';
import { healthSlot, showHealthNote } from './health_note.js';

const PAGE = 50;
const TREE_PAGE = 500; // module-tree nodes per page (the route's most): expand and collapse need no request
/** @type {Record<string, string>} */
const TAB_LABELS = { op: 'Operators', kernel: 'Kernels', module: 'Modules', ...EXTRA_TABS };
const SEARCH_PAGE = 100;
/** A search hit is shown at least this wide on the lanes: a 1 px outline from the whole-trace view is not found by eye. */
const SEARCH_HIT_PX = 40;
const FILTER_DELAY_MS = 250;
/** The figures each table shows (model/health.js PANEL_FIGURES). @type {Record<string, string[]>} */
const TABLE_FIGURES = { op: PANEL_FIGURES.opTable, kernel: PANEL_FIGURES.kernelTable, module: PANEL_FIGURES.moduleTable,
  module_tree: PANEL_FIGURES.moduleTable, memory: PANEL_FIGURES.opTable, annotation: PANEL_FIGURES.opTable, sequences: PANEL_FIGURES.kernelTable };

export class TablesPanel {
  /**
   * @param {import('./store.js').Store} store @param {import('../api.js').Api} api
   * @param {(row: number) => void} selectRow selects an event row (details, outline) @param {() => void} reveal
   * @param {() => number} [plotWidth] the lanes' plot width (CSS px): a search hit is zoomed to SEARCH_HIT_PX of it
   */
  constructor(store, api, selectRow, reveal, plotWidth = () => 1000) {
    this.store = store;
    this.api = api;
    this.selectRow = selectRow;
    this.reveal = reveal;
    this.plotWidth = plotWidth;
    this.channel = new LatestChannel();
    this.searchChannel = new LatestChannel();
    this.by = 'op';
    this.sort = defaultSort('op');
    this.offset = 0;
    this.filter = '';
    this.filterTimer = 0;
    /** @type {{query: string, total: number, n: number, offset: number, hits: any, names: string[]}} */
    this.search = { query: '', total: 0, n: -1, offset: 0, hits: null, names: [] };
    this.tabs = el('div', { class: 'ks-tabs', role: 'tablist' }, Object.keys(TAB_LABELS).map((by) => el('button', {
      class: 'ks-tab', role: 'tab', dataset: { by }, onclick: () => this.show(by) }, TAB_LABELS[by])));
    /** @type {Set<number>} module-tree nodes collapsed by a click */
    this.collapsed = new Set();
    /** @type {any} */
    this.body = null;
    this.options = { split: 'name', side: 'gpu', scope: 'all', root: '' };
    this.filterInput = el('input', { class: 'ks-filter', type: 'search', placeholder: 'filter by name', 'aria-label': 'filter the table by name',
      oninput: () => { clearTimeout(this.filterTimer); this.filterTimer = window.setTimeout(() => this.setFilter(this.filterInput.value), FILTER_DELAY_MS); } });
    this.group = 'name';
    this.groupSelect = el('select', { class: 'ks-op-group', 'aria-label': 'group the operator table',
      onchange: () => { this.group = this.groupSelect.value; this.offset = 0; this.load(); } },
    OP_GROUPS.map((g) => el('option', { value: g.value, title: g.title }, g.label)));
    this.stackBox = el('label', { class: 'ks-hint' }, 'Group ', this.groupSelect);
    this.splitBox = el('label', { class: 'ks-hint' }, 'Rows ', this.optionSelect('split', KERNEL_SPLITS, 'split the kernel rows'));
    this.annotationBox = el('span', { class: 'ks-hint' }, this.optionSelect('side', ANNOTATION_SIDES, 'annotation ranges'),
      ' ', this.optionSelect('scope', ANNOTATION_SCOPES, 'which annotations'));
    this.rootInput = el('input', { class: 'ks-sequence-root', type: 'search', placeholder: 'under one op (HTA\u2019s patterns)',
      'aria-label': 'count the GPU work of the shallowest calls of an op name instead',
      onchange: () => { this.options.root = this.rootInput.value.trim().slice(0, 200); this.offset = 0; this.load(); } });
    this.sequencesBox = el('span', { class: 'ks-hint' }, this.rootInput);
    this.scope = el('div', { class: 'ks-hint ks-tables-scope' });
    /** a cut name shown whole, on demand (the `name` route) */
    this.wholeName = new WholeName(store, api);
    this.health = healthSlot();
    this.table = el('div', { class: 'ks-table-wrap' });
    this.pager = el('div', { class: 'ks-pager' });
    this.searchInput = el('input', { class: 'ks-search', type: 'search', placeholder: 'find an op or kernel in the lanes', 'aria-label': 'search op and kernel names',
      onkeydown: (/** @type {KeyboardEvent} */ e) => { if (e.key === 'Enter') { e.preventDefault(); this.find(this.searchInput.value, e.shiftKey ? -1 : 1); } } });
    this.searchCount = el('span', { class: 'ks-search-count', 'aria-live': 'polite' });
    // The page puts the search bar above the lanes it searches: the "n of m" counter stays in view while hits are zoomed to.
    this.searchBar = el('div', { class: 'ks-search-bar' }, this.searchInput,
      el('button', { class: 'ks-search-prev', title: 'previous (Shift+Enter)', onclick: () => this.find(this.searchInput.value, -1) }, '\u25b2'),
      el('button', { class: 'ks-search-next', title: 'next (Enter)', onclick: () => this.find(this.searchInput.value, 1) }, '\u25bc'), this.searchCount);
    this.root = el('section', { class: 'ks-section ks-tables' }, el('h3', {}, 'Tables'),
      el('div', { class: 'ks-tables-bar' }, this.tabs, this.filterInput, this.stackBox, this.splitBox, this.annotationBox, this.sequencesBox), this.health, this.scope, this.wholeName.root, this.table, this.pager);
    store.subscribe((changed) => {
      if (changed.has('span')) this.reset();
      if ((changed.has('summary') || changed.has('area')) && store.state.summary) {
        this.offset = 0;
        this.load();
      }
      if (changed.has('spanError') && store.state.spanError) this.table.replaceChildren(spanErrorNote());
    });
    this.markTabs();
  }

  /**
   * A select of one table option (`split`, `side`, `scope`): a change reloads from the first page.
   * @param {'split' | 'side' | 'scope'} key @param {{value: string, label: string, title?: string}[]} choices @param {string} label
   */
  optionSelect(key, choices, label) {
    const select = el('select', { class: `ks-table-${key}`, 'aria-label': label,
      onchange: () => { this.options[key] = select.value; this.offset = 0; this.load(); } },
    choices.map((c) => el('option', { value: c.value, title: c.title }, c.label)));
    return select;
  }

  reset() {
    this.collapsed.clear();
    this.channel.cancel();
    this.searchChannel.cancel();
    this.wholeName.hide();
    this.search = { query: '', total: 0, n: -1, offset: 0, hits: null, names: [] };
    this.searchCount.textContent = '';
    this.health.replaceChildren();
    this.table.replaceChildren(message('info', 'Loading tables\u2026'));
  }

  /** @param {string} by */
  show(by) {
    this.by = by;
    this.sort = extraColumns(by) ? extraDefaultSort(by) : defaultSort(by);
    this.offset = 0;
    this.collapsed.clear();
    this.markTabs();
    this.load();
  }

  markTabs() {
    for (const tab of this.tabs.children) tab.setAttribute('aria-selected', String(/** @type {HTMLElement} */ (tab).dataset.by === this.by));
    this.stackBox.style.display = this.by === 'op' ? '' : 'none';
    this.splitBox.style.display = this.by === 'kernel' ? '' : 'none';
    this.annotationBox.style.display = this.by === 'annotation' ? '' : 'none';
    this.sequencesBox.style.display = this.by === 'sequences' ? '' : 'none';
  }

  /** @param {string} text */
  setFilter(text) {
    this.filter = text.trim();
    this.offset = 0;
    this.load();
  }

  async load() {
    const { span, area } = this.store.state;
    if (!span || !this.store.state.summary) return;
    if (!this.withDevice() && this.sort === defaultSort(this.by)) this.sort = defaultSort(this.by, false);
    showHealthNote(this.health, this.store.state.summary, TABLE_FIGURES[this.by] ?? PANEL_FIGURES.kernelTable);
    /** @type {Record<string, string | number>} */
    const params = { span: span.id, by: this.by, offset: this.offset, limit: this.by === 'module_tree' ? TREE_PAGE : PAGE };
    if (this.sort) params.sort = this.sort;
    if (this.filter) params.filter = this.filter;
    if (this.by === 'op' && this.group !== 'name') params.group = this.group;
    if (this.by === 'kernel' && this.options.split !== 'name') params.split = this.options.split;
    if (this.by === 'annotation') Object.assign(params, { side: this.options.side, scope: this.options.scope });
    if (this.by === 'sequences' && this.options.root) Object.assign(params, { root: this.options.root, min_len: 1 });
    if (area) Object.assign(params, { start_us: area.t0Us, end_us: area.t1Us });
    this.scope.replaceChildren(...(area
      ? [`Selected area ${formatTimestamp(area.t0Us)} \u2013 ${formatTimestamp(area.t1Us)} (${formatDuration(area.t1Us - area.t0Us)}) `,
        el('button', { class: 'ks-link ks-clear-area', onclick: () => this.store.set({ area: null }) }, 'show the whole trace')]
      : ['Whole trace. Shift+drag in the lanes to see only an area.']));
    try {
      const r = await this.channel.run((signal) => getWhenReady(this.api, 'tables', params, signal));
      if (r.stale) return;
      this.render(r.value);
    } catch (err) {
      this.table.replaceChildren(message('error', `Tables: ${errorText(err)}`));
    }
  }

  /** Whether the trace on screen has device activity (its summary lists devices). */
  withDevice() {
    const devices = this.store.state.summary?.devices;
    return !Array.isArray(devices) || devices.length > 0;
  }

  /** @param {any} body */
  render(body) {
    this.body = body;
    let columns = extraColumns(this.by, body.totals) ?? tableColumns(this.by, body.group, this.withDevice());
    if (this.by === 'kernel' && body.split === 'op_launch') columns = [columns[0], OP_COLUMN, ...columns.slice(1)];
    this.table.dataset.window = body.window ? `${body.window.start_us},${body.window.end_us}` : '';
    if (!body.rows.length) {
      this.table.replaceChildren(message('info', this.filter ? `No ${this.by} names contain \u201c${this.filter}\u201d here.`
        : this.by === 'module' || this.by === 'module_tree' ? 'No nn.Module regions in this trace (profile with with_stack=True or with_modules=True).'
          : this.by === 'memory' ? 'No memory events inside ops here (profile with profile_memory=True).'
            : this.by === 'annotation' ? 'No user annotations of this kind here (record_function ranges).'
              : this.by === 'sequences' ? 'No kernel sequence recurs here.' : `No ${this.by}s here.`));
      this.pager.replaceChildren();
      return;
    }
    const head = columns.map((c) => el('th', { class: c.sort ? 'ks-sortable' : '', title: c.title, dataset: { sort: c.sort },
      'aria-sort': c.sort && this.sort.replace(/^-/, '') === c.sort ? (this.sort.startsWith('-') ? 'descending' : 'ascending') : 'none',
      onclick: () => { const s = nextSort(this.sort, c); if (s !== this.sort) { this.sort = s; this.offset = 0; this.load(); } } }, c.head));
    const shown = this.by === 'module_tree' ? visibleTreeRows(body.rows, this.collapsed).map((i) => body.rows[i]) : body.rows;
    const parents = this.by === 'module_tree' ? treeParents(body.rows) : new Set();
    const rows = shown.map((/** @type {any} */ row) => el('tr', { dataset: { name: row.name, ...(row.name_key ? { nameKey: row.name_key } : {}) } },
      columns.map((c) => el('td', { dataset: { col: c.key },
        title: c.key === 'name' ? nameTitle(row) : c.kind === 'text' || c.kind === 'tree' ? row[c.key] : undefined },
        c.kind === 'tree' ? this.treeCell(row, parents.has(row.index))
          : c.key === 'name' && typeof row.name_key === 'string' ? [this.wholeName.button(row.name_key), ' ', cell(c, row[c.key])]
            : cell(c, row[c.key])))));
    this.table.replaceChildren(el('table', { class: 'ks-table ks-profiler-table', dataset: { by: this.by } },
      el('thead', {}, el('tr', {}, head)), el('tbody', {}, rows)));
    const last = Math.min(body.total, this.offset + body.rows.length);
    this.pager.replaceChildren(`${formatCount(this.offset + 1)}\u2013${formatCount(last)} of ${formatCount(Number(body.total))} `,
      el('button', { disabled: this.offset === 0, onclick: () => { this.offset = Math.max(0, this.offset - PAGE); this.load(); } }, 'previous'),
      el('button', { disabled: last >= body.total, onclick: () => { this.offset += PAGE; this.load(); } }, 'next'));
  }

  /** A module-tree name: indented by depth, with a toggle where the node has children. @param {any} row @param {boolean} hasChildren */
  treeCell(row, hasChildren) {
    const open = !this.collapsed.has(row.index);
    const toggle = hasChildren
      ? el('button', { class: 'ks-link ks-tree-toggle', 'aria-expanded': String(open), title: open ? 'collapse' : 'expand',
        onclick: () => { if (open) this.collapsed.add(row.index); else this.collapsed.delete(row.index); this.render(this.body); } }, open ? '\u25be' : '\u25b8')
      : el('span', { class: 'ks-tree-leaf' }, '\u00a0\u00a0');
    return el('span', { class: 'ks-tree-name', style: { paddingLeft: `${1.2 * Number(row.depth)}em` } }, toggle, ' ', String(row.name));
  }

  /** Steps to the next (1) or previous (-1) occurrence of `text`, asking the server for the hits when needed. @param {string} text @param {number} delta */
  async find(text, delta) {
    const { span } = this.store.state;
    const query = text.trim();
    if (!span || !query) return;
    try {
      const fresh = query !== this.search.query;
      if (fresh) await this.fetchHits(query, 0);
      // A new query starts at the first hit (next) or the last (previous); then each step moves by one.
      const step = searchStep(fresh ? (delta > 0 ? -1 : 0) : this.search.n, delta, this.search.total,
        { offset: this.search.offset, count: this.search.hits?.row.length ?? 0, limit: SEARCH_PAGE });
      if (step.fetchOffset !== null) await this.fetchHits(query, step.fetchOffset);
      this.search.n = step.n;
      this.searchCount.textContent = searchLabel(step.n, this.search.total);
      this.searchCount.dataset.n = String(step.n);
      this.searchCount.dataset.total = String(this.search.total);
      if (step.n >= 0) this.jump(step.n - this.search.offset);
    } catch (err) {
      if (errorText(err) !== 'superseded') this.searchCount.textContent = `search failed: ${errorText(err)}`;
    }
  }

  /** @param {string} query @param {number} offset */
  async fetchHits(query, offset) {
    const { span } = this.store.state;
    if (!span) return;
    const r = await this.searchChannel.run((signal) => getWhenReady(this.api, 'search', { span: span.id, q: query, offset, limit: SEARCH_PAGE }, signal));
    if (r.stale) throw new Error('superseded');
    this.search = { ...this.search, query, total: Number(r.value.total), offset, hits: r.value.hits, names: r.value.names };
  }

  /** Zooms the lanes around hit `i` of the loaded page and selects it. @param {number} i */
  jump(i) {
    const h = this.search.hits;
    if (!h || i < 0 || i >= h.row.length) return;
    const startUs = Number(h.start_us[i]);
    const endUs = startUs + Math.max(Number(h.dur_us[i]), 0.001);
    const { win, bounds } = this.store.state;
    const to = windowShowing(win, bounds, startUs, endUs, this.plotWidth(), SEARCH_HIT_PX);
    if (to !== win) this.store.set({ win: to });
    this.selectRow(Number(h.row[i]));
    this.reveal();
  }
}

/**
 * @param {import('../model/tables.js').TableColumn} column @param {any} value
 * @returns {import('./dom.js').Child | import('./dom.js').Child[]}
 */
function cell(column, value) {
  switch (column.kind) {
    case 'dur': return formatDuration(Number(value));
    case 'count': return formatCount(Number(value));
    case 'share': return [el('span', { class: 'ks-bar' }, el('span', { style: { width: `${Math.min(100, 100 * (Number(value) || 0))}%` } })), formatShare(value)];
    case 'flag': return value ? 'yes' : '';
    case 'bytes': return value === null || value === undefined ? '' : formatBytes(Number(value));
    case 'number': return value === null || value === undefined ? '' : formatNumber(Number(value));
    case 'launchers': return launchersText(value, formatDuration);
    default: return String(value ?? '');
  }
}
