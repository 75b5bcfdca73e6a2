import assert from 'node:assert/strict';
import test from 'node:test';

import { Api } from '../api.js';
import { forgetUnready, getWhenLanesReady, getWhenReady, lanesAvailable, learnReady, waitLanes } from '../loading.js';

/** A minimal Response stand-in. */
const reply = (status, body) => ({
  ok: status >= 200 && status < 300,
  status,
  statusText: '',
  headers: { get: (k) => (k.toLowerCase() === 'content-type' ? 'application/json' : null) },
  text: async () => JSON.stringify(body),
  json: async () => body,
});

/** An Api over a fake server: `status` answers the next of `states`, data routes `data(url)`. */
function fakeServer(states, data = () => reply(200, { ok: 1 })) {
  const urls = [];
  const api = new Api(async (url) => {
    urls.push(url);
    if (url.startsWith('status')) {
      const state = states.length > 1 ? states.shift() : states[0];
      return reply(200, { traces: [{ id: 'a', state, error: state === 'error' ? 'run/x.json: truncated' : null }] });
    }
    return data(url);
  });
  return { api, urls };
}

test('the first request of a span polls status with load=1 until ready, then asks the route: no 409', async () => {
  const { api, urls } = fakeServer(['queued', 'loading', 'ready']);
  assert.deepEqual(await getWhenReady(api, 'summary', { span: 'a' }), { ok: 1 });
  assert.deepEqual(urls, ['status?span=a&load=1&wait_ms=1500', 'status?span=a&load=1&wait_ms=1500', 'status?span=a&load=1&wait_ms=1500', 'summary?span=a']);
});

test('a span seen ready is asked directly; a listing showing it not ready sends it back to waiting', async () => {
  const { api, urls } = fakeServer(['ready']);
  await getWhenReady(api, 'summary', { span: 'a' });
  await getWhenReady(api, 'lanes', { span: 'a', width_px: 10 });
  assert.deepEqual(urls, ['status?span=a&load=1&wait_ms=1500', 'summary?span=a', 'lanes?span=a&width_px=10']);
  forgetUnready(api, [{ id: 'b', state: 'loading' }, { id: 'a', state: 'ready' }]);
  await getWhenReady(api, 'stalls', { span: 'a' });
  assert.equal(urls.at(-1), 'stalls?span=a');
  forgetUnready(api, [{ id: 'a', state: 'unloaded' }]);
  await getWhenReady(api, 'stalls', { span: 'a' });
  assert.deepEqual(urls.slice(-2), ['status?span=a&load=1&wait_ms=1500', 'stalls?span=a']);
});

test('ready spans are remembered per Api', async () => {
  const first = fakeServer(['ready']);
  await getWhenReady(first.api, 'summary', { span: 'a' });
  const second = fakeServer(['ready']);
  await getWhenReady(second.api, 'summary', { span: 'a' });
  assert.equal(second.urls[0], 'status?span=a&load=1&wait_ms=1500');
});

test('a 409 after all (evicted meanwhile) waits on status again, then retries', async () => {
  let summaries = 0;
  const { api, urls } = fakeServer(['ready'], () => (++summaries === 2
    ? reply(409, { error: { message: 'unloaded' }, state: 'unloaded' }) : reply(200, { ok: summaries })));
  await getWhenReady(api, 'summary', { span: 'a' });
  assert.deepEqual(await getWhenReady(api, 'summary', { span: 'a' }), { ok: 3 });
  assert.deepEqual(urls, ['status?span=a&load=1&wait_ms=1500', 'summary?span=a', 'summary?span=a', 'status?span=a&load=1&wait_ms=1500', 'summary?span=a']);
});

test('a failed load is a 422 with the loader message, without asking the route', async () => {
  const { api, urls } = fakeServer(['loading', 'error']);
  await assert.rejects(getWhenReady(api, 'lanes', { span: 'a' }), (e) => e.status === 422 && /truncated/.test(e.message));
  assert.ok(urls.every((u) => u.startsWith('status')));
});

test('route errors and status errors pass through; an abort stops the polling', async () => {
  const failing = fakeServer(['ready'], () => reply(404, { error: { message: 'no row 7' } }));
  await assert.rejects(getWhenReady(failing.api, 'event', { span: 'a', row: 7 }), (e) => e.status === 404 && e.message === 'no row 7');
  const gone = new Api(async () => reply(404, { error: { message: "unknown span 'a'" } }));
  await assert.rejects(getWhenReady(gone, 'summary', { span: 'a' }), (e) => e.status === 404);
  const slow = fakeServer(['loading']);
  const controller = new AbortController();
  const pending = getWhenReady(slow.api, 'summary', { span: 'a' }, controller.signal);
  setTimeout(() => controller.abort(), 50);
  await assert.rejects(pending, (e) => e.name === 'AbortError');
  assert.ok(slow.urls.every((u) => u.startsWith('status')));
});

test('a server that held the long poll is asked again at once; one that answered early, after a delay', async () => {
  let calls = 0;
  const stamps = [];
  const api = new Api(async (url) => {
    stamps.push(Date.now());
    if (!url.startsWith('status')) return reply(200, { ok: 1 });
    calls++;
    await new Promise((r) => setTimeout(r, 800)); // the server waits for the load, then answers
    return reply(200, { traces: [{ id: 'a', state: calls < 3 ? 'loading' : 'ready' }] });
  });
  await getWhenReady(api, 'summary', { span: 'a' });
  const gaps = stamps.slice(1, 3).map((t, i) => t - stamps[i]);
  assert.ok(gaps.every((g) => g >= 790 && g < 900), `asked again at once after each held answer: ${gaps}`);
});

