import assert from 'node:assert/strict';
import test from 'node:test';

import { HASH_KEY, decodeState, encodeState, readHash, writeHash } from '../model/urlstate.js';

const STATE = { run: 'resnet50 & co', worker: 'worker0', span: '3f2a9c01b7de', t0Us: 1250.1234, t1Us: 98000, sel: 42 };

test('a state survives encode and decode (times to the nanosecond)', () => {
  const back = decodeState(encodeState(STATE));
  assert.deepEqual(back, { ...STATE, t0Us: 1250.123 });
});

test('empty and partial states encode only what is set', () => {
  assert.equal(encodeState({}), '');
  assert.equal(encodeState({ run: 'r', t0Us: 1 }), 'run=r');
  assert.equal(encodeState({ span: 'ab', sel: -1 }), 'span=ab');
});

test('decodeState drops malformed fields instead of throwing', () => {
  assert.deepEqual(decodeState('t=5,1&sel=abc&span='), {});
  assert.deepEqual(decodeState('t=1,x&sel=1.5'), {});
  assert.deepEqual(decodeState('t=Infinity,5'), {});
  assert.deepEqual(decodeState('sel=0'), { sel: 0 });
});

test('writeHash keeps the TensorBoard tab first and replaces an older state', () => {
  const h1 = writeHash('#kinetoscope', STATE);
  assert.ok(h1.startsWith('#kinetoscope&ks='));
  assert.equal(h1.split('&')[0], '#kinetoscope');
  assert.equal(h1.split('&').length, 2, 'the state is one hash part: its own & are encoded');
  const h2 = writeHash(h1, { run: 'other' });
  assert.equal(h2, `#kinetoscope&${HASH_KEY}=${encodeURIComponent('run=other')}`);
  assert.deepEqual(readHash(h2), { run: 'other' });
  assert.deepEqual(readHash(h1), decodeState(encodeState(STATE)));
});

test('writeHash adds the tab to an empty hash and drops the state part when empty', () => {
  assert.equal(writeHash('', { run: 'r' }, 'kinetoscope'), '#kinetoscope&ks=run%3Dr');
  assert.equal(writeHash('#kinetoscope&ks=run%3Dr', {}), '#kinetoscope');
  assert.equal(writeHash('#a&b=1', { run: 'r' }), '#a&b=1&ks=run%3Dr');
});

test('readHash ignores hashes without a state and broken escapes', () => {
  assert.equal(readHash('#kinetoscope'), null);
  assert.equal(readHash(''), null);
  assert.equal(readHash('#kinetoscope&ks=%E0%A4%A'), null);
});

test('the comparison rides in the state: a baseline run or span, and a candidate run', () => {
  const compared = { ...STATE, base: 'run:before fix & co', candRun: true };
  assert.deepEqual(decodeState(encodeState(compared)), { ...compared, t0Us: 1250.123 });
  assert.deepEqual(readHash(writeHash('#kinetoscope', { span: 'ab', base: 'span:0123456789ab' })), { span: 'ab', base: 'span:0123456789ab' });
  assert.equal(encodeState({ base: 'nonsense', candRun: true }), '');
  assert.deepEqual(decodeState('base=file:/etc/passwd&cand=run'), {});
  assert.deepEqual(decodeState('base=run:r&cand=span'), { base: 'run:r' });
});

test('the area selection rides in the link, malformed areas are dropped', () => {
  const state = { span: 'ab', a0Us: 100.12345, a1Us: 2000 };
  assert.equal(encodeState(state), 'span=ab&a=100.123%2C2000');
  assert.deepEqual(decodeState(encodeState(state)), { span: 'ab', a0Us: 100.123, a1Us: 2000 });
  assert.equal(encodeState({ span: 'ab', a0Us: 5, a1Us: 5 }), 'span=ab');
  assert.deepEqual(decodeState('a=9,3'), {});
  assert.deepEqual(decodeState('a=x,3'), {});
});

test('the stacked lanes\' aligned step and window ride with the comparison, and only with it', () => {
  const compared = { span: 'ab', base: 'span:0123456789ab', step: 3, cw0Us: -5100.12345, cw1Us: 170000 };
  assert.deepEqual(decodeState(encodeState(compared)), { ...compared, cw0Us: -5100.123 });
  assert.equal(encodeState({ span: 'ab', step: 3, cw0Us: 0, cw1Us: 1 }), 'span=ab', 'no baseline: nothing of it');
  assert.equal(encodeState({ base: 'run:r', step: 0, cw0Us: 5, cw1Us: 1 }), 'base=run%3Ar');
  assert.deepEqual(decodeState('base=run:r&step=2.5&cw=1,x'), { base: 'run:r' });
  assert.deepEqual(decodeState('step=2&cw=-1,4'), {}, 'without a baseline they are dropped');
  assert.deepEqual(decodeState('base=run:r&step=2&cw=-1,4'), { base: 'run:r', step: 2, cw0Us: -1, cw1Us: 4 });
});
