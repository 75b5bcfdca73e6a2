// @ts-check
/**
 * The summary of one span as Markdown (the "Export summary" button): the run's verdict when its run
 * has several spans, the span's (as the header shows it), device, communication, culprit, step,
 * launch and memory figures. Every trace string is escaped. Pure.
 */
import { overlapText } from './devices.js';
import { formatBytes, formatDuration, formatShare } from './format.js';
import { culpritGroups } from './gaps.js';
import { memoryLabels } from './memory.js';
import { reasonsOf, runSpansText, runnerUpText, showsRunVerdict, spanVerdict, verdictHeadline } from './verdict.js';

/**
 * Escapes trace strings for Markdown: CommonMark treats a backslash before ASCII punctuation as a
 * literal, so `<img ...>` stays text and a `|` in a kernel name does not split a table cell.
 * @param {unknown} text
 */
export function mdEscape(text) {
  return String(text ?? '').replace(/[\\`*_[\]<>|#]/g, '\\$&').replace(/\r?\n/g, ' ');
}

/**
 * @param {string[]} header
 * @param {string[][]} rows
 */
function table(header, rows) {
  const line = (/** @type {string[]} */ cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** @param {any} summary */
function deviceSection(summary) {
  const devices = Array.isArray(summary.devices) ? summary.devices : [];
  if (devices.length === 0) return '';
  const rows = devices.map((/** @type {any} */ d) => {
    const byCause = Object.entries(d.gaps?.by_cause_us ?? {})
      .filter(([, us]) => Number(us) > 0)
      .map(([cause, us]) => `${cause} ${formatDuration(Number(us))}`)
      .join(', ');
    return [`GPU ${mdEscape(d.device)}`, formatDuration(d.window_us), formatDuration(d.busy_us),
      `${formatDuration(d.idle_us)} (${Number(d.idle_pct).toFixed(1)}%)`, String(d.gaps?.count ?? 0), byCause || '\u2013'];
  });
  const comm = devices.filter((/** @type {any} */ d) => Number(d.comm?.kernels) > 0).map((/** @type {any} */ d) => [`GPU ${mdEscape(d.device)}`,
    String(d.comm.kernels), formatDuration(d.comm.comm_us), formatDuration(d.comm.exposed_comm_us), formatDuration(d.comm.compute_us),
    overlapText(d.comm) || '\u2013']);
  const culprits = devices.flatMap((/** @type {any} */ d) => culpritGroups(d).flatMap((g) => g.rows.map((r) => [`GPU ${mdEscape(d.device)}`,
    g.title, mdEscape(r.text), mdEscape(r.annotation) || '\u2013', formatDuration(r.idleUs)])));
  return [`## GPU idle\n\n${table(['device', 'window', 'busy', 'idle', 'gaps', 'idle by cause'], rows)}`,
    comm.length ? `## Communication\n\n${table(['device', 'kernels', 'comm', 'exposed comm', 'compute', 'overlap'], comm)}` : '',
    culprits.length ? `## Top CPU culprits\n\n${table(['device', 'of', 'CPU op', 'in annotation', 'idle caused'], culprits)}` : '']
    .filter(Boolean).join('\n\n');
}

/** @param {any} summary */
function stepSection(summary) {
  const steps = Array.isArray(summary.steps) ? summary.steps : [];
  if (steps.length === 0) return '';
  const rows = steps.map((/** @type {any} */ s) => [mdEscape(s.name), formatDuration(s.dur_us),
    formatDuration(s.dataloader_us), formatShare(s.dataloader_share), formatDuration(s.compute_us), formatDuration(s.comm_us),
    formatDuration(s.exposed_comm_us), formatDuration(s.memcpy_us), s.stalled ? '**stalled**' : '']);
  return `## Steps\n\n${table(['step', 'duration', 'DataLoader', 'share', 'compute', 'comm', 'exposed comm', 'memcpy', ''], rows)}`;
}

/** @param {any} summary */
function launchSection(summary) {
  const launch = summary.launch;
  if (!launch) return '';
  const pct = (/** @type {any} */ p) => (p ? ['p50', 'p90', 'p99', 'max'].map((k) => formatDuration(p[k])) : []);
  const rows = [['offset', ...pct(launch.offset_us)], ['queued', ...pct(launch.queued_us)],
    ['latency', ...pct(launch.latency_us)]].filter((r) => r.length > 1);
  return `## Launch offsets\n\n${launch.pairs ?? 0} launch/kernel pairs, ${launch.short_kernels ?? 0} short kernels.\n\n` +
    table(['', 'p50', 'p90', 'p99', 'max'], rows);
}

/** @param {any} summary */
function memorySection(summary) {
  const memory = Array.isArray(summary.memory) ? summary.memory : [];
  if (memory.length === 0) return '';
  const rows = memory.map((/** @type {any} */ m) => {
    const labels = memoryLabels(m);
    return [mdEscape(m.device), `${formatBytes(m.peak_allocated_bytes)}${m.relative === true ? ' (relative to the start of the trace)' : ''}`,
      labels.recorded ? formatBytes(m.peak_reserved_bytes) : 'not recorded', formatDuration(m.peak_at_us), mdEscape(m.peak_op ?? ''),
      m.leak_suspect ? 'yes' : 'no'];
  });
  return `## Memory\n\n${table(['device', 'peak allocated', 'peak reserved', 'at', 'op', 'leak suspect'], rows)}`;
}

/** "Runner-up: host-bound (20.9%)." / "The figures lean to ...", '' without a runner-up. @param {any} v */
function runnerUpLine(v) {
  const text = runnerUpText(v);
  return text ? `${mdEscape(text.charAt(0).toUpperCase() + text.slice(1))}.` : '';
}

/**
 * The verdict lines: the run's (when shown), then the span's, its runner-up, reasons and suggestion.
 * @param {any} summary @param {any} runAnswer
 */
function verdictSection(summary, runAnswer) {
  const { verdict: v, asRun } = spanVerdict(summary, runAnswer);
  const paragraphs = [];
  if (showsRunVerdict(runAnswer, summary.run)) {
    const rv = runAnswer.verdict;
    paragraphs.push(`**Run verdict: ${mdEscape(verdictHeadline(rv))}**, ${mdEscape(runSpansText(runAnswer))}. ${mdEscape(rv.evidence ?? '')}`,
      runnerUpLine(rv));
  }
  paragraphs.push(`**Verdict: ${mdEscape(verdictHeadline(v))}.**${asRun ? ' (as the run)' : ''} ${mdEscape(v.evidence ?? '')}`, runnerUpLine(v));
  const reasons = reasonsOf(v);
  if (reasons.length) paragraphs.push(`Why there is not enough data:\n\n${reasons.map((r) => `- ${mdEscape(r)}`).join('\n')}`);
  paragraphs.push(`Suggestion: ${mdEscape(v.suggestion ?? '')}`);
  return paragraphs.filter(Boolean).join('\n\n');
}

/**
 * @param {any} summary the `summary` route's JSON
 * @param {any} [runAnswer] the `verdict?run=` answer of its run (null: none)
 * @returns {string}
 */
export function summaryToMarkdown(summary, runAnswer = null) {
  const head = [
    `# Kinetoscope: ${mdEscape(summary.run)} / ${mdEscape(summary.worker)} / span ${mdEscape(summary.span ?? summary.id)}`,
    '',
    verdictSection(summary, runAnswer),
    '',
    `Trace: ${formatDuration(summary.duration_us)}, ${summary.events ?? 0} events.`,
  ].join('\n');
  const warnings = Array.isArray(summary.warnings) && summary.warnings.length
    ? `## Warnings\n\n${summary.warnings.map((/** @type {unknown} */ w) => `- ${mdEscape(typeof w === 'string' ? w : JSON.stringify(w))}`).join('\n')}`
    : '';
  return [head, deviceSection(summary), stepSection(summary), launchSection(summary), memorySection(summary), warnings]
    .filter(Boolean).join('\n\n') + '\n';
}
