// @ts-check
/**
 * The tables torch-tb-profiler and HTA add (the `tables` route's `module_tree`, `memory`, `annotation` and
 * `sequences`) and the kernel table's launch-configuration split, as the Tables panel needs them: columns,
 * default sorts, options and which module-tree rows an expand/collapse state shows. Pure: no DOM.
 */

/** @typedef {import('./tables.js').TableColumn} TableColumn */

/** The tabs beside Operators, Kernels and Modules: route `by` -> label. */
export const EXTRA_TABS = { module_tree: 'Module tree', memory: 'Memory', annotation: 'Annotations', sequences: 'Kernel sequences' };

/** How kernel rows may split (the route's `split`). */
export const KERNEL_SPLITS = [
  { value: 'name', label: 'by name' },
  { value: 'launch', label: 'by launch configuration', title: 'one row per kernel, grid, block, registers and shared memory' },
  { value: 'op_launch', label: 'by op and launch configuration', title: 'one row per kernel, launching op and launch configuration (torch-tb-profiler\u2019s grouping)' },
];

/** The annotation table's options (the route's `side` and `scope`). */
export const ANNOTATION_SIDES = [{ value: 'gpu', label: 'GPU ranges' }, { value: 'cpu', label: 'CPU ranges' }];
export const ANNOTATION_SCOPES = [
  { value: 'all', label: 'all', title: 'every annotation, nested ones too (as HTA counts them)' },
  { value: 'top', label: 'outermost', title: 'only the outermost annotations, ProfilerStep left out: their times add up' },
];

/** @type {Record<string, TableColumn[]>} */
const COLUMNS = {
  module_tree: [
    { key: 'name', sort: '', head: 'Module', kind: 'tree' },
    { key: 'occurrences', sort: '', head: 'Calls', kind: 'count' },
    { key: 'operators', sort: '', head: 'Ops', kind: 'count', title: 'ops directly inside the module, over its calls' },
    { key: 'host_us', sort: '', head: 'Host total', kind: 'dur' },
    { key: 'self_host_us', sort: '', head: 'Host self', kind: 'dur', title: 'minus the ops, modules and annotations directly inside, and its runtime calls' },
    { key: 'device_us', sort: '', head: 'Device total', kind: 'dur', title: 'device time launched inside the module' },
    { key: 'self_device_us', sort: '', head: 'Device self', kind: 'dur', title: 'device time not launched inside a child module or annotation' },
  ],
  memory: [
    { key: 'name', sort: 'name', head: 'Operator', kind: 'text' },
    { key: 'device', sort: 'device', head: 'Device', kind: 'text' },
    { key: 'calls', sort: 'calls', head: 'Calls', kind: 'count' },
    { key: 'self_alloc_count', sort: 'self_alloc_count', head: 'Self allocs', kind: 'count' },
    { key: 'self_alloc_bytes', sort: 'self_alloc', head: 'Self allocated', kind: 'bytes' },
    { key: 'self_freed_bytes', sort: 'self_freed', head: 'Self freed', kind: 'bytes' },
    { key: 'self_increase_bytes', sort: 'self_increase', head: 'Self increase', kind: 'bytes', title: 'allocated minus freed, in the op itself' },
    { key: 'alloc_count', sort: 'alloc_count', head: 'Allocs', kind: 'count', title: 'with the ops nested in it' },
    { key: 'alloc_bytes', sort: 'alloc', head: 'Allocated', kind: 'bytes', title: 'with the ops nested in it' },
    { key: 'freed_bytes', sort: 'freed', head: 'Freed', kind: 'bytes', title: 'with the ops nested in it' },
    { key: 'increase_bytes', sort: 'increase', head: 'Increase', kind: 'bytes', title: 'allocated minus freed, with the ops nested in it' },
    { key: 'peak_increase_bytes', sort: 'peak_increase', head: 'Peak increase', kind: 'bytes', title: 'the most a call\u2019s allocations rose above their level at its start' },
  ],
  annotation: [
    { key: 'name', sort: 'name', head: 'Annotation', kind: 'text' },
    { key: 'count', sort: 'count', head: 'Count', kind: 'count' },
    { key: 'total_us', sort: 'total', head: 'Total', kind: 'dur' },
    { key: 'mean_us', sort: 'mean', head: 'Mean', kind: 'dur' },
    { key: 'min_us', sort: 'min', head: 'Min', kind: 'dur' },
    { key: 'max_us', sort: 'max', head: 'Max', kind: 'dur' },
    { key: 'std_us', sort: 'std', head: 'Std dev', kind: 'dur' },
    { key: 'share', sort: '', head: 'Share', kind: 'share', title: 'of the annotated time in this table' },
  ],
  sequences: [
    { key: 'name', sort: 'name', head: 'Kernel sequence', kind: 'text' },
    { key: 'length', sort: 'length', head: 'Kernels', kind: 'count' },
    { key: 'occurrences', sort: 'occurrences', head: 'Occurrences', kind: 'count' },
    { key: 'total_us', sort: 'total', head: 'Time', kind: 'dur', title: 'kernel time the occurrences cover, each kernel once' },
    { key: 'mean_us', sort: 'mean', head: 'Per occurrence', kind: 'dur' },
    { key: 'share', sort: '', head: 'Share', kind: 'share', title: 'of all kernel time' },
    { key: 'launched_by', sort: '', head: 'First kernel launched by', kind: 'launchers' },
  ],
};

