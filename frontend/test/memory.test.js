import assert from 'node:assert/strict';
import test from 'node:test';

import { memoryLabels, memoryNote, reservedRecorded } from '../model/memory.js';

test('byte-delta traces: relative allocation, reserved not recorded', () => {
  const old = { device: 'cuda:0', relative: true, reserved_bytes: null, peak_reserved_bytes: null };
  assert.equal(reservedRecorded(old), false);
  assert.deepEqual(memoryLabels(old), { allocated: 'allocated, relative to the start of the trace', allocatedShort: 'allocated (relative)',
    reserved: 'reserved: not recorded', reservedShort: 'reserved: not recorded', recorded: false });
  assert.equal(memoryNote(old),
    'cuda:0: allocated, relative to the start of the trace (the trace records changes only); reserved: not recorded');
  assert.equal(reservedRecorded({ relative: true, peak_reserved_bytes: null }), false, 'a summary.memory row');
});

test('full traces: plain labels, no note; a reserved peak of 0 is recorded', () => {
  const full = { device: 'cpu', relative: false, reserved_bytes: [0, 0], peak_reserved_bytes: 0 };
  assert.equal(reservedRecorded(full), true);
  assert.equal(memoryLabels(full).allocated, 'allocated');
  assert.equal(memoryLabels(full).reserved, 'reserved');
  assert.equal(memoryNote(full), '');
  assert.equal(memoryNote({ device: 'cpu', relative: false, reserved_bytes: null }), 'cpu: reserved: not recorded');
});
