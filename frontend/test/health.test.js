import assert from 'node:assert/strict';
import test from 'node:test';

import { FIGURE_NAMES, PANEL_FIGURES, figureWarning, healthItems, healthLine, independentText, unreliableFor, unreliableText } from '../model/health.js';

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

test('a panel is told which of its figures a warning makes unreliable, from the health list alone', () => {
  const health = [
    ...SUMMARY.health,
    { check: 'kernel_causality', severity: 'warn', found: '3 early', affects: ['launch', 'busy_idle'], effect: 'clocks disagree', count: 3 },
    { check: 'backward_seq', severity: 'warn', found: 'dup seq', affects: ['op_table'], effect: 'misattributed', count: 2 },
    { check: 'partial_job', severity: 'info', found: 'rank 0 of 8', affects: ['comm'], effect: 'others elsewhere', count: 8 },
  ];
  assert.equal(figureWarning(health, PANEL_FIGURES.launch), 'unreliable: launch offsets (pre_window, kernel_causality); see Trace health');
  assert.equal(figureWarning(health, 'launch'), figureWarning(health, ['launch', 'launch']));
  assert.equal(figureWarning(health, PANEL_FIGURES.opTable), 'unreliable: backward operator attribution (backward_seq); see Trace health');
  assert.equal(figureWarning(health, PANEL_FIGURES.kernelTable), null);
  assert.equal(figureWarning(health, PANEL_FIGURES.gaps),
    'unreliable: device busy and idle time (cropped, pre_window, kernel_causality); see Trace health');
  assert.equal(figureWarning(health, PANEL_FIGURES.comm), null, 'an info item never marks a figure');
  assert.equal(figureWarning(health, 'nobody_knows'), null);
});

test('a figure key the tab does not name is shown as sent; old or hostile answers mark nothing', () => {
  const odd = [{ check: '<img src=x onerror=alert(1)>', severity: 'warn', affects: ['new_figure'], found: '', effect: '' }];
  assert.equal(figureWarning(odd, 'new_figure'), 'unreliable: new_figure (<img src=x onerror=alert(1)>); see Trace health');
  for (const bad of [undefined, null, {}, 'warn', [null, 7, { check: 'x', severity: 'warn', affects: 'launch' }]]) {
    assert.equal(figureWarning(bad, PANEL_FIGURES.launch), null);
  }
  assert.equal(figureWarning([{ check: 'a', severity: 'warn', affects: ['launch'] }, { check: 'a', severity: 'warn', affects: ['launch'] }], 'launch'),
    'unreliable: launch offsets (a); see Trace health');
});

test('every figure a panel asks about has a name in the tab', () => {
  for (const figures of Object.values(PANEL_FIGURES)) for (const f of figures) assert.ok(f in FIGURE_NAMES, f);
});
