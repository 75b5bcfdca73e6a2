// @ts-check
/** Number formatting for labels, tables and tooltips. Pure. */

/**
 * Rounds to `digits` significant digits, dropping trailing zeros ("1.50" -> "1.5").
 * @param {number} v
 * @param {number} digits
 */
function sig(v, digits) {
  if (v === 0) return '0';
  return String(Number(v.toPrecision(digits)));
}

/**
 * A duration in the unit that keeps it between 1 and 1000: "850 ns", "12.3 µs", "4.56 ms", "1.2 s".
 * @param {number | null | undefined} us microseconds
 */
export function formatDuration(us) {
  if (us === null || us === undefined || !Number.isFinite(us)) return '\u2013';
  const a = Math.abs(us);
  if (a === 0) return '0 µs';
  if (a < 1) return `${sig(us * 1000, 3)} ns`;
  if (a < 1000) return `${sig(us, 3)} µs`;
  if (a < 1e6) return `${sig(us / 1000, 3)} ms`;
  return `${sig(us / 1e6, 3)} s`;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/**
 * Bytes in binary units: "512 B", "1.5 KiB", "2.6 GiB". Negative values keep their sign.
 * @param {number | null | undefined} bytes
 */
export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '\u2013';
  let v = Math.abs(bytes);
  let unit = 0;
  while (v >= 1024 && unit < BYTE_UNITS.length - 1) {
    v /= 1024;
    unit++;
  }
  const text = unit === 0 ? String(Math.round(v)) : sig(v, 3);
  return `${bytes < 0 ? '-' : ''}${text} ${BYTE_UNITS[unit]}`;
}

/**
 * A share in [0, 1] as a percentage with one decimal: 0.314 -> "31.4%".
 * @param {number | null | undefined} share
 */
export function formatShare(share) {
  if (share === null || share === undefined || !Number.isFinite(share)) return '\u2013';
  return `${(share * 100).toFixed(1)}%`;
}

/**
 * An integer with thin thousands separators: 44666 -> "44 666".
 * @param {number | null | undefined} n
 */
export function formatCount(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '\u2013';
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, '\u2009');
}

/**
 * An axis label for time `tUs` on a grid of `stepUs`. One unit for the whole axis, chosen from its
 * largest time `refUs`, and just enough decimals to tell neighbouring ticks apart: 1250 µs on a
 * 50 µs grid reads "1.25 ms", deep into a long trace "1.23455 s".
 * @param {number} tUs
 * @param {number} stepUs
 * @param {number} refUs largest |time| on the axis
 */
export function formatTick(tUs, stepUs, refUs) {
  const ref = Math.abs(refUs);
  const [div, unit] = ref >= 1e6 ? [1e6, 's'] : ref >= 1e3 ? [1e3, 'ms'] : ref >= 1 ? [1, 'µs'] : [1e-3, 'ns'];
  const step = stepUs / div;
  const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
  const v = tUs / div;
  return `${(Math.abs(v) < 1e-12 ? 0 : v).toFixed(decimals)} ${unit}`;
}

/**
 * A point in time (µs since the trace start) to the microsecond, so neighbouring events read apart:
 * "12.345 µs", "100.181 ms", "1.065723 s". Durations use formatDuration instead.
 * @param {number | null | undefined} us
 */
export function formatTimestamp(us) {
  if (us === null || us === undefined || !Number.isFinite(us)) return '\u2013';
  const a = Math.abs(us);
  if (a < 1000) return `${Number(us.toFixed(3))} µs`;
  if (a < 1e6) return `${(us / 1000).toFixed(3)} ms`;
  return `${(us / 1e6).toFixed(6)} s`;
}
