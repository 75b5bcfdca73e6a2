// @ts-check
/**
 * The Ranks panel of a distributed run (two workers or more): the stragglers first, then a per-rank
 * table and a rank x step heatmap of step time or wait. Clicking a rank opens its trace. Polls
 * `ranks?run=` while ranks of the run are still loading; hidden for single-rank runs.
 */
import { formatDuration } from '../model/format.js';
import { independentText } from '../model/health.js';
import { RANK_COLUMNS, clockText, groupRows, heatStyle, heatmap, ranksSummary, stragglerSavingText, stragglerText } from '../model/ranks.js';
import { el, errorText, message } from './dom.js';
import { RunVerdictPoller } from './run_verdict.js';

export class RanksPanel {
  /**
   * @param {import('../api.js').Api} api
   * @param {(run: string, worker: string, spanId: string | null) => void} open opens a rank's trace
   */
  constructor(api, open) {
    this.open = open;
    /** @type {'step' | 'wait'} */
    this.metric = 'wait';
    /** @type {any} */
    this.view = null;
    /** @type {string | null} */
    this.run = null;
    this.summary = el('div', { class: 'ks-hint' });
    this.stragglers = el('div', { class: 'ks-stragglers' });
    this.table = el('div', { class: 'ks-table-wrap' });
    const pickMetric = (/** @type {'step' | 'wait'} */ metric) => { this.metric = metric; this.render(); };
    this.metricButtons = {
      wait: el('button', { type: 'button', onclick: () => pickMetric('wait') }, 'wait'),
      step: el('button', { type: 'button', onclick: () => pickMetric('step') }, 'step time'),
    };
    this.heat = el('div', { class: 'ks-table-wrap ks-heat' });
    this.groups = el('div', { class: 'ks-groups' });
    this.root = el('section', { class: 'ks-section ks-ranks', hidden: true },
      el('h3', {}, 'Ranks'), this.stragglers, this.summary, this.table, this.groups,
      el('div', { class: 'ks-heat-head' }, 'Rank \u00d7 step: ', this.metricButtons.wait, ' ', this.metricButtons.step), this.heat);
    this.poller = new RunVerdictPoller(api, (answer) => {
      if (answer?.run !== this.run) return;
      this.view = answer.view;
      this.alone = independentText(answer);
      this.pending = Number(answer.pending) || 0;
      this.render();
    }, (err) => this.table.replaceChildren(message('error', `Ranks: ${errorText(err)}`)), { route: 'ranks' });
    this.pending = 0;
    /** @type {string} why the run has no ranks view (independent profiles), or '' */
    this.alone = '';
  }

  /** Shows the panel for a multi-rank run (polling its view), or hides it. @param {string | null} run */
  show(run) {
    if (run === this.run) return;
    this.run = run;
    this.view = null;
    this.root.hidden = run === null;
    if (run === null) {
      this.poller.stop();
      return;
    }
    this.stragglers.replaceChildren();
    this.groups.replaceChildren();
    this.summary.replaceChildren();
    this.heat.replaceChildren();
    this.table.replaceChildren(message('info', 'Loading the ranks\u2026'));
    this.poller.start(run);
  }

  render() {
    const view = this.view;
    if (!view) {
      const idle = this.alone ? this.alone : 'No two traces of this run are ranks of one job.';
      this.table.replaceChildren(message('info', this.pending ? `Loading the ranks (${this.pending} to go)\u2026` : idle));
      return;
    }
    const saving = stragglerSavingText(view);
    this.stragglers.replaceChildren(...(view.stragglers ?? []).map((/** @type {any} */ s) => message('warn', stragglerText(s))),
      ...(saving ? [el('p', { class: 'ks-straggler-saving' }, saving)] : []));
    this.summary.replaceChildren(ranksSummary(view, this.pending));
    const head = el('tr', {}, RANK_COLUMNS.map((c) => el('th', { title: c.title }, c.label)));
    const rows = (view.ranks ?? []).map((/** @type {any} */ r) => el('tr', {
      class: 'ks-clickable', title: `open ${r.worker}`, dataset: { rank: String(r.rank) },
      onclick: () => this.run && this.open(this.run, r.worker, r.id ?? null),
    }, RANK_COLUMNS.map((c) => el('td', {}, c.show(r)))));
    this.table.replaceChildren(el('table', { class: 'ks-table' }, el('thead', {}, head), el('tbody', {}, rows)));
    this.renderGroups(view);
    for (const [metric, button] of Object.entries(this.metricButtons)) button.setAttribute('aria-pressed', String(metric === this.metric));
    const cells = heatmap(view, this.metric);
    const heatHead = el('tr', {}, el('th', {}, 'rank'), cells.steps.map((s) => el('th', {}, `#${s}`)));
    const heatRows = cells.rows.map((row) => el('tr', {},
      el('th', { class: 'ks-clickable', onclick: () => this.run && this.open(this.run, row.worker, row.id) }, `${row.rank}`),
      row.cells.map((c) => el('td', {
        class: c.value === null ? 'ks-heat-cell ks-heat-none' : 'ks-heat-cell', title: c.value === null ? 'no such step' : formatDuration(c.value),
        style: c.value === null ? {} : heatStyle(c.frac),
      }, c.value === null ? '' : formatDuration(c.value)))));
    this.heat.replaceChildren(el('table', { class: 'ks-table ks-heat-table' }, el('thead', {}, heatHead), el('tbody', {}, heatRows)));
  }

  /** The process groups (collectives matched by group and sequence number), their health items and the clocks. @param {any} view */
  renderGroups(view) {
    const rows = groupRows(view);
    const health = (Array.isArray(view.group_health) ? view.group_health : []).map((/** @type {any} */ h) => message('warn', String(h.found)));
    const clocks = clockText(view);
    const table = rows.length < 2 ? [] : [el('p', { class: 'ks-hint' }, 'Process groups (collectives matched by group and sequence number):'),
      el('div', { class: 'ks-table-wrap' }, el('table', { class: 'ks-table ks-compact' },
        el('thead', {}, el('tr', {}, ['group', 'name', 'ranks', 'collectives', 'matched', 'median skew', 'waited for'].map((h) => el('th', {}, h)))),
        el('tbody', {}, rows.map((g) => el('tr', { dataset: { group: g.name } }, [g.desc, g.name, g.ranks, String(g.collectives), String(g.matched),
          g.skew, g.waitedFor].map((v) => el('td', {}, v)))))))];
    this.groups.replaceChildren(...table, ...health, ...(clocks ? [el('p', { class: 'ks-hint ks-clocks' }, clocks)] : []));
  }
}
