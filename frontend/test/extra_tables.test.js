import assert from 'node:assert/strict';
import test from 'node:test';
import { EXTRA_TABS, extraColumns, extraDefaultSort, launchersText, treeParents, visibleTreeRows } from '../model/extra_tables.js';
import { nextSort } from '../model/tables.js';

test('every extra tab has columns, the tree keeps its order and the others sort by time', () => {
  for (const by of Object.keys(EXTRA_TABS)) assert.ok(extraColumns(by).length > 3, by);
  assert.equal(extraColumns('op'), undefined);
  assert.equal(extraColumns('module_tree')[0].kind, 'tree');
  assert.ok(extraColumns('module_tree').every((c) => c.sort === ''));
  assert.ok(!extraColumns('module_tree').some((c) => c.key === 'replayed_device_us'));
  const replayed = extraColumns('module_tree', { attributed_from: 'self', replayed_device_us: 12 });
  assert.equal(replayed.at(-1).key, 'replayed_device_us');
  assert.equal(extraColumns('module_tree', { rows: 3 }).length, extraColumns('module_tree').length);
  assert.equal(extraDefaultSort('module_tree'), '');
  assert.equal(extraDefaultSort('annotation'), '-total');
  const memory = extraColumns('memory');
  assert.equal(nextSort('', memory.find((c) => c.key === 'peak_increase_bytes')), '-peak_increase');
  assert.equal(nextSort('-total', extraColumns('module_tree')[1]), '-total');
});

test('a collapsed node hides its whole subtree, nothing else', () => {
  // 0 Net > 1 Enc > 2 Linear, 3 ReLU; 4 Head > 5 Linear
  const rows = [[0, -1], [1, 0], [2, 1], [3, 1], [4, 0], [5, 4]].map(([index, parent]) => ({ index, parent }));
  assert.deepEqual(visibleTreeRows(rows, new Set()), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(visibleTreeRows(rows, new Set([1])), [0, 1, 4, 5]);
  assert.deepEqual(visibleTreeRows(rows, new Set([0])), [0]);
  assert.deepEqual(visibleTreeRows(rows, new Set([2, 4])), [0, 1, 2, 3, 4]);
  assert.deepEqual([...treeParents(rows)].sort(), [0, 1, 4]);
  // a page that starts inside the tree: parents outside it count as expanded
  assert.deepEqual(visibleTreeRows(rows.slice(2), new Set([4])), [0, 1, 2]);
});

test('launchers read GPU time on kernel rows and occurrences on sequence rows', () => {
  const us = (v) => `${v} us`;
  assert.equal(launchersText([{ name: 'aten::mm', gpu_us: 5 }], us), 'aten::mm (5 us)');
  assert.equal(launchersText([{ name: 'aten::add_', occurrences: 3 }, { name: '(no op)', occurrences: 1 }], us), 'aten::add_ (3\u00d7), (no op) (1\u00d7)');
  assert.equal(launchersText(undefined, us), '');
});
