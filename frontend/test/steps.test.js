import assert from 'node:assert/strict';
import test from 'node:test';

import { STEP_COLUMNS, sortSteps, stepColumns, stepValue } from '../model/steps.js';

const keys = (columns) => columns.map((c) => c.key);

test('compute and memcpy always; comm and exposed comm when the span communicates', () => {
  const plain = [{ name: 'ProfilerStep#1', comm_us: 0 }];
  assert.ok(!keys(stepColumns(plain)).includes('comm_us'));
  assert.ok(keys(stepColumns(plain)).includes('compute_us') && keys(stepColumns(plain)).includes('memcpy_us'));
  assert.deepEqual(keys(stepColumns(plain, true)), keys(STEP_COLUMNS));
  assert.ok(keys(stepColumns([{ comm_us: 5 }])).includes('exposed_comm_us'));
});

test('steps sort by name naturally and by numbers, missing values lowest', () => {
  const steps = [{ name: 'ProfilerStep#10', compute_us: 5 }, { name: 'ProfilerStep#9', compute_us: null }, { name: 'ProfilerStep#2', compute_us: 7 }];
  const col = (key) => STEP_COLUMNS.find((c) => c.key === key);
  assert.deepEqual(sortSteps(steps, col('name'), false).map((s) => s.name), ['ProfilerStep#2', 'ProfilerStep#9', 'ProfilerStep#10']);
  assert.deepEqual(sortSteps(steps, col('compute_us'), true).map((s) => s.compute_us), [7, 5, null]);
  assert.equal(stepValue({ stalled: true }, col('stalled')), 1);
  assert.equal(stepValue({}, col('memcpy_us')), -Infinity);
  assert.equal(steps[0].name, 'ProfilerStep#10', 'the input is not reordered');
});

test("torch-tb-profiler's categories follow when the steps carry them; its comm column only with communication", async () => {
  const { TBPROF_STEP_COLUMNS } = await import('../model/steps.js');
  const plain = [{ name: 'ProfilerStep#5', comm_us: 0 }];
  assert.ok(!keys(stepColumns(plain)).some((k) => k.startsWith('tbprof_')));
  const tb = [{ name: 'ProfilerStep#5', comm_us: 0, tbprof_dur_us: 187948, tbprof_kernel_us: 98598, tbprof_dataloader_us: 69317 }];
  const shown = keys(stepColumns(tb));
  assert.deepEqual(shown.slice(-8), ['tbprof_dur_us', 'tbprof_kernel_us', 'tbprof_memcpy_us', 'tbprof_memset_us', 'tbprof_runtime_us',
    'tbprof_dataloader_us', 'tbprof_cpu_exec_us', 'tbprof_other_us']);
  assert.ok(keys(stepColumns(tb, true)).includes('tbprof_communication_us'));
  assert.ok(TBPROF_STEP_COLUMNS.every((c) => c.title && c.kind === 'dur'));
  assert.ok(!keys(stepColumns(tb, false, false)).some((k) => k.startsWith('tbprof_')));  // the table's toggle off
  const col = TBPROF_STEP_COLUMNS.find((c) => c.key === 'tbprof_kernel_us');
  assert.equal(stepValue(tb[0], col), 98598);
});

test("torch-tb-profiler's columns join the step of the same position and name only", async () => {
  const { withTbprof } = await import('../model/steps.js');
  const steps = [{ name: 'ProfilerStep#5' }, { name: 'ProfilerStep#6' }, { name: 'ProfilerStep#7' }];
  const tb = { steps: { name: ['ProfilerStep#5', 'ProfilerStep#X'], dur_us: [187948, 1], kernel_us: [98598, 1], other_us: [1115, 1] } };
  const out = withTbprof(steps, tb);
  assert.equal(out[0].tbprof_dur_us, 187948);
  assert.equal(out[0].tbprof_kernel_us, 98598);
  assert.equal(out[0].tbprof_memcpy_us, undefined);
  assert.equal(out[1].tbprof_dur_us, undefined, 'names differ: not the same step');
  assert.equal(out[2], steps[2]);
  assert.deepEqual(withTbprof(steps, undefined), steps);
  assert.deepEqual(withTbprof(steps, { steps: { name: 'x' } }), steps);
  assert.ok(!('tbprof_dur_us' in steps[0]), 'the input is not changed');
});

test('a trace without device activity: no GPU columns in the step table', () => {
  const keys = stepColumns([{ name: 'ProfilerStep#1', dur_us: 10 }], false, true, false).map((c) => c.key);
  assert.deepEqual(keys, ['name', 'start_us', 'dur_us', 'dataloader_us', 'dataloader_share', 'stalled']);
});
