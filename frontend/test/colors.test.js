import assert from 'node:assert/strict';
import test from 'node:test';

import { GAP_CAUSES, eventColor, gapColor, gapSolid, gapText, hashString } from '../model/colors.js';

test('every cause the analyses emit, in the project order, has a distinct colour', () => {
  const causes = GAP_CAUSES.map((c) => c.cause);
  assert.deepEqual(causes, ['dataloader', 'comm', 'sync', 'host', 'launch', 'graph', 'unlinked']);
  assert.equal(new Set(GAP_CAUSES.map((c) => c.solid)).size, causes.length);
  assert.equal(new Set(GAP_CAUSES.map((c) => c.color)).size, causes.length);
  assert.equal(gapColor('nonsense'), gapColor('unlinked'));
  assert.equal(gapSolid('nonsense'), gapSolid('unlinked'));
  assert.equal(gapSolid('host'), '#1565c0');
  assert.equal(gapSolid('comm'), '#00838f');
  assert.notEqual(gapColor('graph'), gapColor('unlinked'));
});

test('every cause has a legend text; unknown causes have none', () => {
  for (const c of GAP_CAUSES) assert.ok(gapText(c.cause).length > 10, c.cause);
  assert.match(gapText('comm'), /collective/);
  assert.match(gapText('graph'), /CUDA graph/);
  assert.equal(gapText('nonsense'), '');
});

test('event colours are stable per name and greyer when merged', () => {
  assert.equal(hashString('abc'), hashString('abc'));
  assert.notEqual(hashString('abc'), hashString('abd'));
  assert.equal(eventColor('kernel', 'sgemm', false), eventColor('kernel', 'sgemm', false));
  assert.match(eventColor('kernel', 'x', true), /^hsl\(28 45% 62%\)$/);
  assert.match(eventColor('unknown-kind', 'x', false), /^hsl\(0 0% \d+%\)$/);
});
