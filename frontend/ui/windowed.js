// @ts-check
/**
 * Keeps a payload that serves the current view window: at most one request in flight, a follow-up
 * when the view moved meanwhile, and stale answers (from an older span) dropped by LatestChannel.
 * While a request runs, views keep drawing the previous payload at the new scale.
 */
import { LatestChannel } from '../api.js';

/**
 * @template P
 * @typedef {object} WindowedSource
 * @property {(signal: AbortSignal) => Promise<P>} fetch loads a payload for the view as it is now
 * @property {(payload: P) => boolean} serves whether a payload still serves the view as it is now
 * @property {(payload: P) => void} accept installs a new payload
 * @property {(err: unknown) => void} fail reports a failed request
 */

/** Delay before a request, so a burst of wheel events asks once. */
const SETTLE_MS = 40;
/** After a failed request, view changes ask again only after this long (no request storm on errors). */
const RETRY_MS = 5000;

/** @template P */
export class WindowedLoader {
  /** @param {WindowedSource<P>} source @param {number} [retryMs] */
  constructor(source, retryMs = RETRY_MS) {
    this.retryMs = retryMs;
    this.source = source;
    this.channel = new LatestChannel();
    /** @type {P | null} */
    this.payload = null;
    this.busy = false;
    this.timer = 0;
    this.failedAt = -Infinity;
    this.generation = 0;
  }

  /** Call after every view change; cheap when the payload still serves. */
  update() {
    if (this.busy || this.timer) return;
    if (this.payload !== null && this.source.serves(this.payload)) return;
    if (Date.now() - this.failedAt < this.retryMs) return;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.load();
    }, this.payload === null ? 0 : SETTLE_MS);
  }

  async load() {
    const generation = this.generation;
    this.busy = true;
    try {
      const result = await this.channel.run((signal) => this.source.fetch(signal));
      if (result.stale || generation !== this.generation) return;
      this.payload = result.value;
      this.source.accept(result.value);
    } catch (err) {
      if (generation !== this.generation) return;
      this.failedAt = Date.now();
      this.source.fail(err);
    } finally {
      if (generation === this.generation) this.busy = false;
    }
    if (generation === this.generation) this.update();
  }

  /** Forgets the payload and anything in flight (a new span); the next update() loads afresh. */
  reset() {
    this.generation++;
    this.channel.cancel();
    clearTimeout(this.timer);
    this.timer = 0;
    this.busy = false;
    this.failedAt = -Infinity;
    this.payload = null;
  }
}
