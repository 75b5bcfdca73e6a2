// @ts-check
/**
 * The header: run / worker / span selectors (refilled in place as the listing refreshes), the load
 * state of the selected trace (with progress while it loads), a notice when its file is gone, and
 * the verdicts (ui/verdict_view.js): the run's above the span's. Only its first line (`root`: the selectors, the
 * state and the buttons) is sticky; the verdicts below it (`more`) scroll away with the page, so however long a
 * verdict is, the header pinned over the panels is one line, and it then carries the verdict's brief. Folded, the
 * header is that line alone, its verdict cut to the bound, its share and the top saving (a short window starts
 * folded, so the lanes stay in view on a 1280x800 laptop).
 */
import { formatShare } from '../model/format.js';
import { GONE, spanLabel } from '../model/runs.js';
import { savingRows } from '../model/savings.js';
import { spanVerdict, verdictBrief } from '../model/verdict.js';
import { el, message } from './dom.js';
import { verdictNodes } from './verdict_view.js';

/** Windows this short (CSS px) open with the header folded: unfolded, the verdict would take a third of them. */
export const FOLD_BELOW_HEIGHT = 900;

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
    this.brief = el('span', { class: 'ks-brief' });
    this.foldButton = el('button', { type: 'button', class: 'ks-header-fold', onclick: () => this.setFolded(!this.folded) });
    this.folded = false;
    /** @type {any} the summary whose verdict is shown */
    this.summary = null;
    /** @type {any} the `verdict?run=` answer of its run */
    this.runAnswer = null;
    this.root = el('header', { class: 'ks-header' },
      el('div', { class: 'ks-pickers' }, el('b', { class: 'ks-title' }, 'Kinetoscope'),
        el('label', {}, 'Run ', this.runSel), el('label', {}, 'Worker ', this.workerSel), el('label', {}, 'Span ', this.spanSel),
        this.status, this.brief, this.foldButton, this.actions));
    this.more = el('div', { class: 'ks-header-more' }, this.notice, this.verdict);
    /** whether the verdicts below the sticky line have scrolled out of view (the line then shows the brief) */
    this.stuck = false;
    if (typeof IntersectionObserver !== 'undefined') {
      new IntersectionObserver(([entry]) => this.setStuck(!entry.isIntersecting)).observe(this.verdict);
    }
    this.setFolded(window.innerHeight <= FOLD_BELOW_HEIGHT);
  }

  /** The verdicts scrolled out of view (or back): the sticky line shows the brief meanwhile. @param {boolean} stuck */
  setStuck(stuck) {
    if (stuck === this.stuck) return;
    this.stuck = stuck;
    this.root.classList.toggle('ks-header-stuck', stuck);
    this.fillBrief();
  }

  /** Folds the header to one line (the verdict cut to its brief), or unfolds it. @param {boolean} folded */
  setFolded(folded) {
    this.folded = folded;
    this.root.classList.toggle('ks-header-folded', folded);
    this.more.classList.toggle('ks-header-more-folded', folded);
    this.verdict.hidden = folded;
    this.foldButton.textContent = folded ? 'More \u25be' : 'Less \u25b4';
    this.foldButton.title = folded ? 'show the whole verdict, its evidence, the trace figures and the link and export buttons' : 'fold the header to one line';
    this.foldButton.setAttribute('aria-expanded', String(!folded));
    this.fillBrief();
    this.root.dispatchEvent(new Event('ks-header-resize', { bubbles: true }));
  }

  /** The one-line verdict of the folded header, or of its sticky line once the verdicts scrolled away, from the
   * summary shown (none, or the verdicts in view: empty). */
  fillBrief() {
    // only while folded or scrolled past: else the verdict below says it (and its bound is the first on the page)
    if (!this.summary || !(this.folded || this.stuck)) {
      this.brief.replaceChildren();
      this.brief.title = '';
      return;
    }
    const { verdict } = spanVerdict(this.summary, this.runAnswer);
    const { bound, text } = verdictBrief(verdict, savingRows(this.summary)[0]);
    this.brief.replaceChildren(el('span', { class: 'ks-bound', dataset: { bound } }, bound), ' ', text);
    this.brief.title = `${bound}: ${text}`;
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
    // The summary on screen is the analysis done: a poll answered before it still said loading.
    if (this.summary && (st.state === 'loading' || st.state === 'queued')) st = { state: 'ready' };
    const progress = st.state === 'loading' && typeof st.progress === 'number'
      ? el('progress', { max: 1, value: st.progress, title: formatShare(st.progress) }) : null;
    // the phase and, where the phase measures its own work (decoding), its share: never a share of nothing done
    const label = st.state === 'loading' && st.phase
      ? `${st.phase}${typeof st.phase_progress === 'number' ? ` ${formatShare(st.phase_progress)}` : ''}` : st.state;
    this.status.replaceChildren(el('span', { class: `ks-state ks-state-${st.state}`, dataset: { state: st.state } }, label));
    if (progress) this.status.append(progress);
    this.status.title = st.error ?? '';
  }

  /**
   * Shows the verdict of a summary (null: nothing yet), or an error message.
   * @param {any} summary @param {string | null} error
   */
  setVerdict(summary, error) {
    this.summary = error ? null : summary;
    if (error) this.verdict.replaceChildren(message('error', error));
    else if (!summary) this.verdict.replaceChildren(message('info', 'Loading the trace\u2026'));
    else this.verdict.replaceChildren(...verdictNodes(summary, this.runAnswer));
    this.fillBrief();
    if (summary && !error) this.setStatus({ state: 'ready' });
    // an error is never cut to a brief: unfold to show it
    if (error && this.folded) this.setFolded(false);
  }

  /**
   * Shows the run-level verdict (a `verdict?run=` answer, null: none) above the span's, and the
   * span's verdict as the run makes it.
   * @param {any} answer
   */
  setRunVerdict(answer) {
    this.runAnswer = answer;
    this.markRunVerdict(answer ? 'shown' : 'none');
    if (this.summary) this.verdict.replaceChildren(...verdictNodes(this.summary, answer));
    this.fillBrief();
  }

  /**
   * For automation (the browser checks): the run verdict's state on `data-run-verdict`: `asked` until its first
   * answer lands and grows the header (the lanes below move down), then `shown`; `none`, or `failed`.
   * @param {'asked' | 'shown' | 'none' | 'failed'} state
   */
  markRunVerdict(state) {
    this.root.dataset.runVerdict = state;
  }

  /** Shows a message in place of the verdict (no trace yet, the logdir cannot be listed), unfolded. @param {HTMLElement} node */
  showMessage(node) {
    this.summary = null;
    this.verdict.replaceChildren(node);
    this.fillBrief();
    if (this.folded) this.setFolded(false);
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
