import assert from 'node:assert/strict';
import test from 'node:test';

import { RANK_COLUMNS, heatStyle, heatmap, isMultiRank, ranksSummary, relativeLuminance, stragglerSavingText, stragglerText } from '../model/ranks.js';

const view = {
  world_size: 4, ranks_present: 3, missing_ranks: [2], partial: true, steps: [2, 3], matched_instances: 2,
  ranks: [
    { rank: 0, worker: 'rank0', id: 'a', step_us: [100, 200], verdict: 'cpu-only', overlap_pct: null },
    { rank: 1, worker: 'rank1', id: 'b', step_us: [400, null], verdict: 'cpu-only', overlap_pct: 12.345 },
    { rank: 3, worker: 'rank3', id: 'c', step_us: [100, 100], verdict: 'cpu-only', overlap_pct: 0 },
  ],
  wait_by_step_us: [[40, 40], [0, 0], [40, 10]],
  stragglers: [{ rank: 1, worker: 'rank1', waited_for: 2, of: 2, caused_wait_us: 80000, steps_last: [2, 3],
    doing: [{ name: 'aten::mm', self_us: 75000 }], slow_steps: true }],
};

test('a run is multi-rank with two workers or more', () => {
  const runs = [{ name: 'a', workers: [{ name: 'w0', spans: [] }] }, { name: 'b', workers: [{ name: 'r0', spans: [] }, { name: 'r1', spans: [] }] }];
  assert.equal(isMultiRank(runs, 'a'), false);
  assert.equal(isMultiRank(runs, 'b'), true);
  assert.equal(isMultiRank(runs, 'zz'), false);
});

test('heatmap cells are fractions of the largest value, gaps stay empty', () => {
  const steps = heatmap(view, 'step');
  assert.deepEqual(steps.steps, [2, 3]);
  assert.deepEqual(steps.rows[1].cells, [{ value: 400, frac: 1 }, { value: null, frac: 0 }]);
  assert.equal(steps.rows[0].cells[1].frac, 0.5);
  const wait = heatmap(view, 'wait');
  assert.deepEqual(wait.rows.map((r) => r.cells.map((c) => c.value)), [[40, 40], [0, 0], [40, 10]]);
  assert.equal(wait.rows[2].id, 'c');
  assert.deepEqual(heatmap(null, 'step'), { steps: [], rows: [] });
});

test('stragglers and the summary read as sentences', () => {
  const text = stragglerText(view.stragglers[0]);
  assert.match(text, /^Rank 1 \(rank1\) holds the others back: they waited for it in 2 of 2 collectives, 80(\.0)? ms in all; last in steps 2, 3/);
  assert.match(text, /aten::mm \(75(\.0)? ms\)/);
  assert.match(text, /slower outside communication/);
  assert.equal(ranksSummary(view), '3 of 4 ranks present; missing: 2 (figures among the ranks present); 2 collectives matched across ranks');
  assert.match(ranksSummary({ ...view, stragglers: [], missing_ranks: [] }), /no rank held the others back$/);
  // while ranks still load, those not in the view yet are not called missing, and no verdict is drawn yet
  assert.equal(ranksSummary({ ...view, stragglers: [] }, 1),
    '3 of 4 ranks loaded, 1 still loading (figures so far, among the ranks loaded); 2 collectives matched across ranks');
});

test('every column shows a value for a sparse row', () => {
  for (const c of RANK_COLUMNS) assert.equal(typeof c.show({ rank: 0, worker: 'w' }), 'string', c.key);
  assert.equal(RANK_COLUMNS.find((c) => c.key === 'overlap_pct').show(view.ranks[1]), '12.3%');
});

test('the straggler carries its saving, replayed with straggler=median', () => {
  const view = { straggler_whatif: { edit: 'straggler=median', recorded_median_step_us: 14200, median_step_us: 12100, saving_us: 2100, saving_share: 0.1479 } };
  const text = stragglerSavingText(view);
  assert.match(text, /straggler=median/);
  assert.match(text, /14\.2 ms to 12\.1 ms/);
  assert.match(text, /2\.1 ms per step \(14\.8%\)/);
  assert.doesNotMatch(text, /extra work/);
  const named = stragglerSavingText({ straggler_whatif: { ...view.straggler_whatif, removed_us: 2100,
    extra_work: [{ rank: 2, names: [{ name: 'aten::mm', per_step_us: 1800 }, { name: '(untraced)', per_step_us: 300 }] }] } });
  assert.match(named, /Rank 2's extra work per step, beyond the median rank's: aten::mm 1\.8 ms, \(untraced\) 300 µs\./);
  assert.equal(stragglerSavingText({}), '');
  assert.equal(stragglerSavingText({ straggler_whatif: { saving_us: 'x' } }), '');
});

test('heatmap cells: text at 4.5:1 or more on every shade, black on light cells and white on dark ones', () => {
  const contrast = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const rgbOf = (css) => (css.startsWith('#') ? (css === '#000' ? [0, 0, 0] : [255, 255, 255]) : css.match(/\d+/g).map(Number));
  for (let k = 0; k <= 200; k++) {
    const { background, color } = heatStyle(k / 200);
    const ratio = contrast(relativeLuminance(rgbOf(background)), relativeLuminance(rgbOf(color)));
    assert.ok(ratio >= 4.5, `frac ${k / 200}: ${color} on ${background} is ${ratio.toFixed(2)}:1`);
  }
  assert.equal(heatStyle(0).color, '#000');
  assert.equal(heatStyle(1).color, '#fff');
  assert.deepEqual(heatStyle(Number.NaN), heatStyle(0));
  assert.equal(relativeLuminance([255, 255, 255]), 1);
});

test('the process groups, their health and the clocks of a 2-D job read as rows and one sentence', async () => {
  const { groupRows, clockText } = await import('../model/ranks.js');
  const view = {
    process_groups: [{ name: '1', desc: 'tp', ranks: [0, 1], collectives: 6, matched_instances: 6, skew_us_median: 3000,
      waited_for: { rank: 0, instances: 6, of: 6 } }, { name: '3', desc: null, ranks: [0, 2], collectives: 3, matched_instances: 2,
      skew_us_median: null, waited_for: null }, null],
    clock_offsets: { reference_rank: 0, ranks: [{ rank: 0, offset_us: 0, spread_us: 0 }, { rank: 1, offset_us: 2900, spread_us: 0 },
      { rank: 3, offset_us: null, spread_us: null }] },
  };
  const rows = groupRows(view);
  assert.deepEqual(rows.map((r) => [r.desc, r.name, r.ranks, r.matched, r.waitedFor]),
    [['tp', '1', '0, 1', 6, 'rank 0 (6 of 6)'], ['\u2013', '3', '0, 2', 2, '\u2013']]);
  assert.match(clockText(view), /against rank 0: rank 1 \+2\.9\d* ms, rank 3 \?/);
  assert.equal(clockText({ clock_offsets: { reference_rank: 0, ranks: [{ rank: 1, offset_us: 0.2, spread_us: 0.5 }] } }), '');
  assert.deepEqual(groupRows({}), []);
});
