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
