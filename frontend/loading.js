// @ts-check
/**
 * Waiting for a span's trace to load without a refused request. A data route of a span that is not
 * in memory answers 409, and the browser logs every refused request as a console error; so the first
 * request for a span polls `status?span=ID&load=1` (queues the load, answers 200 with its state)
 * until the trace is ready, and only then asks the data route. Spans seen ready are remembered per
 * Api (or shown ready by a listing, `learnReady`), so later requests (every pan and zoom) go straight to their
 * route; listings that show a span no longer ready (`forgetUnready`) and a 409 after all (evicted meanwhile) send
 * it back to waiting.
 * The lanes can be asked earlier, once the server has published them (`lanes_ready` while it still
 * analyses): `getWhenLanesReady` / `waitLanes` wait for that, the same way (`status?...&until=lanes`).
 * No DOM.
 */
import { ApiError, sleep } from './api.js';

/** First poll delay and its cap: quick for a cached trace, gentle for a 500 MB one. */
const FIRST_DELAY_MS = 200;
const MAX_DELAY_MS = 1500;

/** @type {WeakMap<import('./api.js').Api, Set<string>>} span ids last seen ready, per Api */
const readyByApi = new WeakMap();
/** @type {WeakMap<import('./api.js').Api, Set<string>>} span ids last seen with their lanes available, per Api */
const lanesByApi = new WeakMap();

/** @param {WeakMap<import('./api.js').Api, Set<string>>} byApi @param {import('./api.js').Api} api */
function spansOf(byApi, api) {
  let spans = byApi.get(api);
  if (!spans) {
    spans = new Set();
    byApi.set(api, spans);
  }
  return spans;
}

/** @param {import('./api.js').Api} api */
const readySpans = (api) => spansOf(readyByApi, api);
/** @param {import('./api.js').Api} api */
const lanesSpans = (api) => spansOf(lanesByApi, api);

/**
 * What a request waits for: the whole load (`ready`), or only the lanes (`lanes_ready`, or ready).
 * @typedef {{until: string | undefined, reached: (trace: any) => boolean, seen: (api: import('./api.js').Api) => Set<string>}} Goal
 */
/** @type {Goal} */
const READY = { until: undefined, reached: (t) => t.state === 'ready', seen: readySpans };
/** @type {Goal} */
const LANES = { until: 'lanes', reached: (t) => t.state === 'ready' || (t.state === 'loading' && t.lanes_ready === true), seen: lanesSpans };

/**
 * Forgets the spans a listing (`status` traces, `runs` spans) shows as not ready, so their next
 * request waits for the load instead of being refused.
 * @param {import('./api.js').Api} api @param {Iterable<{id: string, state: string}>} spans
 */
export function forgetUnready(api, spans) {
  const ready = readySpans(api);
  const lanes = lanesSpans(api);
  for (const s of spans) {
    if (!s || s.state === 'ready') continue;
    ready.delete(s.id);
    if (!LANES.reached(s)) lanes.delete(s.id);
  }
}

/**
 * Remembers the spans a listing (`runs` spans, `status` traces) shows as ready, or with their lanes published,
 * so their first request goes straight to its route instead of asking `status` first (one round trip less when
 * a tab opens on a span TensorBoard has loaded already). A span evicted since answers 409 and waits after all.
 * @param {import('./api.js').Api} api @param {Iterable<{id: string, state: string, lanes_ready?: boolean}>} spans
 */
export function learnReady(api, spans) {
  const ready = readySpans(api);
  const lanes = lanesSpans(api);
  for (const s of spans) {
    if (!s) continue;
    if (READY.reached(s)) ready.add(s.id);
    if (LANES.reached(s)) lanes.add(s.id);
  }
}

/**
 * Whether a listing entry (`runs` span, `status` trace) says the span's lanes can be asked now.
 * @param {{state?: string, lanes_ready?: boolean} | null | undefined} trace
 */
export function lanesAvailable(trace) {
  return Boolean(trace) && LANES.reached(trace);
}

/**
 * GETs a span route once the span's trace is loaded (see the module comment).
 * @param {import('./api.js').Api} api @param {string} route
 * @param {Record<string, string | number | boolean | null | undefined>} params must hold `span`
 * @param {AbortSignal} [signal]
 */
export function getWhenReady(api, route, params, signal) {
  return getWhen(READY, api, route, params, signal);
}

/**
 * GETs a route that the server answers once the span's lanes are published (`lanes`, `export`), before
 * the analyses end; otherwise as `getWhenReady`.
 * @param {import('./api.js').Api} api @param {string} route
 * @param {Record<string, string | number | boolean | null | undefined>} params must hold `span`
 * @param {AbortSignal} [signal]
 */
export function getWhenLanesReady(api, route, params, signal) {
  return getWhen(LANES, api, route, params, signal);
}

/**
 * @param {Goal} goal @param {import('./api.js').Api} api @param {string} route
 * @param {Record<string, string | number | boolean | null | undefined>} params @param {AbortSignal} [signal]
 */
async function getWhen(goal, api, route, params, signal) {
  const span = String(params.span);
  for (;;) {
    if (!goal.seen(api).has(span)) await waitFor(goal, api, span, signal);
    try {
      return await api.get(route, params, signal);
    } catch (err) {
      if (!(err instanceof ApiError) || !err.notReady) throw err;
    }
    readySpans(api).delete(span);
    lanesSpans(api).delete(span);
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
export function waitLoaded(api, span, signal) {
  return waitFor(READY, api, span, signal);
}

/**
 * Long-polls like `waitLoaded`, but only until the span's lanes can be asked (`lanes_ready`: the server
 * answers the moment it publishes them, while it still analyses). Resolves with the span's `status`
 * entry, whose `duration_us` is the trace's extent.
 * @param {import('./api.js').Api} api @param {string} span @param {AbortSignal} [signal]
 */
export function waitLanes(api, span, signal) {
  return waitFor(LANES, api, span, signal);
}

/**
 * @param {Goal} goal @param {import('./api.js').Api} api @param {string} span @param {AbortSignal} [signal]
 * @returns {Promise<any>} the span's `status` entry once the goal is reached
 */
async function waitFor(goal, api, span, signal) {
  for (let delayMs = FIRST_DELAY_MS; ; delayMs = Math.min(delayMs * 1.5, MAX_DELAY_MS)) {
    const asked = Date.now();
    const body = await api.get('status', { span, load: 1, wait_ms: LONG_POLL_MS, until: goal.until }, signal);
    const trace = Array.isArray(body?.traces) ? body.traces[0] : null;
    if (!trace) throw new ApiError(500, 'status: the answer lists no trace');
    if (goal.reached(trace)) {
      if (trace.state === 'ready') readySpans(api).add(span);
      lanesSpans(api).add(span);
      return trace;
    }
    if (trace.state === 'error') throw new ApiError(422, String(trace.error || 'the trace failed to load'));
    if (Date.now() - asked >= LONG_POLL_MS / 2) delayMs = FIRST_DELAY_MS / 1.5; // the server waited: ask again at once
    else await sleep(delayMs, signal);
  }
}
