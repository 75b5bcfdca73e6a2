// @ts-check
/**
 * What a memory curve can claim. Traces that only hold byte deltas (2021 Kineto) give a curve
 * relative to the trace start (`relative: true`), and no reserved bytes (`null`): the chart must say
 * so instead of drawing a reserved line at 0 or an allocation that looks absolute. Pure.
 */

/**
 * Whether a device's reserved bytes were recorded: `null` (from `memory` or `summary.memory`)
 * means the trace has none.
 * @param {any} device one device of the `memory` answer, or one row of `summary.memory`
 */
export function reservedRecorded(device) {
  return device?.reserved_bytes !== null && device?.peak_reserved_bytes !== null;
}

/**
 * The legend texts of one device's curves: long (above the chart, Markdown) and short (the
 * canvas gutter, about 170 px).
 * @param {any} device
 * @returns {{allocated: string, allocatedShort: string, reserved: string, reservedShort: string, recorded: boolean}}
 */
export function memoryLabels(device) {
  const relative = device?.relative === true;
  const recorded = reservedRecorded(device);
  return {
    allocated: relative ? 'allocated, relative to the start of the trace' : 'allocated',
    allocatedShort: relative ? 'allocated (relative)' : 'allocated',
    reserved: recorded ? 'reserved' : 'reserved: not recorded',
    reservedShort: recorded ? 'reserved' : 'reserved: not recorded',
    recorded,
  };
}

/**
 * The note above one device's chart, '' when both curves are plain:
 * "cuda:0: allocated, relative to the start of the trace (the trace records changes only); reserved: not recorded".
 * @param {any} device
 */
export function memoryNote(device) {
  const labels = memoryLabels(device);
  const parts = [];
  if (device?.relative === true) parts.push(`${labels.allocated} (the trace records changes only)`);
  if (!labels.recorded) parts.push(labels.reserved);
  return parts.length ? `${device?.device}: ${parts.join('; ')}` : '';
}
