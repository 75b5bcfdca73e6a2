// @ts-check
/**
 * The header: run / worker / span selectors (refilled in place as the listing refreshes), the load
 * state of the selected trace (with progress while it loads), a notice when its file is gone, and
 * the verdict with its evidence and suggestion.
 */
import { formatDuration, formatShare } from '../model/format.js';
import { GONE, spanLabel } from '../model/runs.js';
import { append, el, message } from './dom.js';

export class Header {
  /**
   * @param {(run: string, worker: string, spanId: string | null) => void} onPick called when a selector changes
   */
  constructor(onPick) {
    this.onPick = onPick;
    /** @type {any[]} */
    this.runs = [];
    this.runSel = el('select', { 'aria-label': 'run', onchange: () => this.onPick(this.runSel.value, '', null) });
    this.workerSel = el('select', { 'aria-label': 'worker', onchange: () => this.onPick(this.runSel.value, this.workerSel.value, null) });
    this.spanSel = el('select', { 'aria-label': 'span', onchange: () => this.onPick(this.runSel.value, this.workerSel.value, this.spanSel.value) });
    this.status = el('span', { class: 'ks-status', 'aria-live': 'polite' });
    this.actions = el('span', { class: 'ks-actions' });
    this.notice = el('div', { class: 'ks-notice' });
    this.verdict = el('div', { class: 'ks-verdict' });
    this.root = el('header', { class: 'ks-header' },
      el('div', { class: 'ks-pickers' }, el('b', { class: 'ks-title' }, 'Kinetoscope'),
        el('label', {}, 'Run ', this.runSel), el('label', {}, 'Worker ', this.workerSel), el('label', {}, 'Span ', this.spanSel),
        this.status, this.actions),
      this.notice, this.verdict);
  }

  /**
   * Refills the selectors (a `runs` listing) and selects run/worker/span; options that did not
   * change are left alone, so a refresh does not disturb a selector the user is using.
   * @param {import('../model/runs.js').RunInfo[]} runs @param {{run: string, worker: string, id: string}} current
   */
  setRuns(runs, current) {
    this.runs = runs;
    const run = runs.find((r) => r.name === current.run);
    const worker = run?.workers.find((w) => w.name === current.worker);
    fill(this.runSel, runs.map((r) => [r.name, r.name]), current.run);
    fill(this.workerSel, (run?.workers ?? []).map((w) => [w.name, w.name]), current.worker);
    fill(this.spanSel, (worker?.spans ?? []).map((s) => [s.id, spanLabel(s)]), current.id);
  }

  /**
   * Says whether the span on screen is gone from the logdir (notice and state); `listed` is its
   * entry in the listing shown.
   * @param {import('../model/runs.js').SpanInfo | null} listed
   */
  setListed(listed) {
    const gone = listed?.state === GONE;
    if (gone === Boolean(this.notice.firstChild)) return;
    this.notice.replaceChildren(...(gone ? [message('warn', 'The file of this span is no longer in the logdir: '
      + 'what was loaded stays on screen, but new windows and details of it cannot load.')] : []));
    this.setStatus(listed);
  }

  /**
   * Shows the load state of the selected span.
   * @param {{state: string, phase?: string, progress?: number | null, error?: string | null} | null} st
   */
  setStatus(st) {
    if (!st) {
      this.status.replaceChildren();
      return;
    }
    const progress = st.state === 'loading' && typeof st.progress === 'number'
      ? el('progress', { max: 1, value: st.progress, title: formatShare(st.progress) }) : null;
    const label = st.state === 'loading' && typeof st.progress === 'number'
      ? `loading${st.phase ? ` (${st.phase})` : ''} ${formatShare(st.progress)}` : st.state;
    this.status.replaceChildren(el('span', { class: `ks-state ks-state-${st.state}`, dataset: { state: st.state } }, label));
    if (progress) this.status.append(progress);
    this.status.title = st.error ?? '';
  }

  /** Shows the verdict of a summary (null: nothing yet), or an error message. @param {any} summary @param {string | null} error */
  setVerdict(summary, error) {
    if (error) {
      this.verdict.replaceChildren(message('error', error));
      return;
    }
    if (!summary) {
      this.verdict.replaceChildren(message('info', 'Loading the trace\u2026'));
      return;
    }
    const v = summary.verdict ?? {};
    this.verdict.replaceChildren();
    const devices = (summary.devices ?? []).map((/** @type {any} */ d) => el('span', { class: 'ks-chip' },
      `GPU ${d.device}: idle ${Number(d.idle_pct).toFixed(1)}% of ${formatDuration(d.window_us)}`));
    const warnings = (summary.warnings ?? []).length
      ? el('details', { class: 'ks-warnings' }, el('summary', {}, `${summary.warnings.length} loader warning(s)`),
        el('ul', {}, summary.warnings.map((/** @type {any} */ w) => el('li', {}, typeof w === 'string' ? w : JSON.stringify(w)))))
      : null;
    append(this.verdict,
      el('div', { class: 'ks-verdict-line' }, el('span', { class: 'ks-bound', dataset: { bound: String(v.bound ?? '') } }, String(v.bound ?? 'no verdict')),
        el('span', { class: 'ks-evidence' }, String(v.evidence ?? ''))),
      v.suggestion ? el('div', { class: 'ks-suggestion' }, el('b', {}, 'Suggestion: '), String(v.suggestion)) : null,
      el('div', { class: 'ks-chips' }, el('span', { class: 'ks-chip' }, `${formatDuration(summary.duration_us)} \u00b7 ${summary.events} events`), devices),
      warnings);
  }

  /** Refreshes the span labels (their states) without touching the selection. @param {Map<string, any>} byId */
  updateStates(byId) {
    for (const option of this.spanSel.options) {
      const st = byId.get(option.value);
      const run = this.runs.find((r) => r.name === this.runSel.value);
      const span = run?.workers.flatMap((/** @type {any} */ w) => w.spans).find((/** @type {any} */ s) => s.id === option.value);
      if (st && span) option.textContent = spanLabel({ ...span, state: st.state });
    }
  }
}

/**
 * @param {HTMLSelectElement} select @param {[string, string][]} options value, text
 * @param {string} value
 */
function fill(select, options, value) {
  const same = select.options.length === options.length
    && options.every(([v, text], i) => select.options[i].value === v && select.options[i].textContent === text);
  if (!same) select.replaceChildren(...options.map(([v, text]) => el('option', { value: v, selected: v === value }, text)));
  if (select.value !== value) select.value = value;
  select.disabled = options.length < 2;
}
