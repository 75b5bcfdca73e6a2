// @ts-check
/**
 * Polls the `status` route while the page waits for a trace, so the header can show progress (and
 * the span picker each trace's state), then stops.
 */
import { sleep } from '../api.js';

const POLL_MS = 700;

export class StatusPoller {
  /**
   * @param {import('../api.js').Api} api
   * @param {(traces: any[]) => boolean} onUpdate returns whether to keep polling
   */
  constructor(api, onUpdate) {
    this.api = api;
    this.onUpdate = onUpdate;
    this.running = false;
  }

  /** Starts polling unless it already runs. */
  start() {
    if (this.running) return;
    this.running = true;
    this.loop().finally(() => {
      this.running = false;
    });
  }

  async loop() {
    for (let failures = 0; failures < 5;) {
      try {
        const body = await this.api.get('status');
        const traces = Array.isArray(body.traces) ? body.traces : [];
        if (!this.onUpdate(traces)) return;
        failures = 0;
      } catch {
        failures++; // the panels report route errors; the header just stops updating after a few
      }
      await sleep(POLL_MS);
    }
  }
}
