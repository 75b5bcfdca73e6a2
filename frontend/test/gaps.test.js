import assert from 'node:assert/strict';
import test from 'node:test';

import { causeParam, composeCulprit, culpritGroups, gapCulprit } from '../model/gaps.js';

test('the cause filter: none when every cause is ticked, else the ticked ones in order', () => {
  const all = ['dataloader', 'comm', 'sync', 'host', 'launch', 'graph', 'unlinked'];
  assert.equal(causeParam(all), null);
  assert.equal(causeParam(new Set(['graph', 'sync', 'comm'])), 'comm,sync,graph');
  assert.equal(causeParam(['host', 'bogus']), 'host');
  assert.equal(causeParam([]), '');
});

test('culprits compose like the server labels', () => {
  assert.deepEqual(composeCulprit('aten::mm'), { text: 'aten::mm', annotation: '', label: 'aten::mm' });
  assert.equal(composeCulprit('aten::mm', { after: true }).label, 'after aten::mm');
  assert.equal(composeCulprit('cudaStreamSynchronize', { caller: 'aten::item' }).label, 'cudaStreamSynchronize in aten::item');
  assert.deepEqual(composeCulprit('aten::ones_like', { after: true, annotation: 'Optimizer.step#SGD.step' }),
    { text: 'after aten::ones_like', annotation: 'Optimizer.step#SGD.step', label: 'after aten::ones_like in Optimizer.step#SGD.step' });
  assert.deepEqual(composeCulprit(null, { after: true, annotation: 'x' }), { text: '', annotation: '', label: '' });
});

test('a gaps row resolves culprit, caller and annotation through names', () => {
  const names = ['cudaStreamSynchronize', 'aten::item', '<img src=x onerror=alert(1)>', 'aten::relu'];
  const gaps = { culprit: [0, 3, -1, 3], culprit_after: [false, true, false, false], caller: [1, -1, -1, 99], annotation: [2, -1, 2, -1] };
  assert.deepEqual(gapCulprit(names, gaps, 0), { text: 'cudaStreamSynchronize in aten::item', annotation: names[2],
    label: `cudaStreamSynchronize in aten::item in ${names[2]}` });
  assert.equal(gapCulprit(names, gaps, 1).label, 'after aten::relu');
  assert.equal(gapCulprit(names, gaps, 2).label, '', 'no culprit: nothing, not the annotation alone');
  assert.equal(gapCulprit(names, gaps, 3).label, 'aten::relu', 'an index out of range is none');
  assert.equal(gapCulprit(names, { culprit: [3] }, 0).label, 'aten::relu', 'older answers without the new columns');
});

test('top-culprit lists of a device: host, sync and comm, empty ones left out', () => {
  const device = { device: 0, gaps: {
    top_culprits: [{ name: 'aten::fill_', annotation: 'Optimizer.zero_grad#SGD.zero_grad', label: 'aten::fill_ in Optimizer.zero_grad#SGD.zero_grad', idle_us: 22437 }],
    top_sync_culprits: [{ name: 'cudaStreamSynchronize in aten::copy_', annotation: null, label: 'cudaStreamSynchronize in aten::copy_', idle_us: 2641 }],
    top_comm_culprits: [] } };
  const groups = culpritGroups(device);
  assert.deepEqual(groups.map((g) => [g.key, g.title]), [['top_culprits', 'host gaps'], ['top_sync_culprits', 'sync gaps']]);
  assert.deepEqual(groups[0].rows[0], { text: 'aten::fill_', annotation: 'Optimizer.zero_grad#SGD.zero_grad',
    label: 'aten::fill_ in Optimizer.zero_grad#SGD.zero_grad', idleUs: 22437 });
  assert.equal(groups[1].rows[0].annotation, '');
  assert.deepEqual(culpritGroups({ gaps: {} }), []);
  assert.deepEqual(culpritGroups(null), []);
});
