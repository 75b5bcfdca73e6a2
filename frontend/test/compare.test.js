import assert from 'node:assert/strict';
import test from 'node:test';

import {
  baseOptions, changeRows, changesNote, compareParams, formatFigure, formatPct, headline, isBaseKey, joinedRows, rankRows,
  distinctNames, shortName, stripLayout, summaryRows, verdictLine,
} from '../model/compare.js';

const RUNS = [
  { name: 'before', workers: [{ name: 'w', spans: [{ id: 'aaaaaaaaaaaa', index: 1, span: '17', file: 'w.17.pt.trace.json', state: 'ready' }] }] },
  { name: 'after', workers: [{ name: 'w', spans: [{ id: 'bbbbbbbbbbbb', index: 1, span: null, file: 'w.pt.trace.json', state: 'loading' }] }] },
];

const metric = (name, label, unit, base, cand, noise, status) => ({
  name, label, unit, base, cand, delta: cand - base, delta_pct: base ? (100 * (cand - base)) / base : null, noise, status });

const RESULT = {
  steps: { matched: 12, base: 12, cand: 14, unmatched_base: 0, unmatched_cand: 2 },
  metrics: [metric('step_time', 'step time (median)', 'us', 162000, 127000, 18500, 'gain'),
    metric('comm', 'communication per step (mean)', 'us', 0, 0, 0, 'unchanged'),
    metric('memory_peak', 'memory peak (allocated)', 'bytes', 2 * 1024 ** 3, 2 * 1024 ** 3 + 1024 ** 2, null, 'unchanged')],
  changes: { delta_us: -22700, explained_us: -23500, rest_us: 800, rest_rows: 2, rows: [
    { name: 'DataLoader wait (device idle)', part: 'dataloader', base_us: 47600, cand_us: 500, delta_us: -47100, share_of_change: 2.075, kernels: null },
    { name: 'compute', part: 'compute', base_us: 98200, cand_us: 101500, delta_us: 3300, share_of_change: -0.145, kernels: [
      { name: 'sgemm', kernel: 'sgemm', base_us: 600, cand_us: 4200, delta_us: 3600 },
      { name: '62 other kernels', kernel: null, base_us: 97600, cand_us: 97300, delta_us: -300 }] }] },
  verdict: { changed: true, base: { bound: 'dataloader-bound', confidence: 'high', share: 0.25, runner_up: 'host-bound' },
    cand: { bound: 'compute-bound', confidence: 'medium', share: 0.82, runner_up: null } },
  kernels: { rows_total: 2, rows: [
    { name: 'sgemm', base_us: 600, cand_us: 4200, delta_us: 3600, delta_pct: 600, base_count: 1, cand_count: 12, only_in: null },
    { name: 'old', base_us: 500, cand_us: 0, delta_us: -500, delta_pct: -100, base_count: 1, cand_count: 0, only_in: 'base' }] },
  ranks: [{ rank: 0, metrics: [metric('step_time', 's', 'us', 100, 120, 1, 'regression')], top_change: { name: 'compute', delta_us: 20 },
    verdict: { base: 'compute-bound', cand: 'compute-bound' } }, { rank: null, unmatched: ['candidate rank 3'] }],
};

test('baselines: every run, then every span, as keys', () => {
  const options = baseOptions(RUNS);
  assert.deepEqual(options.map((o) => o.value), ['run:before', 'run:after', 'span:aaaaaaaaaaaa', 'span:bbbbbbbbbbbb']);
  assert.equal(options[2].label, 'before / w / 1 \u00b7 17');
  assert.equal(options[3].label, 'after / w / 1 \u00b7 w.pt.trace.json (loading)');
  assert.ok(isBaseKey('run:x') && isBaseKey('span:ab') && !isBaseKey('run:') && !isBaseKey('x') && !isBaseKey(null));
});

