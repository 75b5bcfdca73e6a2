"""Counter lanes: step functions drawn under the GPU lanes, reduced per time bucket for any window.

Each counter is a step function of time (value from each change on), built once per model:
- `utilization` per device: 1 while any kernel, memcpy or memset runs on the device, else 0. Its bucket mean
  is the share of the bucket the device is busy (Kinetoscope's busy time, the union of its activities).
- `sm_efficiency` per device (devices whose kernels carry `blocks per SM`): min(sum of `blocks per SM` of the
  kernels running, 1), torch-tb-profiler's estimated SM efficiency (its `merge_ranges_with_value`); its
  bucket mean is the time-weighted estimate over the bucket (idle time counts 0, as tbprof's average over
  the steps does).
- `queue_length` per GPU stream: HTA's outstanding launched-but-not-started operations (analysis/device/counters.py).
- `memory_bandwidth` per memory type: HTA's summed GB/s of the copies running (analysis/device/counters.py).
- `hw_counter` per hardware-counter series (CUPTI PM sampling, analysis/device/hw_counters.py), after its device's
  estimates: measured, each sample's value until the next sample (0 after the last one's interval). Shares of a
  peak (`pct_of_peak` metrics) are drawn as fractions, beside the estimated ones; other metrics in their own unit.

A prefix integral at every change makes a bucket's mean two binary searches (I(b) - I(a)) / (b - a), and a
range-maximum table over blocks of changes its max (`sparse_table`), so an answer costs O(buckets x log
changes) per counter whatever the zoom and however many changes a bucket spans: the same level of detail
at any window, with no per-level copy. Every counter's keys are packed into one sorted column, as the lane
index packs its groups, so all counters are searched at once. Answers are bounded: MAX_COUNTER_LANES
counters, at most MAX_BUCKETS buckets of COUNTER_PX pixels each, values rounded (RESOLUTION).
"""
from __future__ import annotations

from typing import Any, Optional

import msgspec
import numpy as np

from ..analysis.device.counters import Series, memory_bandwidth, queue_length, step_series
from ..analysis.device.hw_counters import CounterSeries, counter_series
from ..trace.kinds import ACTIVITY_KINDS, Kind
from ..trace.model import TraceModel, freeze_arrays, record_values, unique_inverse

try:
    from . import _counters as _accel
except ImportError:  # built without a C compiler: the numpy pass
    _accel = None
ACCELERATED = _accel is not None

COUNTER_PX = 6  # pixels per bucket: a step chart finer than this reads as noise, and costs answer size
MAX_BUCKETS = 500
MAX_COUNTER_LANES = 24  # 24 x 500 x 2 values x ~8 B: < 200 KB beside the lanes' 850 KB
UNITS = {"utilization": "fraction", "sm_efficiency": "fraction", "queue_length": "operations",
         "memory_bandwidth": "GB/s"}
_KEY_LIMIT = 1 << 62
MAX_BLOCK = 16  # values per block of the range-maximum table (see sparse_table)
RESOLUTION = 5  # decimals kept below each counter's largest value in the window (see lane_decimals)


class CounterIndex(msgspec.Struct, frozen=True):
    """The counters' step functions (the first MAX_COUNTER_LANES, in drawing order), concatenated in one
    sorted key column `key = counter * stride + (t - base_ns)` as lane_index.py packs its groups, so the
    buckets of every counter are one `searchsorted`; with each change's prefix integral."""

    kind: tuple[str, ...]
    label: tuple[str, ...]
    device: np.ndarray  # int64 per counter (-1 for memory bandwidth, which HTA sums over devices)
    stream: np.ndarray  # int64 per counter (-1 but for queue length)
    total: int  # counters of the trace, those beyond MAX_COUNTER_LANES included
    base_ns: int  # the model's start: times are stored from it
    stride: int  # exceeds every stored time: one counter's keys never reach the next one's
    key: np.ndarray  # int64 per change, ascending
    value: np.ndarray  # float64 from the change on
    integral_ns: np.ndarray  # float64: integral of the counter from its first change to this one (value x ns)
    ptr: np.ndarray  # int64 CSR offsets of the counters' changes
    sparse: np.ndarray  # float64: max of `value` over 2^k blocks of MAX_BLOCK changes from each block, k = 0, 1, ...
    sparse_ptr: np.ndarray  # int64 offset of level k in `sparse`
    unit: tuple[str, ...] = ()  # per counter: what its values are in (UNITS by kind; a hardware counter's own)

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in record_values(self) if isinstance(v, np.ndarray))

    def __len__(self) -> int:
        return len(self.kind)


