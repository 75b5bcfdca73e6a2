import assert from 'node:assert/strict';
import test from 'node:test';

import { PATH_COLORS, pathKind, pathOmittedNote, pathSegments } from '../model/critical_path.js';

test('segments flatten, sort and map to a colour', () => {
  const segs = pathSegments({ steps: [
    { segments: [{ kind: 'stream GPU 0 stream 7', start_us: 30, end_us: 50 }, { kind: 'host', start_us: 0, end_us: 30 }] },
    { segments: [{ kind: 'dataloader', start_us: 60, end_us: 90 }, { kind: 'bogus', start_us: 5, end_us: 1 }, null] }] });
  assert.deepEqual(segs.map((s) => [s.kind, s.startUs]), [['host', 0], ['device', 30], ['dataloader', 60]]);
  assert.equal(pathKind('something new'), 'wait');
  assert.ok(segs.every((s) => PATH_COLORS[s.kind]));
  assert.deepEqual(pathSegments(null), []);
});

test('a segment keeps the lane it lies on, when the answer names a valid one', () => {
  const segs = pathSegments({ steps: [{ segments: [
    { kind: 'host', lane: 0, start_us: 0, end_us: 10 }, { kind: 'launch', lane: 3, start_us: 10, end_us: 12 },
    { kind: 'wait', lane: -1, start_us: 12, end_us: 13 }, { kind: 'wait', lane: 'x', start_us: 13, end_us: 14 }] }] });
  assert.deepEqual(segs.map((s) => s.lane), [0, 3, undefined, undefined]);
});

test('what the answer left out to stay small is said, and nothing when it left nothing out', () => {
  assert.equal(pathOmittedNote({ steps: [{ segments: [] }], total: 1 }), '');
  const answer = { total: 6, steps: [{ segments_omitted: 120, omitted_us: 1500 }, { segments: [] },
    { segments_omitted: 30, omitted_us: 500 }] };
  assert.equal(pathOmittedNote(answer), 'critical path: 150 short segments (2 ms) of 2 steps not drawn, so that every '
    + 'step in view keeps its longest ones; 3 more steps in view not drawn');
});
