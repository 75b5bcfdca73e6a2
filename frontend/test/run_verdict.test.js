import assert from 'node:assert/strict';
import test from 'node:test';

import { RunVerdictPoller } from '../ui/run_verdict.js';

/** A poller over a fake api (answers queued per call) and an instant, abortable sleep. */
function setup(answers) {
  const s = { asked: [], seen: [], errors: [], sleeps: 0, visible: true };
  const api = { get: async (route, params, signal) => {
    assert.equal(route, 'verdict');
    s.asked.push(params.run);
    const next = answers.shift();
    if (next instanceof Error) throw next;
    if (typeof next === 'function') return next(signal);
    return next;
  } };
  const sleep = async (ms, signal) => {
    s.sleeps++;
    if (s.sleeps === s.showAfter) s.visible = true;
    await new Promise((resolve) => setImmediate(resolve));
    if (signal?.aborted) {
      const err = new Error('aborted');
      err.name = 'AbortError';
      throw err;
    }
  };
  s.poller = new RunVerdictPoller(api, (a) => s.seen.push(a), (e) => s.errors.push(e), { pollMs: 1, sleep, visible: () => s.visible });
  return s;
}

test('asks again while spans are pending, stops at 0', async () => {
  const s = setup([{ run: 'r', pending: 1 }, { run: 'r', pending: 1 }, { run: 'r', pending: 0 }]);
  await s.poller.start('r');
  assert.deepEqual(s.asked, ['r', 'r', 'r']);
  assert.deepEqual(s.seen.map((a) => a.pending), [1, 1, 0]);
  assert.equal(s.poller.latest.pending, 0);
  assert.equal(s.errors.length, 0);
});

test('a new run stops the old polling and its late answer is dropped', async () => {
  let release;
  const late = (signal) => new Promise((resolve) => { release = () => resolve({ run: 'old', pending: 0 }); signal.addEventListener('abort', () => {}); });
  const s = setup([late, { run: 'new', pending: 0 }]);
  const first = s.poller.start('old');
  await new Promise((resolve) => setImmediate(resolve));
  const second = s.poller.start('new');
  release();
  await Promise.all([first, second]);
  assert.deepEqual(s.seen.map((a) => a.run), ['new']);
  assert.equal(s.poller.latest.run, 'new');
});

test('stop ends polling between asks; errors are reported once', async () => {
  const s = setup([{ run: 'r', pending: 2 }, { run: 'r', pending: 1 }]);
  const done = s.poller.start('r');
  await new Promise((resolve) => setImmediate(resolve));
  s.poller.stop();
  await done;
  assert.equal(s.asked.length, 1);
  assert.equal(s.poller.latest, null);
  const f = setup([new Error('HTTP 500')]);
  await f.poller.start('r');
  assert.equal(f.errors.length, 1);
  assert.deepEqual(f.seen, []);
});

test('no ask while the plugin is hidden; polling goes on once it is shown', async () => {
  const s = setup([{ run: 'r', pending: 1 }, { run: 'r', pending: 0 }]);
  s.showAfter = 4;
  const done = s.poller.start('r');
  await new Promise((resolve) => setImmediate(resolve));
  s.visible = false;
  await done;
  assert.equal(s.asked.length, 2);
  assert.equal(s.sleeps, 4, 'three pauses while hidden, one more: no request meanwhile');
});