def _device_series(model: TraceModel, rows: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, Series]:
    """Per device of `rows`: the running sum of `weight` over the rows' intervals (starts before ends at a tie)."""
    devices, key = unique_inverse(model.lane_pid[model.lane[rows]])
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
    """The counters of a model, in drawing order: per device utilization, SM efficiency and the device's hardware
    counters, then the queue length of each stream, then the bandwidth of each memory type (the first
    MAX_COUNTER_LANES of them)."""
    parts: list[tuple[str, str, int, int, np.ndarray, np.ndarray]] = []
    act = np.flatnonzero(model.kind_in(ACTIVITY_KINDS))
    util_dev, util = _device_series(model, act, np.ones(act.size))
    sm_rows, bps = _blocks_per_sm(model)
    sm_dev, sm = _device_series(model, sm_rows, bps)
    q, bw = queue_length(model), memory_bandwidth(model)
    sm_of = dict(zip(sm_dev.tolist(), range(sm_dev.size)))
    measured = counter_series(model)
    hw_of: dict[int, list] = {}
    for s in measured:
        hw_of.setdefault(s.device, []).append(_measured_part(s))
    for k, d in enumerate(util_dev[:MAX_COUNTER_LANES].tolist()):  # a hostile trace may have 100,000 devices
        r = util.rows(k)
        parts.append(("utilization", f"GPU {d} utilization", d, -1, util.t_ns[r], (util.value[r] > 0.5).astype(float)))
        if d in sm_of:
            r = sm.rows(sm_of[d])
            parts.append(("sm_efficiency", f"GPU {d} est. SM efficiency", d, -1, sm.t_ns[r],
                          np.clip(sm.value[r], 0.0, 1.0)))
        parts += hw_of.pop(d, [])
    parts += [part for rest in hw_of.values() for part in rest]  # devices with counters and no activity
    for k in range(min(len(q.series), MAX_COUNTER_LANES)):
        r = q.series.rows(k)
        d, s = int(q.device[k]), int(q.stream[k])
        parts.append(("queue_length", f"GPU {d} stream {s} queue", d, s, q.series.t_ns[r], q.series.value[r]))
    for k, name in enumerate(bw.names[:MAX_COUNTER_LANES]):
        r = bw.series.rows(k)
        parts.append(("memory_bandwidth", f"{name} GB/s", -1, -1, bw.series.t_ns[r], np.maximum(bw.series.value[r], 0.0)))
    total = util_dev.size + sm_dev.size + len(measured) + len(q.series) + len(bw.names)
    return counter_index(parts[:MAX_COUNTER_LANES], model.start_ns, total)


def _measured_part(s: CounterSeries) -> tuple:
    """A hardware-counter series as a counter part: its samples' values from their starts, 0 from the last one's end;
    shares of a peak as fractions (unit 'fraction', as the estimated utilization's)."""
    share = s.unit == "%"
    t = np.append(s.start_ns, s.end_ns[-1:]) if s.start_ns.size else s.start_ns
    value = np.append(s.value / 100.0 if share else s.value, np.zeros(min(s.start_ns.size, 1)))
    label = f"GPU {s.device} {s.name}" if s.device >= 0 else s.name
    return ("hw_counter", label, s.device, -1, t, np.maximum(value, 0.0), "fraction" if share else s.unit)


