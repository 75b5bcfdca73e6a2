"""Counter lanes: step functions drawn under the GPU lanes, reduced per time bucket for any window.

Each counter is a step function of time (value from each change on), built once per model:
- `utilization` per device: 1 while any kernel, memcpy or memset runs on the device, else 0. Its bucket mean
  is the share of the bucket the device is busy (Kinetoscope's busy time, the union of its activities).
- `sm_efficiency` per device (devices whose kernels carry `blocks per SM`): min(sum of `blocks per SM` of the
  kernels running, 1), torch-tb-profiler's estimated SM efficiency (its `merge_ranges_with_value`); its
  bucket mean is the time-weighted estimate over the bucket (idle time counts 0, as tbprof's average over
  the steps does).
- `queue_length` per GPU stream: HTA's outstanding launched-but-not-started operations (analysis/counters.py).
- `memory_bandwidth` per memory type: HTA's summed GB/s of the copies running (analysis/counters.py).

A prefix integral at every change makes a bucket's mean two binary searches (I(b) - I(a)) / (b - a), and
its max one `reduceat`, so an answer costs O(buckets x log changes) per counter whatever the zoom: the
same level of detail at any window, with no per-level copy. Answers are bounded: MAX_COUNTER_LANES
counters, at most MAX_BUCKETS buckets of COUNTER_PX pixels each.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.counters import Series, memory_bandwidth, queue_length, step_series
from ..trace.kinds import ACTIVITY_KINDS, Kind
from ..trace.model import TraceModel, freeze_arrays

COUNTER_PX = 4  # pixels per bucket: a step chart finer than this reads as noise
MAX_BUCKETS = 500
MAX_COUNTER_LANES = 24  # 24 x 500 x 2 values x ~6 B: < 150 KB beside the lanes' 850 KB
UNITS = {"utilization": "fraction", "sm_efficiency": "fraction", "queue_length": "operations",
         "memory_bandwidth": "GB/s"}
SIGNIFICANT = 4  # digits kept per value: a 0.0002 GB/s mean still integrates to its bytes


@dataclass(frozen=True)
class CounterIndex:
    """Every counter's step function, concatenated (`ptr` CSR offsets), with its prefix integral."""

    kind: tuple[str, ...]
    label: tuple[str, ...]
    device: np.ndarray  # int64 per counter (-1 for memory bandwidth, which HTA sums over devices)
    stream: np.ndarray  # int64 per counter (-1 but for queue length)
    base_ns: int  # the model's start: times are stored from it (float64 keeps 0.25 µs at epoch ns)
    t_ns: np.ndarray  # int64 change times, from base_ns
    value: np.ndarray  # float64
    integral_ns: np.ndarray  # float64: integral of the step function from its first change to t_ns (value x ns)
    ptr: np.ndarray  # int64

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in vars(self).values() if isinstance(v, np.ndarray))

    def __len__(self) -> int:
        return len(self.kind)


def _device_series(model: TraceModel, rows: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, Series]:
    """Per device of `rows`: the running sum of `weight` over the rows' intervals (starts before ends at a tie)."""
    devices, key = np.unique(model.lane_pid[model.lane[rows]], return_inverse=True)
    key = key.astype(np.int64)
    n = rows.size
    start = model.ts_ns[rows]
    series = step_series(np.concatenate((key, key)), np.concatenate((start, start + model.dur_ns[rows])),
                         np.concatenate((weight, -weight)), devices.size,
                         np.concatenate((np.zeros(n, np.int8), np.ones(n, np.int8))))
    return devices.astype(np.int64), series


