import assert from 'node:assert/strict';
import test from 'node:test';

import { healthItems, healthLine, independentText, unreliableFor, unreliableText } from '../model/health.js';

const SUMMARY = { health: [
  { check: 'cropped', severity: 'warn', found: "no 'Trace' span", affects: ['busy_idle', 'verdict'], effect: 'idle may be an artifact', count: 0 },
  { check: 'pre_window', severity: 'warn', found: '509 of 1,707 launched before', affects: ['busy_idle', 'launch'], effect: 'prior work', count: 509 },
  { check: 'python_stack', severity: 'info', found: 'with_stack', affects: ['host_gaps'], effect: 'inflated', count: 9 },
] };

test('only warnings make a figure unreliable, each named where the figure is', () => {
  assert.deepEqual(unreliableFor(SUMMARY, 'busy_idle').map((h) => h.check), ['cropped', 'pre_window']);
  assert.equal(unreliableText(SUMMARY, 'launch'), 'unreliable: pre_window (see Trace health)');
  assert.equal(unreliableText(SUMMARY, 'host_gaps'), '');
  assert.equal(unreliableText({}, 'busy_idle'), '');
  assert.deepEqual(healthItems({ health: [null, { check: 1 }] }), []);
});

test('a finding reads as what was found and what it does to which figure', () => {
  assert.equal(healthLine(SUMMARY.health[1]), 'pre_window: 509 of 1,707 launched before. Affects device busy and idle time, launch offsets: prior work');
});

test('a folder of independent profiles says so; a job does not', () => {
  const alone = { groups: [{ basis: 'independent', workers: ['a'] }, { basis: 'independent', workers: ['b'] }] };
  assert.match(independentText(alone), /^2 independent profiles, not ranks of one job/);
  assert.equal(independentText({ groups: [{ basis: 'distributedInfo', workers: ['r0', 'r1'] }, { basis: 'independent', workers: ['x'] }] }), '');
  assert.equal(independentText({ groups: [{ basis: 'independent', workers: ['a'] }] }), '');
  assert.equal(independentText(null), '');
});