/** The module tree's column for a trace that replays graphs (the route's totals carry `attributed_from`). */
const REPLAYED_COLUMN = { key: 'replayed_device_us', sort: '', head: 'From graph replays', kind: 'dur',
  title: 'device time graph replays ran in the module, attributed from the reference run' };

/**
 * The columns of an extra table, undefined for the others; a module tree of graph replays adds its replayed time.
 * @param {string} by @param {any} [totals] the answer's totals
 * @returns {TableColumn[] | undefined}
 */
export function extraColumns(by, totals) {
  if (by === 'module_tree' && totals && typeof totals.attributed_from === 'string') return [...COLUMNS[by], REPLAYED_COLUMN];
  return COLUMNS[by];
}

/** The route's default sort of an extra table ('' keeps the server's order). @param {string} by */
export function extraDefaultSort(by) {
  return by === 'annotation' || by === 'sequences' ? '-total' : '';
}

/** The split column the kernel table gains with `split=op_launch`. @type {TableColumn} */
export const OP_COLUMN = { key: 'op', sort: '', head: 'Operator', kind: 'text', title: 'the op that launched these calls' };

/**
 * The module-tree rows to show: a row shows when every ancestor is expanded. Rows are in preorder with
 * `index` and `parent` (global preorder indices; a parent outside the page counts as expanded).
 * @param {{index: number, parent: number}[]} rows @param {Set<number>} collapsed indices of collapsed nodes
 * @returns {number[]} positions in `rows`
 */
export function visibleTreeRows(rows, collapsed) {
  const hidden = new Set();
  const out = [];
  for (let i = 0; i < rows.length; i += 1) {
    const { index, parent } = rows[i];
    if (parent >= 0 && (hidden.has(parent) || collapsed.has(parent))) {
      hidden.add(index);
      continue;
    }
    out.push(i);
  }
  return out;
}

/** Which tree rows have children on the page. @param {{index: number, parent: number}[]} rows @returns {Set<number>} */
export function treeParents(rows) {
  return new Set(rows.filter((r) => r.parent >= 0).map((r) => r.parent));
}

/**
 * "launched by" cell text: kernel rows carry GPU time, sequence rows occurrences.
 * @param {{name: string, gpu_us?: number, occurrences?: number}[]} launchers @param {(us: number) => string} duration
 */
export function launchersText(launchers, duration) {
  return (launchers ?? []).map((v) => `${v.name} (${v.gpu_us !== undefined ? duration(v.gpu_us) : `${v.occurrences}\u00d7`})`).join(', ');
}
