// @ts-check
/**
 * Which launch flows (CPU launch call -> GPU activity) belong to a selection. Pure.
 *
 *   CPU  [aten::conv2d ..........................)       select the op: all launches inside it
 *          [cudaLaunchKernel)  [cudaLaunchKernel)        select a launch: its own activities
 *                 \\                   \\
 *   GPU            [kernel)            [kernel)          select a kernel: its launch
 */

/**
 * @typedef {object} Selection
 * @property {number} row the event's row id (from the lanes payload)
 * @property {number} laneId
 * @property {string} laneKind 'cpu' | 'gpu' | ...
 * @property {number} startUs
 * @property {number} endUs
 */

/**
 * Indices into `flows` drawn for a selection.
 * @param {import('./lanes.js').LanesData['flows']} flows
 * @param {Selection | null} sel
 * @returns {number[]}
 */
export function flowsForSelection(flows, sel) {
  if (!sel) return [];
  const out = [];
  for (let i = 0; i < flows.gpuRow.length; i++) {
    const mine = sel.laneKind === 'gpu'
      ? flows.gpuRow[i] === sel.row
      : flows.launchRow[i] === sel.row ||
        (flows.launchLane[i] === sel.laneId && flows.launchUs[i] >= sel.startUs && flows.launchUs[i] <= sel.endUs);
    if (mine) out.push(i);
  }
  return out;
}
