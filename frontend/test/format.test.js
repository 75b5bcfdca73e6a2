import assert from 'node:assert/strict';
import test from 'node:test';

import { formatBytes, formatCount, formatDuration, formatNumber, formatShare, formatTick, formatTimestamp } from '../model/format.js';

test('formatDuration picks the unit that keeps 1..1000', () => {
  const cases = [[0, '0 µs'], [0.85, '850 ns'], [12.345, '12.3 µs'], [999, '999 µs'], [4560, '4.56 ms'],
    [1_200_000, '1.2 s'], [-2500, '\u22122.5 ms'], [null, '\u2013'], [NaN, '\u2013']];
  for (const [us, text] of cases) assert.equal(formatDuration(us), text, String(us));
});

test('formatBytes uses binary units', () => {
  const cases = [[0, '0 B'], [512, '512 B'], [1536, '1.5 KiB'], [2791636480, '2.6 GiB'], [-1048576, '\u22121 MiB'],
    [undefined, '\u2013']];
  for (const [b, text] of cases) assert.equal(formatBytes(b), text, String(b));
});

test('formatShare and formatCount', () => {
  assert.equal(formatShare(0.314), '31.4%');
  assert.equal(formatShare(1), '100.0%');
  assert.equal(formatShare(null), '\u2013');
  assert.equal(formatCount(44666), '44,666');
  assert.equal(formatCount(999), '999');
  assert.equal(formatCount(1234567), '1,234,567');
  assert.equal(formatCount(-1806), '\u22121,806');
  assert.equal(formatNumber(1234.5678), '1,234.57');
  assert.equal(formatNumber(-0.001), '0');
  assert.equal(formatNumber(2.5, 0), '3');
});

test('formatTick follows the grid step', () => {
  assert.equal(formatTick(1250, 50, 1400), '1.25 ms');
  assert.equal(formatTick(1000, 50, 1400), '1.00 ms');
  assert.equal(formatTick(1_234_550, 50, 1_234_600), '1.23455 s');
  assert.equal(formatTick(2000, 1000, 5000), '2 ms');
  assert.equal(formatTick(0, 1000, 5000), '0 ms');
  assert.equal(formatTick(400, 200, 900), '400 µs');
  assert.equal(formatTick(0.5, 0.1, 0.9), '500 ns');
  assert.equal(formatTick(1.5, 0.5, 2), '1.5 µs');
  assert.equal(formatTick(2_500_000, 500_000, 3e6), '2.5 s');
  assert.equal(formatTick(1.00002, 0.00001, 1.00005), '1.00002 µs');
});

test('formatTimestamp keeps microseconds', () => {
  assert.equal(formatTimestamp(12.3456), '12.346 µs');
  assert.equal(formatTimestamp(100181), '100.181 ms');
  assert.equal(formatTimestamp(1065723), '1.065723 s');
  assert.equal(formatTimestamp(0), '0 µs');
  assert.equal(formatTimestamp(undefined), '\u2013');
});
