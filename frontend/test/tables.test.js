import assert from 'node:assert/strict';
import test from 'node:test';
import { areaFromDrag, defaultSort, nameTitle, nextSort, searchLabel, searchStep, tableColumns } from '../model/tables.js';

test('columns per table, module names its first column', () => {
  assert.equal(tableColumns('op')[0].head, 'Operator');
  assert.equal(tableColumns('module')[0].head, 'Module');
  assert.ok(tableColumns('kernel').some((c) => c.key === 'launched_by'));
  assert.equal(defaultSort('kernel'), '-total');
  assert.equal(defaultSort('op'), '-gpu_total');
  assert.equal(tableColumns('op', 'stack')[1].key, 'frame');
  assert.equal(tableColumns('op', 'shape')[1].key, 'shapes');
  assert.equal(tableColumns('op', 'module')[1].key, 'module');
  assert.equal(tableColumns('op', 'name')[1].key, 'calls');
  assert.equal(tableColumns('module', 'stack')[1].key, 'calls');
});

test('sort toggles on the same column and starts descending on a new one', () => {
  const cols = tableColumns('op');
  const calls = cols.find((c) => c.key === 'calls');
  const name = cols[0];
  assert.equal(nextSort('-gpu_total', calls), '-calls');
  assert.equal(nextSort('-calls', calls), 'calls');
  assert.equal(nextSort('calls', calls), '-calls');
  assert.equal(nextSort('-calls', name), 'name');
  assert.equal(nextSort('-calls', { ...name, sort: '' }), '-calls');
});

test('an area from a drag, either direction, clamped; a click is none', () => {
  const scale = { xToT: (x) => x * 10 };
  const bounds = { t0Us: 0, t1Us: 1000 };
  assert.deepEqual(areaFromDrag(10, 30, scale, bounds), { t0Us: 100, t1Us: 300 });
  assert.deepEqual(areaFromDrag(30, 10, scale, bounds), { t0Us: 100, t1Us: 300 });
  assert.deepEqual(areaFromDrag(90, 200, scale, bounds), { t0Us: 900, t1Us: 1000 });
  assert.equal(areaFromDrag(10, 11, scale, bounds), null);
  assert.equal(areaFromDrag(150, 200, scale, bounds), null);
});

test('search steps wrap and ask for the page that holds the hit', () => {
  const page = { offset: 0, count: 100, limit: 100 };
  assert.deepEqual(searchStep(0, 1, 250, page), { n: 1, fetchOffset: null });
  assert.deepEqual(searchStep(99, 1, 250, page), { n: 100, fetchOffset: 100 });
  assert.deepEqual(searchStep(0, -1, 250, page), { n: 249, fetchOffset: 200 });
  assert.deepEqual(searchStep(249, 1, 250, { offset: 200, count: 50, limit: 100 }), { n: 0, fetchOffset: 0 });
  assert.deepEqual(searchStep(0, 1, 0, page), { n: -1, fetchOffset: null });
  assert.equal(searchLabel(2, 120), '3 of 120');
  assert.equal(searchLabel(-1, 0), 'no match');
});

test('a cut name says so in its title, with its full length and key; a whole name is just itself', () => {
  assert.equal(nameTitle({ name: 'gemm' }), 'gemm');
  const cut = `${'x'.repeat(999)}\u2026`;
  assert.equal(nameTitle({ name: cut, name_key: '0123456789abcdef', name_chars: 1502 }),
    `${cut}\n(cut: the trace's name has 1,502 characters; key 0123456789abcdef)`);
  assert.equal(nameTitle({}), '');
});

test('a trace without device activity: no GPU columns in the op table, ops sorted by CPU time', () => {
  const keys = (cols) => cols.map((c) => c.key);
  assert.ok(keys(tableColumns('op')).includes('gpu_total_us'));
  const cpu = keys(tableColumns('op', 'name', false));
  assert.ok(!cpu.some((k) => k.startsWith('gpu_')) && !cpu.includes('launches') && cpu.includes('cpu_self_us'));
  assert.equal(defaultSort('op', false), '-cpu_total');
  assert.equal(defaultSort('op'), '-gpu_total');
  assert.equal(defaultSort('kernel', false), '-total');
});