test('route parameters: a baseline run or span against the span on screen or its run', () => {
  const span = { id: 'bbbbbbbbbbbb', run: 'after' };
  assert.deepEqual(compareParams('run:before', false, span), { base_run: 'before', cand: 'bbbbbbbbbbbb' });
  assert.deepEqual(compareParams('span:aaaaaaaaaaaa', true, span), { base: 'aaaaaaaaaaaa', cand_run: 'after' });
  assert.deepEqual(compareParams('run:a:b', false, span), { base_run: 'a:b', cand: 'bbbbbbbbbbbb' });
  assert.equal(compareParams(null, false, span), null);
  assert.equal(compareParams('run:before', false, null), null);
});

test('figures and changes are signed with a real minus', () => {
  assert.equal(formatFigure(-47100, 'us', true), '\u221247.1 ms');
  assert.equal(formatFigure(3600, 'us', true), '+3.6 ms');
  assert.equal(formatFigure(1024 ** 2, 'bytes', true), '+1 MiB');
  assert.equal(formatFigure(null, 'us'), '\u2013');
  assert.equal(formatPct(-21.84), '\u221221.8%');
  assert.equal(formatPct(0), '0.0%');
});

test('headline, verdicts and the note under the ranked changes', () => {
  assert.equal(headline(RESULT), 'Step time (median) 162 ms \u2192 127 ms: \u221235 ms (\u221221.6%), gain, noise \u00b118.5 ms');
  assert.equal(verdictLine(RESULT),
    'Verdict (changed): dataloader-bound (high, 25%; runner-up host-bound) \u2192 compute-bound (medium, 82%)');
  assert.equal(changesNote(RESULT),
    'The numbered rows add up to \u221223.5 ms of the \u221222.7 ms change of the mean step time; the other 2 parts: +800 \u00b5s'
    + ' (the headline gives the median step).');
  // with the mean step time on both sides, its figures beside the sentence: the median headline and the mean rows read apart
  const withMean = { ...RESULT, metrics: [...RESULT.metrics, metric('step_time_mean', 'step time (mean)', 'us', 170000, 147300, null, 'gain')] };
  assert.match(changesNote(withMean), /\(mean step 170 ms \u2192 147 ms; the headline gives the median step, which uneven steps move differently\)\.$/);
  assert.match(headline(withMean), /^Step time \(median\) /);
  assert.equal(headline({ metrics: [] }), 'Step time: not measured on both sides.');
  // not enough data gives no confidence, only what the figures lean to
  const thin = { verdict: { changed: true, base: { bound: 'not enough data', confidence: 'high', share: null, runner_up: 'host-bound' },
    cand: { bound: 'compute-bound', confidence: 'medium', share: 0.8, runner_up: null } } };
  assert.equal(verdictLine(thin), 'Verdict (changed): not enough data (the figures lean to host-bound) \u2192 compute-bound (medium, 80%)');
});

test('ranked changes: numbered parts, the kernels under compute', () => {
  const rows = changeRows(RESULT);
  assert.deepEqual(rows.map((r) => [r.rank, r.name, r.child]), [['1', 'DataLoader wait (device idle)', false], ['2', 'compute', false],
    ['', 'sgemm', true], ['', '62 other kernels', true]]);
  assert.equal(rows[0].share, '208%');
  assert.equal(rows[0].sign, -1);
});

test('summary rows leave out figures zero on both sides', () => {
  const rows = summaryRows(RESULT);
  assert.deepEqual(rows.map((r) => r.label), ['step time (median)', 'memory peak (allocated)']);
  assert.equal(rows[1].noise, '\u2013');
  assert.equal(rows[1].change, '+1 MiB');
});

test('joined tables and ranks', () => {
  const rows = joinedRows(RESULT.kernels);
  assert.deepEqual(rows.map((r) => [r.name, r.calls, r.only]), [['sgemm', '1 \u2192 12', ''], ['old', '1 \u2192 0', 'baseline only']]);
  const ranks = rankRows(RESULT);
  assert.deepEqual(ranks.unmatched, ['candidate rank 3']);
  assert.equal(ranks.rows[0].top, 'compute +20 \u00b5s');
  assert.equal(ranks.rows[0].pct, '+20.0%');
});

