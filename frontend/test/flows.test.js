import assert from 'node:assert/strict';
import test from 'node:test';

import { flowsForSelection } from '../model/flows.js';

const FLOWS = {
  launchRow: [10, 11, 12], gpuRow: [20, 21, 22], launchUs: [5, 15, 80], gpuUs: [30, 40, 90],
  launchLane: [0, 0, 1], gpuLane: [3, 3, 3], launchDepth: [1, 1, 0], gpuDepth: [0, 0, 0],
};

test('a kernel selects its own launch flow', () => {
  assert.deepEqual(flowsForSelection(FLOWS, { row: 21, laneId: 3, laneKind: 'gpu', startUs: 40, endUs: 45 }), [1]);
});

test('a launch call selects the flows it starts', () => {
  assert.deepEqual(flowsForSelection(FLOWS, { row: 12, laneId: 1, laneKind: 'cpu', startUs: 80, endUs: 81 }), [2]);
});

test('a CPU op selects every launch inside it on its thread', () => {
  assert.deepEqual(flowsForSelection(FLOWS, { row: 1, laneId: 0, laneKind: 'cpu', startUs: 0, endUs: 20 }), [0, 1]);
  assert.deepEqual(flowsForSelection(FLOWS, { row: 1, laneId: 1, laneKind: 'cpu', startUs: 0, endUs: 20 }), []);
});

test('no selection, no flows', () => {
  assert.deepEqual(flowsForSelection(FLOWS, null), []);
});
