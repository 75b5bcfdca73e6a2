import assert from 'node:assert/strict';
import test from 'node:test';

import { WindowedLoader } from '../ui/windowed.js';

const tick = (ms = 60) => new Promise((resolve) => setTimeout(resolve, ms));

/** A source whose view is `view.t` and whose payload serves when it was fetched for that view. */
function source() {
  const s = { view: { t: 0 }, fetched: [], accepted: [], failed: [], release: [] };
  s.api = {
    fetch: (signal) => {
      const t = s.view.t;
      s.fetched.push(t);
      return new Promise((resolve, reject) => {
        s.release.push(() => resolve({ t }));
        signal.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })));
      });
    },
    serves: (p) => p.t === s.view.t,
    accept: (p) => s.accepted.push(p.t),
    fail: (err) => s.failed.push(err),
  };
  return s;
}

test('one request in flight; a follow-up asks for the view as it is when the first returns', async () => {
  const s = source();
  const loader = new WindowedLoader(s.api);
  loader.update();
  await tick();
  s.view.t = 1;
  loader.update();
  s.view.t = 2;
  loader.update();
  assert.deepEqual(s.fetched, [0]);
  s.release.shift()();
  await tick();
  assert.deepEqual(s.accepted, [0]);
  assert.deepEqual(s.fetched, [0, 2]);
  s.release.shift()();
  await tick();
  assert.deepEqual(s.accepted, [0, 2]);
  loader.update();
  await tick();
  assert.deepEqual(s.fetched, [0, 2], 'a payload that serves is not refetched');
});

test('reset drops the answer of the previous span', async () => {
  const s = source();
  const loader = new WindowedLoader(s.api);
  loader.update();
  await tick();
  const old = s.release.shift();
  loader.reset();
  s.view.t = 5;
  loader.update();
  await tick();
  old();
  await tick();
  assert.deepEqual(s.accepted, []);
  s.release.shift()();
  await tick();
  assert.deepEqual(s.accepted, [5]);
});

test('a failed request is not retried before retryMs, nor after a reset', async () => {
  const s = source();
  const api = { ...s.api, fetch: async () => { throw new Error('boom'); } };
  const loader = new WindowedLoader(api, 200);
  loader.update();
  await tick();
  s.view.t = 1;
  loader.update();
  await tick();
  assert.equal(s.failed.length, 1);
  await tick(200);
  loader.update();
  await tick();
  assert.equal(s.failed.length, 2);
  loader.reset();
  loader.update();
  await tick();
  assert.equal(s.failed.length, 3);
});
