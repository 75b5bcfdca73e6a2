import assert from 'node:assert/strict';
import test from 'node:test';

import { REFRESH_MS, RunsRefresher } from '../ui/runs_refresh.js';

/** A refresher over a fake clock and visibility; `answer` resolves the pending `runs` request. */
function setup() {
  const s = { nowMs: 0, visible: true, asked: 0, seen: [], errors: [], answer: null };
  const api = { get: (route) => {
    assert.equal(route, 'runs');
    s.asked++;
    return new Promise((resolve, reject) => { s.answer = { resolve, reject }; });
  } };
  s.refresher = new RunsRefresher(api, (body) => s.seen.push(body), (err) => s.errors.push(err),
    { now: () => s.nowMs, visible: () => s.visible });
  return s;
}

test('refreshes every REFRESH_MS while visible, one request at a time', async () => {
  const s = setup();
  s.refresher.check();
  assert.equal(s.asked, 1, 'the first check asks at once');
  s.nowMs = REFRESH_MS * 2;
  s.refresher.check();
  assert.equal(s.asked, 1, 'no second request while one is in flight');
  s.answer.resolve({ runs: [1] });
  await s.refresher.inFlight;
  assert.deepEqual(s.seen, [{ runs: [1] }]);
  s.nowMs += 1000;
  s.refresher.check();
  assert.equal(s.asked, 2, 'the refresh skipped while one was in flight is made up at the next check');
});

test('not due before REFRESH_MS; due after', async () => {
  const s = setup();
  s.refresher.check();
  s.answer.resolve({});
  await s.refresher.inFlight;
  s.nowMs = REFRESH_MS - 1;
  s.refresher.check();
  assert.equal(s.asked, 1);
  s.nowMs = REFRESH_MS;
  s.refresher.check();
  assert.equal(s.asked, 2);
});

test('hidden: no requests; shown again: a refresh at once, due or not', async () => {
  const s = setup();
  s.refresher.check();
  s.answer.resolve({});
  await s.refresher.inFlight;
  s.visible = false;
  for (let t = 1000; t <= 60000; t += 1000) {
    s.nowMs = t;
    s.refresher.check();
  }
  assert.equal(s.asked, 1);
  s.visible = true;
  s.nowMs = 61000;
  s.refresher.check();
  assert.equal(s.asked, 2);
  s.answer.resolve({});
  await s.refresher.inFlight;
  s.nowMs = 62000;
  s.refresher.check();
  assert.equal(s.asked, 2, 'the next one waits the full period again');
});

test('a failed refresh reports and the next one is tried on schedule', async () => {
  const s = setup();
  s.refresher.check();
  s.answer.reject(new Error('offline'));
  await s.refresher.inFlight;
  assert.equal(s.errors.length, 1);
  s.nowMs = REFRESH_MS;
  s.refresher.check();
  assert.equal(s.asked, 2);
});

test('start and stop drive the checks with a timer', async () => {
  const s = setup();
  const refresher = new RunsRefresher({ get: async () => { s.asked++; return {}; } }, () => {}, () => {},
    { visible: () => true, checkMs: 5, refreshMs: 0 });
  refresher.start();
  refresher.start();
  await new Promise((resolve) => setTimeout(resolve, 60));
  refresher.stop();
  const asked = s.asked;
  assert.ok(asked >= 2, `asked ${asked} times`);
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(s.asked, asked, 'no requests after stop');
});

test('a listing taken before the refresher existed is shown as a refresh: the next is due REFRESH_MS later', async () => {
  const s = setup();
  s.nowMs = 1000;
  s.refresher.took({ runs: ['early'] });
  assert.deepEqual(s.seen, [{ runs: ['early'] }]);
  s.refresher.check();
  assert.equal(s.asked, 0, 'not due: the early listing counts');
  s.nowMs = 1000 + REFRESH_MS;
  s.refresher.check();
  assert.equal(s.asked, 1);
  const failing = new RunsRefresher({ get: () => Promise.resolve({}) }, () => { throw new Error('boom'); }, () => {});
  const logged = [];
  const original = console.error;
  console.error = (...args) => logged.push(args);
  try {
    failing.took({}); // a listing the page cannot show is logged, not thrown at the caller
  } finally {
    console.error = original;
  }
  assert.equal(logged.length, 1);
});
