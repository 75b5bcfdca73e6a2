// @ts-check
/**
 * Number formatting for labels, tables and tooltips. Pure. The CLI and the Markdown export write numbers
 * the same way (formats/units.py; tests/test_formats.py runs both on the same values):
 *   counts      comma thousands separators: 44,666
 *   durations   3 significant digits in the unit that keeps them in 1..1000: 850 ns, 12.3 µs, 4.56 ms, 1.2 s
 *   shares      percent with one decimal: 31.4%
 *   signs       the minus sign U+2212 (−), a plus only where a change is shown (compare)
 */

/** The minus sign of every negative number shown. */
export const MINUS = '\u2212';

/**
 * Rounds to `digits` significant digits, dropping trailing zeros ("1.50" -> "1.5").
 * @param {number} v
 * @param {number} digits
 */
function sig(v, digits) {
  if (v === 0) return '0';
  const text = String(Number(Math.abs(v).toPrecision(digits)));
  return v < 0 ? `${MINUS}${text}` : text;
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
  return `${bytes < 0 ? MINUS : ''}${text} ${BYTE_UNITS[unit]}`;
}

/**
 * A share in [0, 1] as a percentage with one decimal: 0.314 -> "31.4%".
 * @param {number | null | undefined} share
 */
export function formatShare(share) {
  if (share === null || share === undefined || !Number.isFinite(share)) return '\u2013';
  const text = Math.abs(share * 100).toFixed(1);
  return `${share < 0 && Number(text) !== 0 ? MINUS : ''}${text}%`;
}

/**
 * An integer with comma thousands separators: 44666 -> "44,666", -1234 -> "−1,234".
 * @param {number | null | undefined} n
 */
export function formatCount(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '\u2013';
  return formatNumber(Math.round(n), 0);
}

/**
 * A number with comma thousands separators and at most `maxDecimals` decimals (trailing zeros dropped):
 * 1234.5678 -> "1,234.57".
 * @param {number | null | undefined} v @param {number} [maxDecimals]
 */
export function formatNumber(v, maxDecimals = 2) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '\u2013';
  const [whole, frac] = String(Number(Math.abs(v).toFixed(maxDecimals))).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const text = frac ? `${grouped}.${frac}` : grouped;
  return v < 0 && Number(text.replace(/,/g, '')) !== 0 ? `${MINUS}${text}` : text;
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
  return `${(Math.abs(v) < 1e-12 ? 0 : v).toFixed(decimals).replace(/^-/, MINUS)} ${unit}`;
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
