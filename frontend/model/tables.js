// @ts-check
/**
 * The profiler tables and the name search, as the page needs them: columns per table, sort toggling,
 * the area a drag selects, and stepping through search hits one page at a time. Pure: no DOM.
 */
import { formatCount } from './format.js';

/**
 * @typedef {object} TableColumn
 * @property {string} key field of a `tables` row
 * @property {string} sort the route's sort key ('' when the column does not sort)
 * @property {string} head
 * @property {'text' | 'count' | 'dur' | 'share' | 'flag' | 'launchers' | 'bytes' | 'number' | 'tree'} kind
 * @property {string} [title]
 */

/** @type {Record<string, TableColumn[]>} */
const OP_COLUMNS = {
  op: [
    { key: 'name', sort: 'name', head: 'Operator', kind: 'text' },
    { key: 'calls', sort: 'calls', head: 'Calls', kind: 'count' },
    { key: 'cpu_total_us', sort: 'cpu_total', head: 'CPU total', kind: 'dur' },
    { key: 'cpu_self_us', sort: 'cpu_self', head: 'CPU self', kind: 'dur', title: 'minus child ops and the runtime calls it made' },
    { key: 'cpu_mean_us', sort: 'cpu_mean', head: 'CPU mean', kind: 'dur' },
    { key: 'cpu_max_us', sort: 'cpu_max', head: 'CPU max', kind: 'dur' },
    { key: 'gpu_self_us', sort: 'gpu_self', head: 'GPU self', kind: 'dur', title: 'device time of what the op launched itself' },
    { key: 'gpu_total_us', sort: 'gpu_total', head: 'GPU total', kind: 'dur', title: 'device time launched by the op and the ops inside it' },
    { key: 'gpu_mean_us', sort: 'gpu_mean', head: 'GPU mean', kind: 'dur' },
    { key: 'launches', sort: 'launches', head: 'Launches', kind: 'count' },
  ],
  kernel: [
    { key: 'name', sort: 'name', head: 'Kernel', kind: 'text' },
    { key: 'kind', sort: '', head: 'Kind', kind: 'text' },
    { key: 'calls', sort: 'calls', head: 'Calls', kind: 'count' },
    { key: 'total_us', sort: 'total', head: 'Total', kind: 'dur' },
    { key: 'mean_us', sort: 'mean', head: 'Mean', kind: 'dur' },
    { key: 'min_us', sort: 'min', head: 'Min', kind: 'dur' },
    { key: 'max_us', sort: 'max', head: 'Max', kind: 'dur' },
    { key: 'share', sort: 'share', head: 'Share', kind: 'share', title: 'of all device time in the window' },
    { key: 'tensor_core', sort: '', head: 'Tensor Cores', kind: 'flag', title: 'by kernel-name signature' },
    { key: 'grid', sort: '', head: 'Grid', kind: 'number', title: 'blocks (x*y*z), mean over the calls weighted by their time' },
    { key: 'block', sort: '', head: 'Block', kind: 'number', title: 'threads per block (x*y*z), time-weighted mean' },
    { key: 'registers', sort: '', head: 'Regs', kind: 'number', title: 'registers per thread, time-weighted mean' },
    { key: 'shared_mem', sort: '', head: 'Shared mem', kind: 'bytes', title: 'shared memory per block, time-weighted mean' },
    { key: 'blocks_per_sm', sort: '', head: 'Blocks/SM', kind: 'number', title: 'below 1, some SMs sit idle (time-weighted mean)' },
    { key: 'occupancy', sort: '', head: 'Occupancy %', kind: 'number', title: 'estimated achieved occupancy, time-weighted mean' },
    { key: 'bytes', sort: '', head: 'Bytes', kind: 'bytes', title: 'memcpy/memset: bytes moved in the window' },
    { key: 'bandwidth_gbps', sort: '', head: 'GB/s', kind: 'number', title: 'memcpy/memset bandwidth' },
    { key: 'launched_by', sort: '', head: 'Launched by', kind: 'launchers' },
  ],
};

/** How the operator table may group its calls (the route's `group`), as the panel offers them. */
export const OP_GROUPS = [
  { value: 'name', label: 'by name' },
  { value: 'shape', label: 'by input shapes', title: 'one row per op and its input shapes (traces recorded with record_shapes=True)' },
  { value: 'stack', label: 'by call stack frame', title: 'one row per op and the innermost Python frame that called it (traces recorded with with_stack=True)' },
  { value: 'module', label: 'by module', title: 'one row per op and the innermost nn.Module it ran in (traces recorded with with_modules=True or with_stack=True)' },
];

