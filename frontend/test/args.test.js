import assert from 'node:assert/strict';
import test from 'node:test';

import { argRows } from '../model/args.js';

test('argRows keeps key order and writes scalars and flat lists plainly', () => {
  const rows = argRows({ grid: [98, 8, 1], 'est. achieved occupancy %': 50, 'Input type': ['float', ''], ok: true, none: null,
    'Input Dims': [[8, 3], []], nested: { a: { b: 1 } } });
  assert.deepEqual(rows.map((r) => [r.key, r.text]), [['grid', '[98, 8, 1]'], ['est. achieved occupancy %', '50'],
    ['Input type', '["float", ""]'], ['ok', 'true'], ['none', 'null'], ['Input Dims', '[[8,3],[]]'], ['nested', '{"a":{"b":1}}']]);
  assert.ok(rows.every((r) => !r.multiline));
});

test('argRows puts one stack frame per line, from a string or a list', () => {
  const [legacy] = argRows({ 'Call stack': 'train.py(12): step;torch/nn/module.py(1): _call_impl;' });
  assert.equal(legacy.text, 'train.py(12): step\ntorch/nn/module.py(1): _call_impl');
  assert.ok(legacy.multiline);
  const [listed] = argRows({ stack: ['a.py(1): f', 'b.py(2): g'] });
  assert.equal(listed.text, 'a.py(1): f\nb.py(2): g');
});

test('argRows gives no rows for anything but an object', () => {
  for (const value of [null, undefined, [], 'x', 3]) assert.deepEqual(argRows(value), []);
  assert.deepEqual(argRows({}), []);
});

test('argRows leaves markup-like strings as text (the panel writes text nodes)', () => {
  const [row] = argRows({ name: '<img src=x onerror=alert(1)>' });
  assert.equal(row.text, '<img src=x onerror=alert(1)>');
});