/** An Api over a fake server whose `status` answers the next of `traces` (whole entries), recording urls. */
function stagedServer(traces, data = () => reply(200, { ok: 1 })) {
  const urls = [];
  const api = new Api(async (url) => {
    urls.push(url);
    if (url.startsWith('status')) return reply(200, { traces: [traces.length > 1 ? traces.shift() : traces[0]] });
    return data(url);
  });
  return { api, urls };
}

const LANES_POLL = 'status?span=a&load=1&wait_ms=1500&until=lanes';

test('waitLanes long-polls with until=lanes and resolves with the entry once the lanes are published', async () => {
  const analysing = { id: 'a', state: 'loading', phase: 'analysing', lanes_ready: true, duration_us: 2000 };
  const { api, urls } = stagedServer([{ id: 'a', state: 'loading', phase: 'decoding', lanes_ready: false }, analysing]);
  assert.deepEqual(await waitLanes(api, 'a'), analysing);
  assert.deepEqual(urls, [LANES_POLL, LANES_POLL]);
});

test('getWhenLanesReady asks the lanes route while the analyses run; getWhenReady still waits for ready', async () => {
  const { api, urls } = stagedServer([{ id: 'a', state: 'loading', lanes_ready: true }, { id: 'a', state: 'loading', lanes_ready: true },
    { id: 'a', state: 'ready', lanes_ready: true }]);
  await getWhenLanesReady(api, 'lanes', { span: 'a', width_px: 10 });
  await getWhenLanesReady(api, 'lanes', { span: 'a', width_px: 20 }); // remembered: straight to the route
  assert.deepEqual(urls, [LANES_POLL, 'lanes?span=a&width_px=10', 'lanes?span=a&width_px=20']);
  await getWhenReady(api, 'summary', { span: 'a' });
  assert.deepEqual(urls.slice(3), ['status?span=a&load=1&wait_ms=1500', 'status?span=a&load=1&wait_ms=1500', 'summary?span=a']);
});

test('a span seen ready has its lanes too; a listing forgets the lanes only when they are gone', async () => {
  const { api, urls } = stagedServer([{ id: 'a', state: 'ready', lanes_ready: true }]);
  await getWhenReady(api, 'summary', { span: 'a' });
  await getWhenLanesReady(api, 'lanes', { span: 'a' });
  assert.deepEqual(urls, ['status?span=a&load=1&wait_ms=1500', 'summary?span=a', 'lanes?span=a']);
  forgetUnready(api, [{ id: 'a', state: 'loading', lanes_ready: true }]); // reloading, lanes still served
  await getWhenLanesReady(api, 'lanes', { span: 'a' });
  assert.equal(urls.at(-1), 'lanes?span=a');
  forgetUnready(api, [{ id: 'a', state: 'unloaded' }]); // a `runs` listing has no lanes_ready
  await getWhenLanesReady(api, 'lanes', { span: 'a' });
  assert.deepEqual(urls.slice(-2), [LANES_POLL, 'lanes?span=a']);
});

test('a failed load ends the lanes wait with the loader message; a 409 from the lanes route waits again', async () => {
  const failed = stagedServer([{ id: 'a', state: 'loading', lanes_ready: true }, { id: 'a', state: 'error', error: 'run/x.json: analysis failed', lanes_ready: false }],
    () => reply(409, { error: { message: 'unloaded' }, state: 'unloaded' }));
  await assert.rejects(getWhenLanesReady(failed.api, 'lanes', { span: 'a' }), (e) => e.status === 422 && /analysis failed/.test(e.message));
  assert.deepEqual(failed.urls, [LANES_POLL, 'lanes?span=a', LANES_POLL]);
  const { api, urls } = stagedServer([{ id: 'a', state: 'queued', lanes_ready: false }], () => reply(200, {}));
  const controller = new AbortController();
  const pending = waitLanes(api, 'a', controller.signal);
  setTimeout(() => controller.abort(), 50);
  await assert.rejects(pending, (e) => e.name === 'AbortError');
  assert.ok(urls.every((u) => u === LANES_POLL));
});

test('a server without lanes_ready: waitLanes waits for ready', async () => {
  const { api, urls } = stagedServer([{ id: 'a', state: 'loading' }, { id: 'a', state: 'ready' }]);
  assert.equal((await waitLanes(api, 'a')).state, 'ready');
  assert.equal(urls.length, 2);
});

test('a listing that shows a span ready (or its lanes published) sends its first requests straight to the route', async () => {
  const { api, urls } = stagedServer([{ id: 'a', state: 'ready', lanes_ready: true }]);
  learnReady(api, [{ id: 'a', state: 'ready', lanes_ready: true }, { id: 'b', state: 'loading', lanes_ready: true },
    { id: 'c', state: 'unloaded', lanes_ready: false }, null]);
  await getWhenReady(api, 'summary', { span: 'a' });
  await getWhenLanesReady(api, 'lanes', { span: 'b' });
  assert.deepEqual(urls, ['summary?span=a', 'lanes?span=b']);
  await getWhenReady(api, 'summary', { span: 'b' }); // its analyses were not done: wait for them
  await getWhenLanesReady(api, 'lanes', { span: 'c' });
  assert.deepEqual(urls.slice(2), ['status?span=b&load=1&wait_ms=1500', 'summary?span=b', LANES_POLL.replace('span=a', 'span=c'), 'lanes?span=c']);
  assert.equal(lanesAvailable({ state: 'ready' }), true);
  assert.equal(lanesAvailable({ state: 'loading', lanes_ready: true }), true);
  assert.equal(lanesAvailable({ state: 'loading', lanes_ready: false }), false);
  assert.equal(lanesAvailable({ state: 'unloaded' }), false);
  assert.equal(lanesAvailable(null), false);
});
