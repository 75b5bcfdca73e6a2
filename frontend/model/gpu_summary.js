// @ts-check
/**
 * The GPU summary of the overview: per device, what it is (`deviceProperties`) and torch-tb-profiler's
 * figures, each labelled with what it measures, beside Kinetoscope's own busy share. Pure.
 */

export const MAX_SHOWN_DEVICES = 8; // the overview lists this many devices; the report and the JSON have them all

/**
 * @typedef {object} GpuFigure
 * @property {string} key the `gpu_summary[]` field
 * @property {string} label
 * @property {string} title what it measures
 */

/** @type {GpuFigure[]} */
export const GPU_FIGURES = [
  { key: 'utilization_pct', label: 'GPU utilization', title: "torch-tb-profiler's: time at least one kernel runs, over all steps' time (steps reach to the end of their GPU work)" },
  { key: 'kinetoscope_busy_pct', label: 'busy (Kinetoscope)', title: "Kinetoscope's: kernels, memcpys and memsets (union) over the device's judged window" },
  { key: 'sm_efficiency_pct', label: 'est. SM efficiency', title: "blocks per SM of the running kernels, capped at 1, over all steps' time" },
  { key: 'occupancy_pct', label: 'est. achieved occupancy', title: 'the kernels\u2019 achieved occupancy, weighted by kernel time' },
  { key: 'tensor_cores_pct', label: 'kernel time using Tensor Cores', title: "share of kernel time in Tensor-Core kernels (torch-tb-profiler's name list, written for Volta to Ampere)" },
  { key: 'kinetoscope_tensor_cores_pct', label: 'Tensor Cores (Kinetoscope)', title: "the same share by Kinetoscope's signatures: Hopper wgmma/xmma, bf16 and tf32 kernels, AMD matrix cores" },
];

/**
 * The hardware-counter figures (`gpu_summary[].measured`, CUPTI PM sampling), each shown after the estimate it
 * measures (`after`), the others after the last figure.
 * @type {(GpuFigure & {after: string | null})[]}
 */
export const MEASURED_FIGURES = [
  { key: 'utilization_pct', label: 'measured GPU active', after: 'utilization_pct', title: 'hardware counter gr__cycles_active (PM sampling): time-weighted mean over the steps window' },
  { key: 'sm_efficiency_pct', label: 'measured SM active', after: 'sm_efficiency_pct', title: 'hardware counter sm__cycles_active (PM sampling): what the estimated SM efficiency estimates' },
  { key: 'occupancy_pct', label: 'measured warps active', after: 'occupancy_pct', title: 'hardware counter sm__warps_active (PM sampling): the achieved occupancy measured' },
  { key: 'sm_throughput_pct', label: 'measured SM throughput', after: null, title: 'hardware counter sm__throughput (PM sampling), share of peak' },
  { key: 'dram_throughput_pct', label: 'measured DRAM throughput', after: null, title: 'hardware counter dram__throughput (PM sampling), share of peak' },
  { key: 'tensor_active_pct', label: 'measured Tensor pipes active', after: null, title: 'hardware counter of the Tensor pipes (PM sampling), share of peak' },
];

/**
 * A device's figures: torch-tb-profiler's estimates, each followed by its measured counterpart where the trace
 * has hardware counters.
 * @param {any} g one `gpu_summary` entry
 */
function deviceFigures(g) {
  const measured = g?.measured && typeof g.measured === 'object' ? g.measured : null;
  const shown = (/** @type {GpuFigure} */ f, /** @type {unknown} */ v, key = f.key) => ({ key, label: f.label, title: f.title, value: pctText(v) });
  const extra = (/** @type {string | null} */ after) => (measured ? MEASURED_FIGURES
    .filter((m) => m.after === after && typeof measured[m.key] === 'number')
    .map((m) => shown(m, measured[m.key], `measured.${m.key}`)) : []);
  return [...GPU_FIGURES.flatMap((f) => [shown(f, g?.[f.key]), ...extra(f.key)]), ...extra(null)];
}

/**
 * A percentage with two decimals ("55.51%"), or "–" when not measured.
 * @param {unknown} pct
 */
export function pctText(pct) {
  return typeof pct === 'number' && Number.isFinite(pct) ? `${pct.toFixed(2)}%` : '\u2013';
}

/**
 * The device's heading: "GPU 0 · Tesla V100-DGXS-32GB · 31.74 GB · compute 7.0" (parts it lacks left out).
 * @param {any} g one `gpu_summary` entry
 */
export function deviceHeading(g) {
  const parts = [`GPU ${g?.device ?? '?'}`];
  if (typeof g?.name === 'string' && g.name) parts.push(g.name);
  if (typeof g?.memory_gb === 'number' && Number.isFinite(g.memory_gb)) parts.push(`${g.memory_gb} GB`);
  if (typeof g?.compute_capability === 'string' && g.compute_capability) parts.push(`compute ${g.compute_capability}`);
  return parts.join(' \u00b7 ');
}

/**
 * The rows of the GPU-summary block: one per device (MAX_SHOWN_DEVICES at most), each with its figures.
 * @param {any} summary the `summary` answer
 * @returns {{heading: string, device: string, figures: {key: string, label: string, title: string, value: string}[]}[]}
 */
export function gpuSummaryRows(summary) {
  const gpus = Array.isArray(summary?.gpu_summary) ? summary.gpu_summary.slice(0, MAX_SHOWN_DEVICES) : [];
  return gpus.map((/** @type {any} */ g) => ({
    heading: deviceHeading(g),
    device: String(g?.device ?? ''),
    figures: deviceFigures(g),
  }));
}