def counter_index(parts, base_ns: int, total: Optional[int] = None) -> CounterIndex:
    """The index of `parts`: (kind, label, device, stream, change times in ns, values[, unit]) per counter, in
    order (the unit by the kind when not given); `total`: the trace's counters, when `parts` is the first of them."""
    total = len(parts) if total is None else int(total)
    t_all = [p[4].astype(np.int64, copy=False) - base_ns for p in parts]
    stride = int(max((int(t.max()) for t in t_all if t.size), default=0)) + 2
    parts, t_all = parts[:min(MAX_COUNTER_LANES, max(_KEY_LIMIT // stride, 1))], t_all[:MAX_COUNTER_LANES]
    t_all = t_all[:len(parts)]
    sizes = np.array([t.size for t in t_all], np.int64)
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    t = np.concatenate(t_all) if parts else np.zeros(0, np.int64)
    v = np.concatenate([p[5] for p in parts]).astype(np.float64, copy=False) if parts else np.zeros(0)
    seg = np.zeros(t.size)
    if t.size > 1:
        seg[1:] = v[:-1] * np.diff(t)
        seg[ptr[:-1][sizes > 0]] = 0.0  # a series' first change starts its integral at 0
    area = np.cumsum(seg, out=seg)  # in place, as below: each of these is a column of every change
    first_area = area[np.minimum(ptr[:-1], t.size - 1)] if t.size else np.zeros(len(parts))
    area -= np.repeat(np.where(sizes > 0, first_area, 0.0), sizes)
    t += np.repeat(np.arange(len(parts), dtype=np.int64) * stride, sizes)  # the keys
    return CounterIndex(tuple(p[0] for p in parts), tuple(p[1] for p in parts),
                        np.array([p[2] for p in parts], np.int64), np.array([p[3] for p in parts], np.int64),
                        total, int(base_ns), stride, t, v, area, ptr, *sparse_table(v),
                        tuple(p[6] if len(p) > 6 else UNITS[p[0]] for p in parts))


def sparse_table(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Range-maximum table over blocks of MAX_BLOCK values: level k holds the max of 2^k blocks from each block
    (about n / MAX_BLOCK x log2 of that values: as many as `value` holds for 10 million changes)."""
    n_blocks = -(-value.size // MAX_BLOCK)
    padded = np.full(n_blocks * MAX_BLOCK, -np.inf)
    padded[:value.size] = value
    levels = [padded.reshape(n_blocks, MAX_BLOCK).max(axis=1)] if n_blocks else [np.zeros(0)]
    while (1 << len(levels)) <= n_blocks:
        prev, half = levels[-1], 1 << (len(levels) - 1)
        levels.append(np.maximum(prev[:-half], prev[half:]))
    return np.concatenate(levels), np.concatenate(([0], np.cumsum([lv.size for lv in levels]))).astype(np.int64)


def range_max(counters: CounterIndex, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(value[lo:hi]) for each pair (-inf where empty): whole blocks from the sparse table, the partial blocks
    at either end (fewer than MAX_BLOCK values each) read directly, so the work is bounded by the number of
    ranges, not by the changes they span."""
    first_block = -(-lo // MAX_BLOCK)
    end_block = hi // MAX_BLOCK
    whole = first_block < end_block
    out = np.full(lo.size, -np.inf)
    if whole.any():
        a, b = first_block[whole], end_block[whole]
        k = np.floor(np.log2(b - a)).astype(np.int64)
        base = counters.sparse_ptr[k]
        out[whole] = np.maximum(counters.sparse[base + a], counters.sparse[base + b - (1 << k)])
    head_end = np.where(whole, first_block * MAX_BLOCK, hi)
    tail_start = np.where(whole, end_block * MAX_BLOCK, hi)
    starts = np.concatenate((lo, tail_start))
    ends = np.maximum(np.concatenate((head_end, hi)), starts)
    lengths = ends - starts
    owner = np.flatnonzero(lengths > 0)
    if owner.size:
        n = lengths[owner]
        first = np.cumsum(n) - n
        positions = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(starts[owner] - first, n)
        ends_max = np.full(starts.size, -np.inf)
        ends_max[owner] = np.maximum.reduceat(counters.value[positions], first)
        out = np.maximum(out, ends_max.reshape(2, -1).max(axis=0))
    return out


def bucket_stats(counters: CounterIndex, edges_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, max) of every counter over the buckets [edges[i], edges[i+1]) (ns from base_ns, ascending,
    integers), as (counters, buckets) arrays; a counter reads 0 before its first change. In C (`_counters.c`)
    where it is built, else `bucket_stats_np`: the same doubles."""
    if _accel is None or edges_ns.size < 2:
        return bucket_stats_np(counters, edges_ns)
    mean = np.empty((len(counters), edges_ns.size - 1))
    peak = np.empty_like(mean)
    _accel.bucket_stats(counters.key, counters.value, counters.integral_ns, counters.ptr, counters.sparse,
                        counters.sparse_ptr, np.ascontiguousarray(edges_ns, np.int64), counters.stride, mean, peak)
    return mean, peak


def bucket_stats_np(counters: CounterIndex, edges_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`bucket_stats` in numpy: the searches for every counter and edge at once, the ranges' maxima by
    `range_max`."""
    n = len(counters)
    if n == 0 or counters.key.size == 0:
        return np.zeros((n, edges_ns.size - 1)), np.zeros((n, edges_ns.size - 1))
    offset = (np.arange(n, dtype=np.int64) * counters.stride)[:, None]
    q = offset + edges_ns[None, :]
    searched = offset + np.clip(edges_ns, -1, counters.stride - 1)[None, :]  # never into a neighbour's keys
    key, value = counters.key, counters.value
    j = np.searchsorted(key, searched, side="right") - 1
    valid = j >= counters.ptr[:n, None]  # a change of this counter (not of the one before) at or before the edge
    at = np.maximum(j, 0)
    level = np.where(valid, value[at], 0.0)
    area = np.where(valid, counters.integral_ns[at] + value[at] * (q - key[at]), 0.0)
    mean = np.diff(area, axis=1) / np.maximum(np.diff(edges_ns), 1)[None, :]
    lo = (j[:, :-1] + 1).ravel()  # the first change after each bucket's start
    hi = np.searchsorted(key, searched[:, 1:], side="left").ravel()  # the first at or after its end
    peak = np.maximum(level[:, :-1], range_max(counters, lo, np.maximum(hi, lo)).reshape(n, -1))
    return mean, peak


def counters_view(counters: CounterIndex, t0_ns: int, t1_ns: int, width_px: int) -> dict[str, Any]:
    """The `counters` part of a `lanes` answer: each counter's mean and max per bucket of the window [t0, t1)
    (absolute ns; times in the answer are µs from the trace start, as everywhere in `lanes`)."""
    buckets = int(min(max(width_px // COUNTER_PX, 1), MAX_BUCKETS))
    span = max(t1_ns - t0_ns, 1)
    # floor(k x span / buckets) as k x q + floor(k x r / buckets): k x span overflows int64 for windows of months
    q, r = divmod(span, buckets)
    k = np.arange(buckets + 1, dtype=np.int64)
    edges = (t0_ns - counters.base_ns) + k * q + (k * r) // buckets
    mean, peak = bucket_stats(counters, edges)
    decimals = lane_decimals(peak)
    mean, peak = rounded(mean, decimals).tolist(), rounded(peak, decimals).tolist()
    lanes = [{"kind": kind, "label": counters.label[k], "device": int(counters.device[k]),
              "stream": int(counters.stream[k]), "unit": counters.unit[k], "mean": mean[k], "max": peak[k]}
             for k, kind in enumerate(counters.kind)]
    return {"start_us": round((t0_ns - counters.base_ns) / 1e3, 3), "bucket_us": round(span / buckets / 1e3, 6),
            "buckets": buckets, "lanes": lanes, "lanes_total": counters.total,
            "lanes_hidden": counters.total - len(counters)}


def lane_decimals(peak: np.ndarray) -> np.ndarray:
    """Per counter (row), the decimals its values keep: RESOLUTION digits below its largest value in the window
    (a 0.0002 GB/s bucket beside a 900 GB/s one is sent as 0)."""
    top = peak.max(axis=1, initial=0.0) if peak.size else np.zeros(peak.shape[0])
    return (RESOLUTION - np.floor(np.log10(np.where(top > 0, top, 1.0)))).astype(np.int64)


def rounded(x: np.ndarray, decimals: np.ndarray) -> np.ndarray:
    """Non-negative values, row r rounded to decimals[r] (negative: to tens, hundreds, ...). Powers of ten are
    exact as divisors, not as factors: 75000 / 1e5 is 0.75, 75000 * 1e-5 is 0.7500000000000001."""
    x = np.maximum(x, 0.0)
    up = 10.0 ** np.maximum(decimals, 0)[:, None]
    down = 10.0 ** np.maximum(-decimals, 0)[:, None]
    return np.round(x * up / down) * down / up