def _blocks_per_sm(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """(kernel rows, blocks per SM) of the kernels that carry a positive `blocks per SM`."""
    rows = model.gpu_arg_row
    bps = model.gpu_arg_blocks_per_sm
    keep = (bps > 0) & np.isfinite(bps)
    keep[keep] = model.kind[rows[keep]] == Kind.KERNEL
    return rows[keep], bps[keep].astype(np.float64)


def build_counter_index(model: TraceModel) -> CounterIndex:
    """The counters of a model, in drawing order: per device utilization then SM efficiency, then the queue
    length of each stream, then the bandwidth of each memory type."""
    parts: list[tuple[str, str, int, int, np.ndarray, np.ndarray]] = []
    act = np.flatnonzero(model.kind_in(ACTIVITY_KINDS))
    util_dev, util = _device_series(model, act, np.ones(act.size))
    sm_rows, bps = _blocks_per_sm(model)
    sm_dev, sm = _device_series(model, sm_rows, bps)
    for k, d in enumerate(util_dev.tolist()):
        r = util.rows(k)
        parts.append(("utilization", f"GPU {d} utilization", d, -1, util.t_ns[r], (util.value[r] > 0.5).astype(float)))
        if d in sm_dev:
            r = sm.rows(int(np.flatnonzero(sm_dev == d)[0]))
            parts.append(("sm_efficiency", f"GPU {d} est. SM efficiency", d, -1, sm.t_ns[r],
                          np.clip(sm.value[r], 0.0, 1.0)))
    q = queue_length(model)
    for k in range(len(q.series)):
        r = q.series.rows(k)
        d, s = int(q.device[k]), int(q.stream[k])
        parts.append(("queue_length", f"GPU {d} stream {s} queue", d, s, q.series.t_ns[r], q.series.value[r]))
    bw = memory_bandwidth(model)
    for k, name in enumerate(bw.names):
        r = bw.series.rows(k)
        parts.append(("memory_bandwidth", f"{name} GB/s", -1, -1, bw.series.t_ns[r], np.maximum(bw.series.value[r], 0.0)))
    return _index(parts, model.start_ns)


def _index(parts, base_ns: int) -> CounterIndex:
    sizes = np.array([p[4].size for p in parts], np.int64)
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    t = np.concatenate([p[4] for p in parts]).astype(np.int64) - base_ns if parts else np.zeros(0, np.int64)
    v = np.concatenate([p[5] for p in parts]).astype(np.float64) if parts else np.zeros(0)
    seg = np.zeros(t.size)
    if t.size > 1:
        seg[1:] = v[:-1] * np.diff(t)
        seg[ptr[:-1][sizes > 0]] = 0.0  # a series' first change starts its integral at 0
    total = np.cumsum(seg)
    base = np.repeat(np.where(sizes > 0, total[np.minimum(ptr[:-1], max(t.size - 1, 0))], 0.0), sizes)
    return CounterIndex(tuple(p[0] for p in parts), tuple(p[1] for p in parts),
                        np.array([p[2] for p in parts], np.int64), np.array([p[3] for p in parts], np.int64),
                        int(base_ns), t, v, total - base, ptr)


def bucket_stats(t_ns: np.ndarray, value: np.ndarray, integral_ns: np.ndarray, edges_ns: np.ndarray):
    """(mean, max) of one step function over the buckets [edges[i], edges[i+1]) (0 before its first change)."""
    if t_ns.size == 0:
        zeros = np.zeros(edges_ns.size - 1)
        return zeros, zeros
    j = np.searchsorted(t_ns, edges_ns, side="right") - 1
    at = np.maximum(j, 0)
    level = np.where(j >= 0, value[at], 0.0)
    area = np.where(j >= 0, integral_ns[at] + value[at] * (edges_ns - t_ns[at]), 0.0)
    mean = np.diff(area) / np.maximum(np.diff(edges_ns), 1e-9)
    lo = np.searchsorted(t_ns, edges_ns[:-1], side="right")
    hi = np.searchsorted(t_ns, edges_ns[1:], side="left")
    inner = np.maximum.reduceat(np.append(value, -np.inf), np.stack((lo, hi), 1).ravel())[::2]
    peak = np.maximum(level[:-1], np.where(hi > lo, inner, -np.inf))
    return mean, peak


def counters_view(counters: CounterIndex, t0_ns: int, t1_ns: int, width_px: int) -> dict[str, Any]:
    """The `counters` part of a `lanes` answer: each counter's mean and max per bucket of the window [t0, t1)
    (absolute ns; times in the answer are µs from the trace start, as everywhere in `lanes`)."""
    buckets = int(min(max(width_px // COUNTER_PX, 1), MAX_BUCKETS))
    base_ns = counters.base_ns
    edges = (t0_ns - base_ns) + (t1_ns - t0_ns) * (np.arange(buckets + 1, dtype=np.float64) / buckets)
    lanes = []
    for k in range(min(len(counters), MAX_COUNTER_LANES)):
        r = slice(int(counters.ptr[k]), int(counters.ptr[k + 1]))
        mean, peak = bucket_stats(counters.t_ns[r], counters.value[r], counters.integral_ns[r], edges)
        kind = counters.kind[k]
        lanes.append({"kind": kind, "label": counters.label[k], "device": int(counters.device[k]),
                      "stream": int(counters.stream[k]), "unit": UNITS[kind],
                      "mean": significant(mean).tolist(), "max": significant(peak).tolist()})
    return {"start_us": round((t0_ns - base_ns) / 1e3, 3), "bucket_us": round((t1_ns - t0_ns) / buckets / 1e3, 6),
            "buckets": buckets, "lanes": lanes, "lanes_total": len(counters),
            "lanes_hidden": max(len(counters) - MAX_COUNTER_LANES, 0)}


def significant(x: np.ndarray, digits: int = SIGNIFICANT) -> np.ndarray:
    """Non-negative values rounded to `digits` significant digits (float noise below 1e-9 read as 0)."""
    x = np.where(x > 1e-9, x, 0.0)
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.where(x > 0, x, 1.0))))
    return np.round(x * scale) / scale
