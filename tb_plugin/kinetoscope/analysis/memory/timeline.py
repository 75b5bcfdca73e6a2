"""Allocated and reserved memory per device over time, its peak, who made it, and step-to-step growth.

`[memory]` events sit on the host thread that allocated, also for GPU memory. Files since ~1.10 carry
`Total Allocated`/`Total Reserved`; 2021 files only carry `Bytes`, so the curve is their running sum,
relative to the start of the trace (memory allocated before profiling started is unknown), and reserved
memory is not recorded at all (None, never 0).
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.model import TraceModel, unique
from ..core.selectors import OpIndex, names_of

DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "cuda", 12: "xpu", 13: "mps", 19: "mtia", 20: "privateuseone"}


class MemorySeries(msgspec.Struct, frozen=True):
    """One device's memory curve (parallel arrays sorted by time) and its peak."""

    device: str
    ts_ns: np.ndarray
    allocated_bytes: np.ndarray
    reserved_bytes: np.ndarray
    peak_allocated_bytes: int
    peak_reserved_bytes: Optional[int]  # None: the trace does not record reserved memory
    peak_at_ns: int
    peak_op: str
    step_growth_bytes: np.ndarray  # allocated at step end minus at step start, per step
    leak_suspect: bool
    relative: bool  # allocated is a running sum of byte deltas: relative to the start of the trace


def device_label(device_type: int, device_id: int) -> str:
    """`cpu`, `cuda:0`, ... from c10's DeviceType and index."""
    kind = DEVICE_TYPES.get(int(device_type), f"device{int(device_type)}")
    return kind if kind == "cpu" else f"{kind}:{int(device_id)}"


def memory_timeline(model: TraceModel, step_start_ns=None, step_end_ns=None, *,
                    leak_min_steps: int = 3, ops: Optional[OpIndex] = None) -> tuple[MemorySeries, ...]:
    """One series per (device type, device id), CPU first.

    Args:
        model: the trace.
        step_start_ns, step_end_ns: step boundaries for growth per step (optional).
        leak_min_steps: a rise in every one of at least this many steps flags a possible leak.
        ops: a prebuilt OpIndex of the model (built here when not given).
    """
    if model.mem_ts_ns.size == 0:
        return ()
    ops = ops or OpIndex(model)
    key = model.mem_device_type.astype(np.int64) * 65536 + model.mem_device_id.astype(np.int64) + 1
    series = []
    for k in unique(key):
        rows = np.flatnonzero(key == k)  # memory columns are sorted by time
        series.append(_series(model, rows, ops, step_start_ns, step_end_ns, leak_min_steps))
    return tuple(sorted(series, key=lambda s: (s.device != "cpu", s.device)))


def _series(model, rows, ops, step_start_ns, step_end_ns, leak_min_steps) -> MemorySeries:
    totals = model.mem_total_allocated[rows]
    relative = not np.all(totals >= 0)
    allocated = np.cumsum(model.mem_bytes[rows]) if relative else totals
    recorded = model.mem_total_reserved[rows] >= 0
    reserved = np.maximum(model.mem_total_reserved[rows], 0)
    ts = model.mem_ts_ns[rows]
    peak = int(np.argmax(allocated))
    peak_op_row = ops.outermost_at(model.mem_lane[rows[peak:peak + 1]], ts[peak:peak + 1])
    growth = _step_growth(ts, allocated, step_start_ns, step_end_ns)
    leak = bool(growth.size >= leak_min_steps and np.all(growth > 0))
    return MemorySeries(
        device=device_label(model.mem_device_type[rows[0]], model.mem_device_id[rows[0]]), ts_ns=ts,
        allocated_bytes=allocated, reserved_bytes=reserved, peak_allocated_bytes=int(allocated[peak]),
        peak_reserved_bytes=int(reserved.max()) if recorded.any() else None, peak_at_ns=int(ts[peak]), peak_op=names_of(model, peak_op_row)[0],
        step_growth_bytes=growth, leak_suspect=leak, relative=relative)


def _step_growth(ts, allocated, step_start_ns, step_end_ns) -> np.ndarray:
    """Allocated bytes at each step's end minus at its start (the last sample at or before each)."""
    if step_start_ns is None or len(step_start_ns) == 0:
        return np.zeros(0, np.int64)

    def level(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(ts, t, side="right") - 1
        return np.where(k >= 0, allocated[np.maximum(k, 0)], 0)

    return level(np.asarray(step_end_ns)) - level(np.asarray(step_start_ns))


def downsample_minmax(ts_ns: np.ndarray, values: np.ndarray, max_points: int) -> np.ndarray:
    """Indices to keep so a curve drawn from them shows every bucket's extremes (uPlot-style).

    The time range is cut into max_points // 4 buckets; each keeps its first, minimum, maximum and
    last sample, so peaks survive any reduction. Returns sorted unique indices (all when small).
    """
    n = ts_ns.size
    if n <= max_points:
        return np.arange(n)
    buckets = max(1, max_points // 4)
    span = max(int(ts_ns[-1] - ts_ns[0]), 1)
    bucket = np.minimum((ts_ns - ts_ns[0]) * buckets // span, buckets - 1)
    starts = np.flatnonzero(np.concatenate(([True], bucket[1:] != bucket[:-1])))
    ends = np.concatenate((starts[1:], [n])) - 1
    order = np.lexsort((values, bucket))  # by bucket, then value
    first_of_bucket = np.searchsorted(bucket[order], bucket[starts], side="left")
    last_of_bucket = np.searchsorted(bucket[order], bucket[starts], side="right") - 1
    keep = np.concatenate((starts, ends, order[first_of_bucket], order[last_of_bucket]))
    return unique(keep)
