import assert from 'node:assert/strict';
import test from 'node:test';

import { commText, deviceIdleText, hasNoDevice, overlapText } from '../model/devices.js';

test('device idle chip', () => {
  assert.equal(deviceIdleText({ device: 0, idle_pct: 39.434, window_us: 996477 }), 'GPU 0: idle 39.4% of 996 ms');
});

test('communication only with communication kernels', () => {
  const comm = { kernels: 60, comm_us: 163535, compute_us: 281336, exposed_comm_us: 87921, overlap_pct: 46.237 };
  assert.equal(commText(3, comm), 'GPU 3 comm: 164 ms (60 kernels), exposed 87.9 ms, 46.2% overlapped');
  assert.equal(commText(0, { ...comm, kernels: 1, overlap_pct: null }), 'GPU 0 comm: 164 ms (1 kernel), exposed 87.9 ms');
  assert.equal(commText(0, { kernels: 0, comm_us: 0, compute_us: 5, exposed_comm_us: 0, overlap_pct: null }), null);
  assert.equal(commText(0, undefined), null);
  assert.equal(overlapText({ overlap_pct: 100 }), '100.0% overlapped');
  assert.equal(overlapText(null), '');
});

test('a CPU-only summary has no device; one with a device, or none yet, does not say so', () => {
  assert.equal(hasNoDevice({ devices: [], devices_total: 0 }), true);
  assert.equal(hasNoDevice({ devices: [{ device: 0 }], devices_total: 1 }), false);
  assert.equal(hasNoDevice({ devices: [], devices_total: 2 }), false); // devices beyond the listed ones
  assert.equal(hasNoDevice(null), false); // not loaded yet: the panels stay until the summary says
});
