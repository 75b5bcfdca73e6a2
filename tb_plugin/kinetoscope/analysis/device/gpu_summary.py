"""The GPU summary per device, as torch-tb-profiler's Overview gave it, on its own definitions.

Every figure is over torch-tb-profiler's steps window: from the start of its first step to the end of its
last, steps reaching to the end of their GPU work (`tbprof_steps`); a trace without steps uses one step
over its host ops. Kernels only (memcpys and memsets are not GPU busy time here):

- utilization: the time at least one kernel runs on the device, inside the window, over the window.
  Kinetoscope's own busy share (`gpu_idle`: kernels, memcpys and memsets over the device's judged window)
  is given beside it as `kinetoscope_busy_pct`; the two answer different questions.
- SM efficiency (estimated): at each moment, the `blocks per SM` of the running kernels summed and capped
  at 1 (a kernel with fewer blocks than the GPU has SMs leaves SMs idle); integrated over the window and
  divided by the window: idle time counts as 0. Kernels without a positive `blocks per SM` count as 0.
- achieved occupancy (estimated): the kernels' `est. achieved occupancy %`, weighted by each kernel's time
  inside the window (idle time not counted).
- Tensor Cores: the share of kernel time (kernels with a launch call, anywhere in the trace) in kernels whose
  name carries one of torch-tb-profiler's Tensor-Core signatures (TC_KERNEL_SIGNATURES).

Measured beside these estimates, where the trace carries hardware-counter samples of the device (CUPTI PM
sampling, `hw_counters.py`): `measured`, each metric's time-weighted mean over the same window, and the fields
its metrics answer (GPU active as the measured utilization, SM active as the measured SM efficiency, warps
active as the measured occupancy, SM and DRAM throughput).

A figure is None when nothing measures it (no kernel with `blocks per SM` in the window, no occupancy,
no kernel at all).
"""
from __future__ import annotations

from typing import Any, Optional

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.kinds import Kind, LaneKind
from ...trace.model import TraceModel, unique
from ..tables.index import uses_tensor_cores
from .hw_counters import counter_series, measured_entry
from .tbprof_steps import TbprofSteps

# torch-tb-profiler's tensor_core.TC_Allowlist (after NVIDIA PyProf): a kernel whose name contains one of these
# ran on Tensor Cores. Narrower than `tables.uses_tensor_cores`, on purpose: these are its figures.
TC_KERNEL_SIGNATURES = ("h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
                        "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
                        "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm",
                        "c1688")
GIB = float(1 << 30)
MAX_DEVICES = 64  # devices summarized (a hostile trace may name thousands): the lowest ids


def uses_tensor_cores_tbprof(name: str) -> bool:
    """Whether torch-tb-profiler counted a kernel of this name as running on Tensor Cores."""
    return any(sig in name for sig in TC_KERNEL_SIGNATURES)


class GpuSummary(msgspec.Struct, frozen=True):
    """One device's summary; shares are fractions (0..1), None when nothing measures them."""

    device: int
    name: Optional[str]
    memory_bytes: Optional[int]
    compute_capability: Optional[str]
    window_ns: int  # torch-tb-profiler's steps window
    utilization: Optional[float]
    sm_efficiency: Optional[float]
    occupancy_pct: Optional[float]  # already a percentage, as the trace writes it
    tensor_core_share: Optional[float]
    tensor_core_share_any: Optional[float] = None  # by Kinetoscope's broader signatures (Hopper wgmma, bf16, AMD)
    measured: Optional[dict[str, Any]] = None  # hardware counters over the window (hw_counters.measured_entry)


def gpu_summaries(model: TraceModel, steps: TbprofSteps) -> tuple[GpuSummary, ...]:
    """The summary of every device that ran a kernel, in device order (at most MAX_DEVICES)."""
    kernels = np.flatnonzero((model.kind == Kind.KERNEL) & model.on_lanes(LaneKind.GPU))
    device = model.lane_pid[model.lane[kernels]]
    devices = unique(device)[:MAX_DEVICES]
    if devices.size == 0:
        return ()
    lo, hi = (int(steps.start_ns[0]), int(steps.end_ns[-1])) if steps.count else (model.start_ns, model.stop_ns)
    blocks, occupancy = _kernel_args(model, kernels)
    linked = model.launch_idx[kernels] >= 0
    tc_ids = model.name_ids_where(uses_tensor_cores_tbprof)
    tc = model.name_in(tc_ids, kernels)
    tc_any = tc | model.name_in(model.name_ids_where(uses_tensor_cores), kernels)
    series = counter_series(model)
    out = []
    for d in devices.tolist():
        on = device == d
        k = kernels[on]
        start, end = model.ts_ns[k], model.end_ns[k]
        util = float(intervals.covered(*intervals.union(start, end), [lo], [hi])[0]) / (hi - lo) if hi > lo else None
        mine = linked[on]
        linked_ns = model.dur_ns[k[mine]]
        out.append(GpuSummary(int(d), *_properties(model, int(d)), hi - lo, util,
                              _sm_efficiency(start, end, blocks[on], lo, hi),
                              _occupancy(start, end, occupancy[on], lo, hi),
                              _share(linked_ns, tc[on][mine], bool(linked.any())),
                              _share(linked_ns, tc_any[on][mine], bool(linked.any())),
                              measured_entry(series, int(d), lo, hi)))
    return tuple(out)


