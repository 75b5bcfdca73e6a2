// @ts-check
/**
 * Waiting for a span's trace to load without a refused request. A data route of a span that is not
 * in memory answers 409, and the browser logs every refused request as a console error; so the first
 * request for a span polls `status?span=ID&load=1` (queues the load, answers 200 with its state)
 * until the trace is ready, and only then asks the data route. Spans seen ready are remembered per
 * Api, so later requests (every pan and zoom) go straight to their route; listings that show a span
 * no longer ready (`forgetUnready`) and a 409 after all (evicted meanwhile) send it back to waiting.
 * No DOM.
 */
import { ApiError, sleep } from './api.js';

/** First poll delay and its cap: quick for a cached trace, gentle for a 500 MB one. */
const FIRST_DELAY_MS = 200;
const MAX_DELAY_MS = 1500;

/** @type {WeakMap<import('./api.js').Api, Set<string>>} span ids last seen ready, per Api */
const readyByApi = new WeakMap();

/** @param {import('./api.js').Api} api */
function readySpans(api) {
  let spans = readyByApi.get(api);
  if (!spans) {
    spans = new Set();
    readyByApi.set(api, spans);
  }
  return spans;
}

/**
 * Forgets the spans a listing (`status` traces, `runs` spans) shows as not ready, so their next
 * request waits for the load instead of being refused.
 * @param {import('./api.js').Api} api @param {Iterable<{id: string, state: string}>} spans
 */
export function forgetUnready(api, spans) {
  const ready = readySpans(api);
  for (const s of spans) if (s && s.state !== 'ready') ready.delete(s.id);
}

/**
 * GETs a span route once the span's trace is loaded (see the module comment).
 * @param {import('./api.js').Api} api @param {string} route
 * @param {Record<string, string | number | boolean | null | undefined>} params must hold `span`
 * @param {AbortSignal} [signal]
 */
export async function getWhenReady(api, route, params, signal) {
  const span = String(params.span);
  for (;;) {
    if (!readySpans(api).has(span)) await waitLoaded(api, span, signal);
    try {
      return await api.get(route, params, signal);
    } catch (err) {
      if (!(err instanceof ApiError) || !err.notReady) throw err;
    }
    readySpans(api).delete(span);
    await sleep(FIRST_DELAY_MS, signal);
  }
}

/** How long one `status` long poll may wait on the server for the load to end. */
export const LONG_POLL_MS = 1500;

/**
 * Long-polls `status?span=ID&load=1&wait_ms=...` until the trace is ready: the server answers the moment
 * the load ends, so no poll interval delays the first data request. An answer that came back early
 * without the load ending (a server that does not wait) is asked again after a growing delay
 * (200 ms .. 1.5 s). A failed load throws its message as a 422, as the data routes would.
 * @param {import('./api.js').Api} api @param {string} span @param {AbortSignal} [signal]
 */
export async function waitLoaded(api, span, signal) {
  for (let delayMs = FIRST_DELAY_MS; ; delayMs = Math.min(delayMs * 1.5, MAX_DELAY_MS)) {
    const asked = Date.now();
    const body = await api.get('status', { span, load: 1, wait_ms: LONG_POLL_MS }, signal);
    const trace = Array.isArray(body?.traces) ? body.traces[0] : null;
    if (!trace) throw new ApiError(500, 'status: the answer lists no trace');
    if (trace.state === 'ready') {
      readySpans(api).add(span);
      return;
    }
    if (trace.state === 'error') throw new ApiError(422, String(trace.error || 'the trace failed to load'));
    if (Date.now() - asked >= LONG_POLL_MS / 2) delayMs = FIRST_DELAY_MS / 1.5; // the server waited: ask again at once
    else await sleep(delayMs, signal);
  }
}
