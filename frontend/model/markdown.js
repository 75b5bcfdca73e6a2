// @ts-check
/**
 * The summary of one span as Markdown (the "Export summary" button). Pure.
 */
import { formatBytes, formatDuration, formatShare } from './format.js';

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
  return `## GPU idle\n\n${table(['device', 'window', 'busy', 'idle', 'gaps', 'idle by cause'], rows)}`;
}

/** @param {any} summary */
function stepSection(summary) {
  const steps = Array.isArray(summary.steps) ? summary.steps : [];
  if (steps.length === 0) return '';
  const rows = steps.map((/** @type {any} */ s) => [mdEscape(s.name), formatDuration(s.dur_us),
    formatDuration(s.dataloader_us), formatShare(s.dataloader_share), s.stalled ? '**stalled**' : '']);
  return `## Steps\n\n${table(['step', 'duration', 'DataLoader', 'share', ''], rows)}`;
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
  const rows = memory.map((/** @type {any} */ m) => [mdEscape(m.device), formatBytes(m.peak_allocated_bytes),
    formatBytes(m.peak_reserved_bytes), formatDuration(m.peak_at_us), mdEscape(m.peak_op ?? ''),
    m.leak_suspect ? 'yes' : 'no']);
  return `## Memory\n\n${table(['device', 'peak allocated', 'peak reserved', 'at', 'op', 'leak suspect'], rows)}`;
}

/**
 * @param {any} summary the `summary` route's JSON
 * @returns {string}
 */
export function summaryToMarkdown(summary) {
  const v = summary.verdict ?? {};
  const head = [
    `# Kinetoscope: ${mdEscape(summary.run)} / ${mdEscape(summary.worker)} / span ${mdEscape(summary.span ?? summary.id)}`,
    '',
    `**Verdict: ${mdEscape(v.bound ?? 'unknown')}.** ${mdEscape(v.evidence ?? '')}`,
    '',
    `Suggestion: ${mdEscape(v.suggestion ?? '')}`,
    '',
    `Trace: ${formatDuration(summary.duration_us)}, ${summary.events ?? 0} events.`,
  ].join('\n');
  const warnings = Array.isArray(summary.warnings) && summary.warnings.length
    ? `## Warnings\n\n${summary.warnings.map((/** @type {unknown} */ w) => `- ${mdEscape(typeof w === 'string' ? w : JSON.stringify(w))}`).join('\n')}`
    : '';
  return [head, deviceSection(summary), stepSection(summary), launchSection(summary), memorySection(summary), warnings]
    .filter(Boolean).join('\n\n') + '\n';
}