test('a joined row whose name the server cut says so in its title, and rows cut to the same text stay two', () => {
  const cut = 'k'.repeat(999) + '\u2026';
  const table = { rows_total: 2, rows: [
    { name: cut, name_key: '0123456789abcdef', name_chars: 1202, base_us: 1, cand_us: 2, delta_us: 1, delta_pct: 100, base_count: 1, cand_count: 1, only_in: null },
    { name: cut, name_key: 'fedcba9876543210', name_chars: 1202, base_us: 1, cand_us: 1, delta_us: 0, delta_pct: 0, base_count: 1, cand_count: 1, only_in: null }] };
  const rows = joinedRows(table);
  assert.equal(rows.length, 2);
  assert.match(rows[0].full, /1,202 characters; key 0123456789abcdef/);
  assert.match(rows[1].full, /key fedcba9876543210/);
  assert.equal(joinedRows(RESULT.kernels)[0].full, 'sgemm'); // a name shown whole is its own title
  const kernels = changeRows({ changes: { rows: [{ name: 'compute', part: 'compute', base_us: 1, cand_us: 2, delta_us: 1, share_of_change: 1,
    kernels: [{ name: cut, kernel: cut, name_key: '0123456789abcdef', name_chars: 1202, base_us: 1, cand_us: 2, delta_us: 1 }] }] } });
  assert.match(kernels[1].full, /cut: the trace's name has 1,202 characters/);
});

test('names: C++ kernels without void and parameters, then cut', () => {
  assert.equal(shortName('void cudnn::detail::dgrad_engine<float, 512, 6>(int, int, float const*)'), 'cudnn::detail::dgrad_engine<float, 512, 6>');
  assert.equal(shortName('Memcpy HtoD (Pageable -> Device)'), 'Memcpy HtoD (Pageable -> Device)');
  assert.equal(shortName('void at::native::(anonymous namespace)::fill<float>(float*, int)'), 'at::native::(anonymous namespace)::fill<float>');
  assert.equal(shortName('void k<(f)(int)>()'), 'k<(f)(int)>');
  assert.equal(shortName('x'.repeat(150)).length, 100);
  assert.ok(shortName('x'.repeat(150)).endsWith('\u2026'));
});

test('the step strip: both sides from the chosen step on one axis, steps split into their parts', () => {
  const series = { parts: ['compute', 'exposed_comm', 'dataloader'],
    base: { step_us: [10, 20, 30], parts_us: [[5, 0, 5], [10, 5, 5], [30, 0, 0]] },
    cand: { step_us: [8, 9], parts_us: [[8, 0, 0], [4, 4, 1]] } };
  const strip = stripLayout(series, 1, 5);
  assert.equal(strip.spanUs, 50);
  assert.deepEqual(strip.steps, [{ side: 'base', step: 1, t0Us: 0, t1Us: 20 }, { side: 'base', step: 2, t0Us: 20, t1Us: 50 },
    { side: 'cand', step: 1, t0Us: 0, t1Us: 9 }]);
  assert.deepEqual(strip.rects.filter((r) => r.side === 'base').map((r) => [r.step, r.part, r.t0Us, r.t1Us]),
    [[1, 'compute', 0, 10], [1, 'exposed_comm', 10, 15], [1, 'dataloader', 15, 20], [2, 'compute', 20, 50]]);
  assert.deepEqual(stripLayout(null, 0, 3), { spanUs: 0, rects: [], steps: [] });
});

test('two kernels whose shortened names read alike show where they differ', () => {
  const stem = `void k<${'x'.repeat(120)}`;
  const names = [`${stem}, float>(int)`, `${stem}, half>(int)`, 'void other<int>(int)'];
  const shown = distinctNames(names, [true, true, true]);
  assert.notEqual(shown[0], shown[1]);
  assert.ok(shown[0].startsWith('\u2026') && shown[0].includes('float') && shown[1].includes('half'), shown.join(' | '));
  assert.equal(shown[2], 'other<int>');
  assert.deepEqual(distinctNames(['a', 'b'], [false, false]), ['a', 'b']);
});
