// @ts-check
/**
 * The run-level verdict (or another run-level route: `ranks`): asks `verdict?run=NAME` for the run on screen, and again every 1.5 s while
 * spans of it are still loading (`pending` > 0), until none is; not while TensorBoard hides the
 * plugin (no request from a background tab). Polling another run, or `stop`, ends the previous
 * polling; the channel drops its answers, so a slow old answer never shows. No DOM of its own.
 */
import { LatestChannel, sleep } from '../api.js';
import { pluginVisible } from './runs_refresh.js';

/** Pause between two asks while spans of the run load. */
export const POLL_MS = 1500;

export class RunVerdictPoller {
  /**
   * @param {{get: (route: string, params?: Record<string, any>, signal?: AbortSignal) => Promise<any>}} api
   * @param {(answer: any) => void} onAnswer every answer for the run being polled
   * @param {(err: unknown) => void} [onError] a failed ask (the polling stops)
   * @param {{pollMs?: number, sleep?: (ms: number, signal?: AbortSignal) => Promise<unknown>, visible?: () => boolean, route?: string}} [opts]
   *   injected in tests; `route`: another run-level route with `pending` (`ranks`)
   */
  constructor(api, onAnswer, onError = () => {}, opts = {}) {
    this.api = api;
    this.route = opts.route ?? 'verdict';
    this.onAnswer = onAnswer;
    this.onError = onError;
    this.pollMs = opts.pollMs ?? POLL_MS;
    this.sleep = opts.sleep ?? sleep;
    this.visible = opts.visible ?? pluginVisible;
    this.channel = new LatestChannel();
    /** @type {string | null} the run being polled, or whose last answer had nothing pending */
    this.run = null;
    /** @type {any} the last answer for `run` */
    this.latest = null;
  }

  /**
   * Polls `run` until nothing of it is pending (replacing any run being polled).
   * @param {string} run
   * @returns {Promise<void>} settles when this polling ends (done, replaced or failed)
   */
  async start(run) {
    if (this.run !== run) this.latest = null;
    this.run = run;
    try {
      await this.channel.run(async (signal) => {
        for (;;) {
          const body = await this.api.get(this.route, { run }, signal);
          if (signal.aborted) return; // replaced while the answer was read
          this.latest = body;
          this.onAnswer(body);
          if (!(Number(body?.pending) > 0)) return;
          do await this.sleep(this.pollMs, signal); while (!this.visible());
        }
      });
    } catch (err) {
      this.onError(err);
    }
  }

  /** Stops polling and forgets the run. */
  stop() {
    this.channel.cancel();
    this.run = null;
    this.latest = null;
  }
}
