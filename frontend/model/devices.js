// @ts-check
/**
 * Per-device figures of a summary as short texts: idle share and communication (NCCL/RCCL kernels
 * apart from compute: their time, the part no compute kernel hides, and the overlap). Pure.
 */
import { formatDuration } from './format.js';

/**
 * Whether a span's summary shows no GPU at all (a CPU-only profile): its GPU panels have nothing to say.
 * @param {any} summary
 */
export function hasNoDevice(summary) {
  return Boolean(summary) && !(summary.devices_total > 0) && !(Array.isArray(summary.devices) && summary.devices.length);
}

/**
 * "GPU 0: idle 39.4% of 996 ms".
 * @param {any} device one of `summary.devices`
 */
export function deviceIdleText(device) {
  return `GPU ${device?.device}: idle ${Number(device?.idle_pct).toFixed(1)}% of ${formatDuration(device?.window_us)}`;
}

/**
 * @typedef {object} CommFigures `summary.devices[].comm`
 * @property {number} kernels
 * @property {number} comm_us
 * @property {number} compute_us
 * @property {number} exposed_comm_us
 * @property {number | null} overlap_pct
 */

/**
 * The overlap of communication with compute: "46.2% overlapped", or '' when not measured.
 * @param {CommFigures | null | undefined} comm
 */
export function overlapText(comm) {
  const pct = comm?.overlap_pct;
  return typeof pct === 'number' && Number.isFinite(pct) ? `${pct.toFixed(1)}% overlapped` : '';
}

/**
 * One device's communication in a line, or null without communication kernels:
 * "GPU 3 comm: 164 ms (60 kernels), exposed 87.9 ms, 46.2% overlapped".
 * @param {number | string} device @param {CommFigures | null | undefined} comm
 * @returns {string | null}
 */
export function commText(device, comm) {
  if (!comm || !(Number(comm.kernels) > 0)) return null;
  return [`GPU ${device} comm: ${formatDuration(comm.comm_us)} (${comm.kernels} kernel${comm.kernels === 1 ? '' : 's'})`,
    `exposed ${formatDuration(comm.exposed_comm_us)}`, overlapText(comm)].filter(Boolean).join(', ');
}
