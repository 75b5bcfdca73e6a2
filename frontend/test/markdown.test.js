import assert from 'node:assert/strict';
import test from 'node:test';

import { mdEscape, summaryToMarkdown } from '../model/markdown.js';

const SUMMARY = {
  id: 'abc', run: 'resnet50_num_workers_0', worker: 'worker0', span: '1623143089861', duration_us: 1012345, events: 44666,
  warnings: ['2 events without dur'],
  devices: [{ device: 0, window_us: 1000, busy_us: 600, idle_us: 400, idle_pct: 40,
    gaps: { count: 3, by_cause_us: { dataloader: 300, sync: 0, host: 100 } } }],
  steps: [{ name: 'ProfilerStep#2', dur_us: 160000, dataloader_us: 50000, dataloader_share: 0.31, stalled: true }],
  launch: { pairs: 10, short_kernels: 1, offset_us: { p50: 1, p90: 2, p99: 3, max: 4 } },
  memory: [{ device: 'cuda:0', peak_allocated_bytes: 2791636480, peak_reserved_bytes: 0, peak_at_us: 5, peak_op: '<img src=x onerror=alert(1)>' }],
  verdict: { bound: 'dataloader-bound', evidence: 'DataLoader waits cover 31% of steps', suggestion: 'raise num_workers' },
};

test('the markdown names the span, the verdict and each section', () => {
  const md = summaryToMarkdown(SUMMARY);
  assert.match(md, /^# Kinetoscope: resnet50\\_num\\_workers\\_0 \/ worker0 \/ span 1623143089861$/m);
  assert.match(md, /\*\*Verdict: dataloader-bound\.\*\* DataLoader waits cover 31% of steps/);
  for (const h of ['## GPU idle', '## Steps', '## Launch offsets', '## Memory', '## Warnings']) assert.ok(md.includes(h), h);
  assert.match(md, /\| GPU 0 \| 1 ms \| 600 µs \| 400 µs \(40\.0%\) \| 3 \| dataloader 300 µs, host 100 µs \|/);
  assert.match(md, /\| ProfilerStep\\#2 \| 160 ms \| 50 ms \| 31\.0% \| \*\*stalled\*\* \|/);
  assert.match(md, /2\.6 GiB/);
});

test('trace strings cannot inject markup or break tables', () => {
  assert.equal(mdEscape('<img src=x onerror=alert(1)>'), '\\<img src=x onerror=alert(1)\\>');
  assert.equal(mdEscape('a|b\nc'), 'a\\|b c');
  const md = summaryToMarkdown(SUMMARY);
  assert.ok(!/(^|[^\\])<img/.test(md), 'every < is escaped');
});

test('a summary with missing sections still renders', () => {
  const md = summaryToMarkdown({ run: 'r', worker: 'w', id: 'x' });
  assert.match(md, /Verdict: unknown/);
  assert.ok(!md.includes('## Steps'));
});