def _share(linked_ns: np.ndarray, hit: np.ndarray, any_linked: bool) -> Optional[float]:
    """The share of linked kernel time in `hit` kernels: 0 on a device whose linked kernels took no time, None
    when no kernel anywhere has a launch call."""
    total = float(linked_ns.sum())
    if total > 0:
        return float(linked_ns[hit].sum()) / total
    return 0.0 if any_linked else None


def _kernel_args(model: TraceModel, kernels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`blocks per SM` and occupancy (%) of each kernel row, NaN where absent."""
    blocks, occupancy = np.full(kernels.size, np.nan), np.full(kernels.size, np.nan)
    rows = model.gpu_arg_row
    if kernels.size and rows.size:
        pos = np.minimum(np.searchsorted(kernels, rows), kernels.size - 1)
        hit = kernels[pos] == rows
        blocks[pos[hit]] = np.where(model.gpu_arg_blocks_per_sm[hit] >= 0, model.gpu_arg_blocks_per_sm[hit], np.nan)
        occupancy[pos[hit]] = np.where(model.gpu_arg_occupancy[hit] >= 0, model.gpu_arg_occupancy[hit], np.nan)
    return blocks, occupancy


def _sm_efficiency(start: np.ndarray, end: np.ndarray, blocks: np.ndarray, lo: int, hi: int) -> Optional[float]:
    """min(1, Σ blocks per SM of the running kernels) integrated over [lo, hi), over hi - lo.

    A sweep over the kernels' edges: between two consecutive edges the running sum is constant.
    """
    ok = blocks > 0  # NaN (absent) compares false
    if not ok.any() or hi <= lo:
        return None
    t = np.concatenate((start[ok], end[ok]))
    delta = np.concatenate((blocks[ok], -blocks[ok]))
    order = np.lexsort((np.repeat([0, 1], ok.sum()), t))  # a start before an end at the same time
    t, level = t[order], np.cumsum(delta[order])
    seg_lo, seg_hi = np.maximum(t[:-1], lo), np.minimum(t[1:], hi)
    value = np.minimum(level[:-1], 1.0)
    keep = (t[1:] > t[:-1]) & (value > 1e-12) & (seg_hi > seg_lo)
    if not keep.any():
        return None
    return float(np.sum(value[keep] * (seg_hi[keep] - seg_lo[keep]))) / (hi - lo)


def _occupancy(start: np.ndarray, end: np.ndarray, occupancy: np.ndarray, lo: int, hi: int) -> Optional[float]:
    """Mean occupancy (%) of the kernels that report one, weighted by their time inside [lo, hi)."""
    ok = occupancy >= 0
    dur = np.maximum(np.minimum(end[ok], hi) - np.maximum(start[ok], lo), 0)
    total = float(dur.sum())
    return float(np.sum(occupancy[ok] * dur)) / total if total > 0 else None


def _properties(model: TraceModel, device: int) -> tuple[Optional[str], Optional[int], Optional[str]]:
    """(name, total memory in bytes, compute capability `major.minor`) from `deviceProperties`: the entry whose
    `id` is the device, else the device-th entry (as torch-tb-profiler read it)."""
    props = [p for p in model.meta.get("device_properties") or [] if isinstance(p, dict)]
    entry = next((p for p in props if _int(p.get("id")) == device), None)
    if entry is None and 0 <= device < len(props) and _int(props[device].get("id")) is None:
        entry = props[device]
    if entry is None:
        return None, None, None
    name = entry.get("name") if isinstance(entry.get("name"), str) else None
    memory = _int(entry.get("totalGlobalMem"))
    major, minor = _int(entry.get("computeMajor")), _int(entry.get("computeMinor"))
    capability = f"{major}.{minor}" if major is not None and minor is not None else None
    return name, memory if memory is None or memory >= 0 else None, capability


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 1 << 62 else None


def _pct(x: Optional[float]) -> Optional[float]:
    return None if x is None else 100.0 * x


def gpu_summary_entries(summaries: tuple[GpuSummary, ...], busy_pct: dict[int, float]) -> list[dict[str, Any]]:
    """The summaries as JSON (percentages, like torch-tb-profiler's Overview), each beside Kinetoscope's own busy %."""
    return [{"device": s.device, "name": s.name, "memory_bytes": s.memory_bytes,
             "memory_gb": None if s.memory_bytes is None else round(s.memory_bytes / GIB, 2),
             "compute_capability": s.compute_capability, "window_us": s.window_ns / 1e3,
             "utilization_pct": _pct(s.utilization), "kinetoscope_busy_pct": busy_pct.get(s.device),
             "sm_efficiency_pct": _pct(s.sm_efficiency), "occupancy_pct": s.occupancy_pct,
             "tensor_cores_pct": _pct(s.tensor_core_share),
             "kinetoscope_tensor_cores_pct": _pct(s.tensor_core_share_any),
             **({} if s.measured is None else {"measured": s.measured})} for s in summaries]
