import assert from 'node:assert/strict';
import test from 'node:test';

import { Api, ApiError, LatestChannel, errorFromResponse, routeUrl } from '../api.js';

/** A minimal Response stand-in. */
const reply = (status, body, type = 'application/json') => ({
  ok: status >= 200 && status < 300,
  status,
  statusText: '',
  headers: { get: (k) => (k.toLowerCase() === 'content-type' ? type : null) },
  text: async () => (typeof body === 'string' ? body : JSON.stringify(body)),
  json: async () => (typeof body === 'string' ? JSON.parse(body) : body),
});

test('routeUrl is relative and skips null parameters', () => {
  assert.equal(routeUrl('runs'), 'runs');
  assert.equal(routeUrl('gaps', { span: 'ab', device: 0, cause: null, min_us: undefined }), 'gaps?span=ab&device=0');
  assert.equal(routeUrl('summary', { span: 'a&b' }), 'summary?span=a%26b');
});

test('JSON errors keep their message and loading state', async () => {
  const err = await errorFromResponse(reply(409, { error: { code: 409, message: 'not loaded yet' }, state: 'loading' }));
  assert.equal(err.status, 409);
  assert.equal(err.message, 'not loaded yet');
  assert.equal(err.state, 'loading');
  assert.ok(err.notReady);
});

test('text/plain and HTML errors become short messages', async () => {
  const plain = await errorFromResponse(reply(404, 'Not found: no such span\n', 'text/plain'));
  assert.equal(plain.message, 'Not found: no such span');
  const html = await errorFromResponse(reply(500, `<html>${'x'.repeat(1000)}</html>`, 'text/html'));
  assert.ok(html.message.length <= 300);
  const empty = await errorFromResponse(reply(502, '', 'text/plain'));
  assert.equal(empty.message, 'HTTP 502');
  const badJson = await errorFromResponse(reply(500, '{oops', 'application/json'));
  assert.equal(badJson.message, '{oops');
});

test('Api.get returns JSON, throws ApiError on HTTP and network failures', async () => {
  const api = new Api(async (url) => (url === 'runs' ? reply(200, { runs: [] }) : reply(404, { error: { message: 'no' } })));
  assert.deepEqual(await api.get('runs'), { runs: [] });
  await assert.rejects(api.get('x'), (e) => e instanceof ApiError && e.status === 404 && e.message === 'no');
  const down = new Api(async () => {
    throw new TypeError('Failed to fetch');
  });
  await assert.rejects(down.get('runs'), (e) => e instanceof ApiError && e.status === 0);
});

test('LatestChannel drops a response that arrives after a newer request', async () => {
  const channel = new LatestChannel();
  let release;
  const slow = channel.run(() => new Promise((resolve) => (release = resolve)));
  const fast = channel.run(async () => 'new');
  release('old');
  assert.deepEqual(await slow, { stale: true });
  assert.deepEqual(await fast, { stale: false, value: 'new' });
});

test('LatestChannel aborts the previous request and cancel() drops everything', async () => {
  const channel = new LatestChannel();
  let seenSignal;
  const first = channel.run((signal) => {
    seenSignal = signal;
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(Object.assign(new Error('a'), { name: 'AbortError' }))));
  });
  channel.run(async () => 1);
  assert.ok(seenSignal.aborted);
  assert.deepEqual(await first, { stale: true });
  const pending = channel.run(async () => 2);
  channel.cancel();
  assert.deepEqual(await pending, { stale: true });
});
