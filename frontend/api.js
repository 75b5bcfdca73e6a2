// @ts-check
/**
 * HTTP client of the plugin routes (tb_plugin/kinetoscope/HTTP_API.md). Relative URLs only: the page
 * runs under `<base href="plugin/kinetoscope/">`, so `summary?span=..` reaches
 * `/data/plugin/kinetoscope/summary` wherever TensorBoard is mounted. No DOM.
 */

/** A failed request, normalised from the plugin's JSON errors and TensorBoard's text/plain ones. */
export class ApiError extends Error {
  /**
   * @param {number} status HTTP status (0: the network failed)
   * @param {string} message
   * @param {string | null} [state] `queued` / `loading` on a 409
   */
  constructor(status, message, state = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.state = state;
  }

  /** True when the trace is still loading and the request may be retried. */
  get notReady() {
    return this.status === 409;
  }
}

/** Longest error text shown from a non-JSON body (an HTML error page must not flood the UI). */
const MAX_TEXT_ERROR = 300;

/**
 * Builds the ApiError of a non-OK response.
 * @param {{status: number, statusText?: string, headers: {get(name: string): string | null}, text(): Promise<string>}} response
 * @returns {Promise<ApiError>}
 */
export async function errorFromResponse(response) {
  let text = '';
  try {
    text = await response.text();
  } catch {
    text = '';
  }
  if ((response.headers.get('content-type') || '').includes('json')) {
    try {
      const body = JSON.parse(text);
      const message = body?.error?.message;
      if (typeof message === 'string' && message) {
        return new ApiError(response.status, message, typeof body.state === 'string' ? body.state : null);
      }
    } catch {
      // fall through to the text form
    }
  }
  const clean = text.replace(/\s+/g, ' ').trim().slice(0, MAX_TEXT_ERROR);
  return new ApiError(response.status, clean || `HTTP ${response.status} ${response.statusText || ''}`.trim());
}

/**
 * `route?k=v&...`, leaving out null and undefined parameters.
 * @param {string} route
 * @param {Record<string, string | number | boolean | string[] | null | undefined>} [params]
 */
export function routeUrl(route, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) q.append(k, String(item)); // a repeated parameter (`edit`)
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${route}?${s}` : route;
}

/**
 * @typedef {(url: string, init?: {signal?: AbortSignal}) => Promise<any>} FetchFn
 */

/** JSON GETs of the plugin routes. */
export class Api {
  /** @param {FetchFn} [fetchFn] injected in tests */
  constructor(fetchFn) {
    this.fetchFn = fetchFn ?? ((url, init) => fetch(url, init));
  }

  /**
   * @param {string} route e.g. `summary`
   * @param {Record<string, string | number | boolean | string[] | null | undefined>} [params]
   * @param {AbortSignal} [signal]
   * @returns {Promise<any>}
   */
  async get(route, params, signal) {
    let response;
    try {
      response = await this.fetchFn(routeUrl(route, params), { signal });
    } catch (err) {
      if (err instanceof Error && err.name === 'AbortError') throw err;
      throw new ApiError(0, `network error: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!response.ok) throw await errorFromResponse(response);
    try {
      return await response.json();
    } catch {
      throw new ApiError(response.status, `${route}: the response is not valid JSON`);
    }
  }
}

/**
 * Stale-response guard: each `run` aborts the previous request of the channel and resolves to
 * `{stale: true}` when a newer request was started meanwhile, so a slow old answer never overwrites
 * a newer view.
 */
export class LatestChannel {
  constructor() {
    this.seq = 0;
    /** @type {AbortController | null} */
    this.controller = null;
  }

  /**
   * @template T
   * @param {(signal: AbortSignal) => Promise<T>} request
   * @returns {Promise<{stale: true} | {stale: false, value: T}>}
   */
  async run(request) {
    const seq = ++this.seq;
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    try {
      const value = await request(controller.signal);
      return seq === this.seq ? { stale: false, value } : { stale: true };
    } catch (err) {
      if (seq !== this.seq || (err instanceof Error && err.name === 'AbortError')) return { stale: true };
      throw err;
    } finally {
      if (this.controller === controller) this.controller = null;
    }
  }

  /** Drops whatever is in flight (e.g. when the span changes). */
  cancel() {
    this.seq++;
    this.controller?.abort();
    this.controller = null;
  }
}

/**
 * Sleeps `ms`, or rejects with an AbortError when `signal` aborts first.
 * @param {number} ms @param {AbortSignal} [signal]
 */
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      const err = new Error('aborted');
      err.name = 'AbortError';
      reject(err);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve(undefined);
    }, ms);
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
  });
}