/** The extra column of each op grouping. @type {Record<string, TableColumn>} */
const GROUP_COLUMNS = {
  stack: { key: 'frame', sort: '', head: 'Python frame', kind: 'text', title: 'innermost user frame around the call' },
  shape: { key: 'shapes', sort: '', head: 'Input shapes', kind: 'text', title: 'Input Dims of the calls (record_shapes)' },
  module: { key: 'module', sort: '', head: 'Module', kind: 'text', title: 'the innermost nn.Module around the call' },
};

/**
 * @param {string} by `op`, `kernel` or `module` @param {string} [group] op rows per name, `stack` (op, Python frame)
 * or `shape` (op, input shapes) @param {boolean} [withDevice] false: the GPU columns are left out (a CPU-only trace)
 * @returns {TableColumn[]}
 */
export function tableColumns(by, group = 'name', withDevice = true) {
  if (by === 'kernel') return OP_COLUMNS.kernel;
  const cols = withDevice ? OP_COLUMNS.op : OP_COLUMNS.op.filter((c) => !DEVICE_COLUMNS.has(c.key));
  const extra = by === 'op' ? GROUP_COLUMNS[group] : undefined;
  if (extra) return [cols[0], extra, ...cols.slice(1)];
  return by === 'module' ? [{ ...cols[0], head: 'Module' }, ...cols.slice(1)] : cols;
}

/**
 * The default sort of a table (as the route's); a trace without device activity sorts ops by CPU time.
 * @param {string} by @param {boolean} [withDevice]
 */
export function defaultSort(by, withDevice = true) {
  return by === 'kernel' ? '-total' : withDevice ? '-gpu_total' : '-cpu_total';
}

/** Op and module columns that only a trace with device activity fills. */
const DEVICE_COLUMNS = new Set(['gpu_self_us', 'gpu_total_us', 'gpu_mean_us', 'launches']);

/**
 * The sort after a click on a column: the same column flips; a new one starts descending (names ascending).
 * @param {string} current e.g. `-gpu_total` @param {TableColumn} column
 * @returns {string}
 */
export function nextSort(current, column) {
  if (!column.sort) return current;
  if (current.replace(/^-/, '') === column.sort) return current.startsWith('-') ? column.sort : `-${column.sort}`;
  return column.kind === 'text' ? column.sort : `-${column.sort}`;
}

/** A drag shorter than this many CSS pixels is a click, not an area. */
export const MIN_AREA_PX = 3;

/**
 * The area [t0, t1] µs between two x positions of a drag (either order), clamped to the bounds; null when
 * the drag is too short to mean an area.
 * @param {number} x0Css @param {number} x1Css
 * @param {{xToT: (x: number) => number}} scale
 * @param {{t0Us: number, t1Us: number}} bounds
 * @returns {{t0Us: number, t1Us: number} | null}
 */
export function areaFromDrag(x0Css, x1Css, scale, bounds) {
  if (Math.abs(x1Css - x0Css) < MIN_AREA_PX) return null;
  const a = scale.xToT(Math.min(x0Css, x1Css));
  const b = scale.xToT(Math.max(x0Css, x1Css));
  const t0Us = Math.max(bounds.t0Us, a);
  const t1Us = Math.min(bounds.t1Us, b);
  return t1Us > t0Us ? { t0Us, t1Us } : null;
}

/**
 * Search hit number `n` (0-based) after a step of `delta`, wrapping around `total`; and the page offset that
 * holds it when the loaded page [offset, offset + count) does not.
 * @param {number} n @param {number} delta @param {number} total
 * @param {{offset: number, count: number, limit: number}} page
 * @returns {{n: number, fetchOffset: number | null}}
 */
export function searchStep(n, delta, total, page) {
  if (total <= 0) return { n: -1, fetchOffset: null };
  const next = (((n + delta) % total) + total) % total;
  const inPage = next >= page.offset && next < page.offset + page.count;
  return { n: next, fetchOffset: inPage ? null : Math.floor(next / page.limit) * page.limit };
}

/** "3 of 120", or "no match". @param {number} n @param {number} total */
export function searchLabel(n, total) {
  return total > 0 && n >= 0 ? `${formatCount(n + 1)} of ${formatCount(total)}` : 'no match';
}

/**
 * The hover title of a row's name: the name, and where the server cut it (over 1,000 characters) its full
 * length and its stable key (`name_key`, which keeps rows with the same cut name apart).
 * @param {{name?: unknown, name_key?: unknown, name_chars?: unknown}} row
 */
export function nameTitle(row) {
  const name = String(row?.name ?? '');
  if (typeof row?.name_key !== 'string') return name;
  return `${name}\n(cut: the trace's name has ${formatCount(Number(row.name_chars))} characters; key ${row.name_key})`;
}
