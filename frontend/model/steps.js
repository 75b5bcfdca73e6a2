// @ts-check
/**
 * The step table's columns and order. A step row is a `stalls` step merged with the summary's
 * (`gpu_busy_us`, and the device time split into `compute_us`, `comm_us`, `exposed_comm_us`,
 * `memcpy_us`), and torch-tb-profiler's figures of the same step (`withTbprof`: `tbprof_*_us`). Pure.
 */

/**
 * @typedef {object} StepColumn
 * @property {string} key the step field
 * @property {string} head header text
 * @property {'text' | 'time' | 'dur' | 'share' | 'flag'} kind how a cell is written
 * @property {string} [title] header tooltip
 * @property {boolean} [comm] shown only when the span communicates
 * @property {boolean} [device] a device figure: left out of a trace without device activity
 */

/** @type {StepColumn[]} */
export const STEP_COLUMNS = [
  { key: 'name', head: 'step', kind: 'text' },
  { key: 'start_us', head: 'start', kind: 'time' },
  { key: 'dur_us', head: 'duration', kind: 'dur' },
  { key: 'dataloader_us', head: 'DataLoader wait', kind: 'dur' },
  { key: 'dataloader_share', head: 'DataLoader share', kind: 'share' },
  { key: 'gpu_idle_during_dataloader_us', head: 'GPU idle while waiting', kind: 'dur', device: true },
  { key: 'gpu_busy_us', head: 'GPU busy', kind: 'dur', device: true },
  { key: 'compute_us', head: 'compute', kind: 'dur', device: true, title: 'compute kernels (union) in the step' },
  { key: 'comm_us', head: 'comm', kind: 'dur', comm: true, title: 'communication kernels (NCCL/RCCL, union) in the step' },
  { key: 'exposed_comm_us', head: 'exposed comm', kind: 'dur', comm: true, title: 'communication no compute kernel hides' },
  { key: 'memcpy_us', head: 'memcpy', kind: 'dur', device: true, title: 'memory copies in the step' },
  { key: 'stalled', head: 'stalled', kind: 'flag' },
];

/**
 * The same steps as torch-tb-profiler measured them (the summary's `tbprof_*_us` step fields): its step
 * reaches to the end of its GPU work, and each moment counts for the first category covering it, in this order.
 * @type {StepColumn[]}
 */
export const TBPROF_STEP_COLUMNS = [
  { key: 'tbprof_dur_us', head: 'tb step', kind: 'dur', title: "torch-tb-profiler's step: to the end of the GPU work it launched" },
  { key: 'tbprof_kernel_us', head: 'tb Kernel', kind: 'dur', title: 'torch-tb-profiler: time a kernel ran (collectives apart)' },
  { key: 'tbprof_memcpy_us', head: 'tb Memcpy', kind: 'dur', title: 'torch-tb-profiler: memcpy, no kernel running' },
  { key: 'tbprof_memset_us', head: 'tb Memset', kind: 'dur', title: 'torch-tb-profiler: memset, neither of the above' },
  { key: 'tbprof_communication_us', head: 'tb Comm', kind: 'dur', comm: true, title: 'torch-tb-profiler: NCCL/Gloo collectives, none of the above' },
  { key: 'tbprof_runtime_us', head: 'tb Runtime', kind: 'dur', title: 'torch-tb-profiler: CUDA runtime calls, no device work' },
  { key: 'tbprof_dataloader_us', head: 'tb DataLoader', kind: 'dur', title: 'torch-tb-profiler: DataLoader __next__, none of the above' },
  { key: 'tbprof_cpu_exec_us', head: 'tb CPU Exec', kind: 'dur', title: 'torch-tb-profiler: other host ops, none of the above' },
  { key: 'tbprof_other_us', head: 'tb Other', kind: 'dur', title: 'torch-tb-profiler: nothing recorded' },
];

export const TBPROF_CATEGORIES = ['kernel', 'memcpy', 'memset', 'communication', 'runtime', 'dataloader', 'cpu_exec', 'other'];

/**
 * Steps with torch-tb-profiler's duration and categories of the same step (`tbprof_dur_us`,
 * `tbprof_<category>_us`) from the summary's columnar `tbprof_steps.steps`. Both list steps in time order from
 * the first; torch-tb-profiler may drop trailing ones, so the k-th step matches the k-th when the names agree.
 * @param {any[]} steps @param {any} tbprofSteps the summary's `tbprof_steps`
 */
export function withTbprof(steps, tbprofSteps) {
  const cols = tbprofSteps?.steps;
  const names = Array.isArray(cols?.name) ? cols.name : [];
  return steps.map((s, k) => {
    if (k >= names.length || names[k] !== s?.name) return s;
    /** @type {Record<string, unknown>} */
    const extra = { tbprof_dur_us: cols.dur_us?.[k] };
    for (const c of TBPROF_CATEGORIES) extra[`tbprof_${c}_us`] = cols[`${c}_us`]?.[k];
    return { ...s, ...extra };
  });
}

/**
 * The columns to show: the communication ones only when the span has communication (a step with
 * comm time, or `communicates` from the summary's devices); torch-tb-profiler's categories after them
 * when the steps carry them and `tbprofShown` (the table's toggle: off, the table fits a laptop screen); the GPU ones
 * only `withDevice` (false for a trace without device activity).
 * @param {any[]} steps @param {boolean} [communicates] @param {boolean} [tbprofShown] @param {boolean} [withDevice]
 */
export function stepColumns(steps, communicates = false, tbprofShown = true, withDevice = true) {
  const comm = communicates || steps.some((s) => Number(s?.comm_us) > 0);
  const tbprof = tbprofShown && steps.some((s) => typeof s?.tbprof_dur_us === 'number');
  return [...STEP_COLUMNS, ...(tbprof ? TBPROF_STEP_COLUMNS : [])].filter((c) => (comm || !c.comm) && (withDevice || !c.device));
}

/**
 * The sort value of a step's field: names as strings, flags as 0/1, missing numbers last-ish (-Infinity).
 * @param {any} step @param {StepColumn} column
 * @returns {number | string}
 */
export function stepValue(step, column) {
  const v = step?.[column.key];
  if (column.kind === 'text') return String(v ?? '');
  if (column.kind === 'flag') return v ? 1 : 0;
  return typeof v === 'number' && Number.isFinite(v) ? v : -Infinity;
}

/**
 * A sorted copy of `steps` by `column` (names in natural order: "ProfilerStep#10" after "#9").
 * @param {any[]} steps @param {StepColumn} column @param {boolean} desc
 */
export function sortSteps(steps, column, desc) {
  return [...steps].sort((a, b) => {
    const va = stepValue(a, column);
    const vb = stepValue(b, column);
    const cmp = typeof va === 'string' || typeof vb === 'string'
      ? String(va).localeCompare(String(vb), undefined, { numeric: true })
      : va === vb ? 0 : va < vb ? -1 : 1;
    return desc ? -cmp : cmp;
  });
}
