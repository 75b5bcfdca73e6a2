import assert from 'node:assert/strict';
import test from 'node:test';

import {
  NOT_ENOUGH_DATA, confidenceText, reasonsOf, runSpansText, runVerdictLine, runnerUpText, shareText, showsRunVerdict,
  ruleText, spanVerdict, verdictBrief, verdictHeadline,
} from '../model/verdict.js';

const COMPUTE = { bound: 'compute-bound', confidence: 'medium', share: 0.6019, runner_up: 'host-bound', runner_up_share: 0.2086,
  evidence: 'busy 60.2%', suggestion: 'speed up the kernels', reasons: [] };
const THIN = { bound: NOT_ENOUGH_DATA, confidence: 'high', share: null, runner_up: 'launch-overhead-bound', runner_up_share: 0.9833,
  reasons: ['only 16 device activities in the trace', 'one hipLaunchKernel call takes 6.5 ms'] };

test('bound, confidence and share in one headline', () => {
  assert.equal(verdictHeadline(COMPUTE), 'compute-bound (medium confidence, 60.2% of the judged time)');
  assert.equal(verdictHeadline({ bound: 'cpu-only', confidence: 'high', share: null }), 'cpu-only (high confidence)');
  assert.equal(verdictHeadline({ bound: 'host-bound' }), 'host-bound');
  assert.equal(verdictHeadline(null), 'unknown');
  assert.equal(confidenceText(COMPUTE), 'medium confidence');
  assert.equal(confidenceText({}), '');
  assert.equal(shareText({ share: null }), '');
  assert.equal(shareText({ share: 0.25 }), '25.0% of the judged time');
});

test('the runner-up with its share; "not enough data" says what the figures lean to', () => {
  assert.equal(runnerUpText(COMPUTE), 'runner-up: host-bound (20.9%)');
  assert.equal(runnerUpText({ bound: 'cpu-only', runner_up: NOT_ENOUGH_DATA, runner_up_share: null }), 'runner-up: not enough data');
  assert.equal(runnerUpText(THIN), 'the figures lean to launch-overhead-bound (98.3%)');
  assert.equal(runnerUpText({ bound: NOT_ENOUGH_DATA, runner_up: null }), '');
  assert.equal(runnerUpText(undefined), '');
});

test('reasons only for "not enough data"', () => {
  assert.deepEqual(reasonsOf(THIN), THIN.reasons);
  assert.deepEqual(reasonsOf({ ...COMPUTE, reasons: ['stale'] }), []);
  assert.deepEqual(reasonsOf({ bound: NOT_ENOUGH_DATA }), []);
});

const RUN = { run: 'r', pending: 0, failed: 0, verdict: { bound: 'compute-bound', confidence: 'medium' },
  spans: [{ id: 'a', verdict: { bound: 'compute-bound', confidence: 'low' } }, { id: 'b', verdict: { bound: 'host-bound' } }] };

test('the span shows the run\'s harmonized verdict, "as the run" when the bound changed', () => {
  const summary = { id: 'a', run: 'r', verdict: { bound: 'host-bound', confidence: 'low' } };
  assert.deepEqual(spanVerdict(summary, RUN), { verdict: RUN.spans[0].verdict, asRun: true });
  assert.deepEqual(spanVerdict({ ...summary, id: 'b' }, RUN), { verdict: RUN.spans[1].verdict, asRun: false });
  assert.deepEqual(spanVerdict(summary, null), { verdict: summary.verdict, asRun: false });
  assert.deepEqual(spanVerdict(summary, { ...RUN, run: 'other' }), { verdict: summary.verdict, asRun: false }, 'another run\'s answer');
  const loading = { ...RUN, spans: [{ id: 'a', verdict: null }] };
  assert.deepEqual(spanVerdict(summary, loading), { verdict: summary.verdict, asRun: false });
  assert.deepEqual(spanVerdict({ id: 'x' }, null), { verdict: {}, asRun: false });
});

test('the run line: shown for runs of several spans, with how many spans it pools', () => {
  assert.equal(runVerdictLine(RUN), 'Run verdict: compute-bound (medium) - 2 of 2 spans');
  assert.equal(runSpansText({ ...RUN, pending: 2, spans: [...RUN.spans, { id: 'c', verdict: null }, { id: 'd', verdict: null }] }),
    '2 of 4 spans, 2 loading');
  assert.equal(runSpansText({ ...RUN, failed: 1, spans: [RUN.spans[0], { id: 'e', verdict: null }] }), '1 of 2 spans, 1 failed');
  assert.equal(showsRunVerdict(RUN, 'r'), true);
  assert.equal(showsRunVerdict(RUN, 'other'), false);
  assert.equal(showsRunVerdict({ ...RUN, spans: [RUN.spans[0]] }, 'r'), false, 'one span: its own verdict says it all');
  assert.equal(showsRunVerdict({ ...RUN, verdict: null }, 'r'), false, 'nothing loaded yet');
  assert.equal(showsRunVerdict(null), false);
});

test('the folded header\'s brief: share and top saving, or the first reason of "not enough data"', () => {
  assert.deepEqual(verdictBrief(COMPUTE, { fix: 'fuse the small kernels', savingUs: 4100, share: 0.12 }),
    { bound: 'compute-bound', text: '60.2% of the time \u00b7 top saving 4.1 ms/step (12.0%): fuse the small kernels' });
  assert.deepEqual(verdictBrief(COMPUTE, null), { bound: 'compute-bound', text: '60.2% of the time' });
  assert.deepEqual(verdictBrief(COMPUTE, { fix: 'nothing', savingUs: 0, share: 0 }), { bound: 'compute-bound', text: '60.2% of the time' });
  assert.deepEqual(verdictBrief(THIN, undefined), { bound: NOT_ENOUGH_DATA, text: 'only 16 device activities in the trace' });
  assert.deepEqual(verdictBrief(undefined, undefined), { bound: 'no verdict', text: '' });
});

test('"not enough data" gives no confidence; a smaller share that wins says the rule', () => {
  assert.equal(confidenceText(THIN), '');
  assert.equal(verdictHeadline(THIN), NOT_ENOUGH_DATA);
  const sync = { bound: 'sync-bound', confidence: 'medium', share: 0.357, runner_up: 'compute-bound', runner_up_share: 0.643,
    rule: 'the host-side causes leave the GPU idle 35.7% of the judged time, at least 20%' };
  assert.equal(ruleText(sync), 'sync-bound wins by the rule: the host-side causes leave the GPU idle 35.7% of the judged time, at least 20%');
  assert.equal(ruleText(COMPUTE), '');
  assert.equal(ruleText({ ...sync, rule: null }), '');
});
