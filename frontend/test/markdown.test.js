import assert from 'node:assert/strict';
import test from 'node:test';

import { mdEscape, summaryToMarkdown } from '../model/markdown.js';

const SUMMARY = {
  id: 'abc', run: 'resnet50_num_workers_0', worker: 'worker0', span: '1623143089861', duration_us: 1012345, events: 44666,
  warnings: ['2 events without dur'],
  devices: [{ device: 0, window_us: 1000, busy_us: 600, idle_us: 400, idle_pct: 40,
    comm: { kernels: 6, comm_us: 1500, compute_us: 7600, exposed_comm_us: 300, overlap_pct: 80 },
    gaps: { count: 3, by_cause_us: { dataloader: 300, sync: 0, host: 100, comm: 0, graph: 0 },
      top_culprits: [{ name: 'after <b>op</b>', annotation: 'Optimizer.step#SGD.step', label: 'after <b>op</b> in Optimizer.step#SGD.step', idle_us: 100 }],
      top_sync_culprits: [], top_comm_culprits: [] } }],
  steps: [{ name: 'ProfilerStep#2', dur_us: 160000, dataloader_us: 50000, dataloader_share: 0.31, stalled: true,
    compute_us: 90000, comm_us: 1500, exposed_comm_us: 300, memcpy_us: 2000 }],
  launch: { pairs: 10, short_kernels: 1, offset_us: { p50: 1, p90: 2, p99: 3, max: 4 } },
  memory: [{ device: 'cuda:0', peak_allocated_bytes: 2791636480, peak_reserved_bytes: null, peak_at_us: 5, peak_op: '<img src=x onerror=alert(1)>',
    relative: true }],
  verdict: { bound: 'dataloader-bound', confidence: 'high', share: 0.31, runner_up: 'host-bound', runner_up_share: 0.1,
    evidence: 'DataLoader waits cover 31% of steps', suggestion: 'raise num_workers', reasons: [] },
};

test('the markdown names the span, the verdict and each section', () => {
  const md = summaryToMarkdown(SUMMARY);
  assert.match(md, /^# Kinetoscope: resnet50\\_num\\_workers\\_0 \/ worker0 \/ span 1623143089861$/m);
  assert.match(md, /^\*\*Verdict: dataloader-bound \(high confidence, 31\.0% of the judged time\)\.\*\* DataLoader waits cover 31% of steps$/m);
  assert.match(md, /^Runner-up: host-bound \(10\.0%\)\.$/m);
  for (const h of ['## GPU idle', '## Communication', '## Top CPU culprits', '## Steps', '## Launch offsets', '## Memory', '## Warnings']) {
    assert.ok(md.includes(h), h);
  }
  assert.ok(!md.includes('Run verdict'), 'no run verdict without the run route\'s answer');
  assert.match(md, /\| GPU 0 \| 1 ms \| 600 µs \| 400 µs \(40\.0%\) \| 3 \| dataloader 300 µs, host 100 µs \|/);
  assert.match(md, /\| GPU 0 \| 6 \| 1\.5 ms \| 300 µs \| 7\.6 ms \| 80\.0% overlapped \|/);
  assert.match(md, /\| GPU 0 \| host gaps \| after \\<b\\>op\\<\/b\\> \| Optimizer.step\\#SGD.step \| 100 µs \|/);
  assert.match(md, /\| ProfilerStep\\#2 \| 160 ms \| 50 ms \| 31\.0% \| 90 ms \| 1\.5 ms \| 300 µs \| 2 ms \| \*\*stalled\*\* \|/);
  assert.match(md, /\| cuda:0 \| 2\.6 GiB \(relative to the start of the trace\) \| not recorded \|/);
});

test('the run verdict above the span\'s, and the span\'s verdict as the run makes it', () => {
  const run = { run: SUMMARY.run, pending: 0, failed: 0,
    verdict: { bound: 'host-bound', confidence: 'medium', share: 0.4, runner_up: 'dataloader-bound', runner_up_share: 0.3, evidence: '2 of 2 judged spans' },
    spans: [{ id: 'abc', verdict: { ...SUMMARY.verdict, bound: 'host-bound', confidence: 'low' } }, { id: 'def', verdict: { bound: 'host-bound' } }] };
  const md = summaryToMarkdown(SUMMARY, run);
  assert.match(md, /^\*\*Run verdict: host-bound \(medium confidence, 40\.0% of the judged time\)\*\*, 2 of 2 spans\. 2 of 2 judged spans$/m);
  assert.match(md, /^\*\*Verdict: host-bound \(low confidence, 31\.0% of the judged time\)\.\*\* \(as the run\)/m);
  assert.ok(md.indexOf('Run verdict') < md.indexOf('**Verdict'));
});

test('not enough data lists its reasons and what the figures lean to', () => {
  const md = summaryToMarkdown({ run: 'r', worker: 'w', id: 'x', verdict: { bound: 'not enough data', confidence: 'high', share: null,
    runner_up: 'launch-overhead-bound', runner_up_share: 0.98, reasons: ['one <script> call takes 67% of the trace', 'only 16 device activities'] } });
  assert.match(md, /^The figures lean to launch-overhead-bound \(98\.0%\)\.$/m);
  assert.match(md, /^- one \\<script\\> call takes 67% of the trace$/m);
  assert.match(md, /^- only 16 device activities$/m);
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
