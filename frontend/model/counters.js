// @ts-check
/**
 * Counter lanes (the `counters` object of a `lanes` answer): per-bucket mean and max of GPU utilization,
 * estimated SM efficiency, queue length per stream and memcpy bandwidth per type. Pure: parsing, the
 * vertical scale of each lane, the bucket under a time, and the geometry of the counters block.
 */

/**
 * @typedef {object} CounterLane
 * @property {string} kind 'utilization' | 'sm_efficiency' | 'queue_length' | 'memory_bandwidth' | 'hw_counter'
 * @property {string} label
 * @property {number} device
 * @property {number} stream
 * @property {string} unit 'fraction' | 'operations' | 'GB/s', or a hardware counter's own ('cycles', 'bytes', ...)
 * @property {Float64Array} mean per bucket, time-weighted
 * @property {Float64Array} max per bucket
 * @property {number} top the value drawn at the top of the lane
 */

/**
 * @typedef {object} Counters
 * @property {number} startUs start of bucket 0 (µs from the trace start)
 * @property {number} bucketUs
 * @property {CounterLane[]} lanes
 * @property {number} hidden counters the answer left out
 */

/** Height of one counter lane, and of the header row above the block (CSS px). */
export const COUNTER_H = 30;
export const COUNTER_HEADER_H = 16;

/** @param {any} v @returns {any[]} */
const arr = (v) => (Array.isArray(v) ? v : []);

/** Finite non-negative numbers (anything else reads 0). @param {any[]} values */
function values(values) {
  return Float64Array.from(values, (v) => (Number.isFinite(Number(v)) && Number(v) > 0 ? Number(v) : 0));
}

/**
 * The smallest 1, 2 or 5 x 10^k at least x (1 for x <= 0): a scale top a reader can take in at a glance.
 * @param {number} x
 */
export function niceCeil(x) {
  if (!(x > 0) || !Number.isFinite(x)) return 1;
  const power = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 5, 10]) if (m * power >= x * (1 - 1e-12)) return m * power;
  return 10 * power;
}

/**
 * The scale top of a lane: 1 for shares (utilization, SM efficiency), else the nice ceiling of its largest max
 * (a queue of at most 3 operations reads against 5, not against the busiest stream's 569).
 * @param {string} unit @param {Float64Array} max
 */
export function counterTop(unit, max) {
  if (unit === 'fraction') return 1;
  let m = 0;
  for (const v of max) if (v > m) m = v;
  return niceCeil(m);
}

/**
 * @param {any} raw the `counters` object of a `lanes` answer (absent from older servers)
 * @returns {Counters}
 */
export function prepareCounters(raw) {
  const c = raw && typeof raw === 'object' ? raw : {};
  const bucketUs = Number(c.bucket_us);
  const lanes = arr(c.lanes).map((l) => {
    const mean = values(arr(l.mean));
    const max = values(arr(l.max));
    const unit = String(l.unit ?? '');
    return { kind: String(l.kind ?? ''), label: String(l.label ?? ''), device: Number(l.device ?? -1),
      stream: Number(l.stream ?? -1), unit, mean, max, top: counterTop(unit, max) };
  });
  return { startUs: Number(c.start_us) || 0, bucketUs: bucketUs > 0 ? bucketUs : 0, lanes: bucketUs > 0 ? lanes : [],
    hidden: Number(c.lanes_hidden) || 0 };
}

/**
 * Height of the counters block under the lanes (0 without counters). @param {Counters | undefined} c
 */
export function countersHeight(c) {
  return c && c.lanes.length ? COUNTER_HEADER_H + c.lanes.length * COUNTER_H : 0;
}

/**
 * The bucket holding time tUs, or -1 outside the fetched window. @param {Counters} c @param {number} tUs
 */
export function bucketAt(c, tUs) {
  const n = c.lanes.length ? c.lanes[0].mean.length : 0;
  if (!(c.bucketUs > 0) || n === 0) return -1;
  const i = Math.floor((tUs - c.startUs) / c.bucketUs);
  return i >= 0 && i < n ? i : -1;
}

/**
 * A value as a lane shows it: shares in percent, the rest with its unit.
 * @param {number} v @param {string} unit
 */
export function formatCounter(v, unit) {
  if (unit === 'fraction') return `${(100 * v).toFixed(v >= 0.995 || v === 0 ? 0 : 1)}%`;
  const text = Number.isInteger(v) || v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : Number(v.toPrecision(3)).toString();
  return unit === 'operations' ? text : `${text} ${unit}`;
}

/**
 * What the lane at y (from the top of the counters block) reads at tUs: its label, the bucket's mean and max
 * and the bucket's span, or null outside the lanes or the fetched window.
 * @param {Counters} c @param {number} yInBlockCss @param {number} tUs
 * @returns {{lane: number, bucket: number, title: string, rows: [string, string][]} | null}
 */
export function counterReading(c, yInBlockCss, tUs) {
  const k = Math.floor((yInBlockCss - COUNTER_HEADER_H) / COUNTER_H);
  const i = bucketAt(c, tUs);
  if (yInBlockCss < COUNTER_HEADER_H || k < 0 || k >= c.lanes.length || i < 0) return null;
  const lane = c.lanes[k];
  const what = MEANING[lane.kind] ?? lane.kind;
  return { lane: k, bucket: i, title: lane.label, rows: [['mean', formatCounter(lane.mean[i], lane.unit)],
    ['max', formatCounter(lane.max[i], lane.unit)], ['bucket', `${fmtUs(c.startUs + i * c.bucketUs)} + ${fmtUs(c.bucketUs)}`],
    ['what', what]] };
}

/** @param {number} us */
function fmtUs(us) {
  return us >= 1000 ? `${Number((us / 1000).toPrecision(4))} ms` : `${Number(us.toPrecision(4))} µs`;
}

/** What each counter means, for its hover box. */
const MEANING = /** @type {Record<string, string>} */ ({
  utilization: 'share of time a kernel, memcpy or memset runs on the device',
  sm_efficiency: 'min(sum of the running kernels\' blocks per SM, 1), averaged over time',
  queue_length: 'operations launched on the stream and not started (HTA)',
  memory_bandwidth: 'summed GB/s of the copies running (HTA)',
  hw_counter: 'measured by a hardware counter (PM sampling): each sample until the next',
});
