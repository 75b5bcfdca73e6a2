"""HTA's trace counters: queue length per GPU stream and memcpy/memset bandwidth per direction.

Queue length (HTA `TraceCounters.get_queue_length_time_series`): the number of GPU operations a stream
has been asked to run and has not started yet. +1 at the start of each launch call (one of
`QUEUE_LAUNCH_NAMES`, as HTA's symbol table lists them) whose activity (kernel, memcpy, memset) is in
the trace, -1 at that activity's start. Activities without such a launch call (launched before the
profiler window, by `cudaGraphLaunch`, by a synchronous `cudaMemcpy`, or with no correlation) and launch
calls without an activity are left out on both sides, as HTA's semi-join leaves them out; so the count
never goes negative. One series per GPU lane (device, stream); HTA groups by stream id alone, which is
the same on a one-device trace.

Memcpy bandwidth (HTA `get_memory_bw_time_series`): over the GPU activities HTA calls memory kernels (names
starting `Memcpy`, `Memset` or `dma`, as MTIA's `dma_request`; not `hip...`, which HTA counts as communication),
per memory operation type (`Memcpy HtoD`, `Memcpy DtoH`, `Memcpy DtoD`, `Memset`, ... the first 11
characters of a `Memcpy` name, `Memcpy Unknown` for the others), the sum of the
bandwidths of the copies running at each instant; a copy's bandwidth is bytes / duration in GB/s (1e9
bytes), what Kineto writes as `memory bandwidth (GB/s)`. A 0-µs copy is stretched to 1 µs, as HTA does.
A copy without a `bytes` arg counts 0 GB/s (HTA's default for a missing arg).

Both series are step functions: each row is the value from its time on, until the next row. The summaries
are HTA's (pandas `describe()` of the rows: count, mean, std with ddof 1, min, quartiles with linear
interpolation, max; the bandwidth's over rows > 0 only), beside Kinetoscope's own time-weighted mean
(the value averaged over time, which does not depend on how many changes happen): HTA's mean weights
every change equally, so a burst of launches counts more than a long steady queue.
"""
from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from ...trace.kinds import ACTIVITY_KINDS
from ...trace.model import TraceModel, freeze_arrays, unique, unique_inverse
from ..core.thresholds import QUEUE_FULL

# Launch calls HTA counts in a queue (hta/common/trace_symbol_table.py, get_runtime_launch_events_mask).
QUEUE_LAUNCH_NAMES = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
    "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
    "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream"})
# HTA's kernel types (hta/common/types.py): a name is a memory kernel when it matches MEMORY_KERNEL and not
# COMM_KERNEL (communication is tested first).
MEMORY_KERNEL = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
COMM_KERNEL = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
MEMORY_TYPE_CHARS = 11  # len("Memcpy DtoH"): HTA's memory operation type is this prefix of the name
MIN_COPY_NS = 1_000  # HTA stretches a 0-duration copy to 1 µs (its issue #20)
MAX_SERIES = 64  # streams / memory types a summary lists (a hostile trace may have 100,000 streams)


class Series(msgspec.Struct, frozen=True):
    """Step functions, one per key, concatenated: rows of series k are `ptr[k]:ptr[k+1]`, time-sorted."""

    t_ns: np.ndarray  # int64 time of each change
    value: np.ndarray  # float64 value from t_ns on
    ptr: np.ndarray  # int64 CSR offsets, len(keys) + 1

    def __post_init__(self) -> None:
        freeze_arrays(self)

    def __len__(self) -> int:
        return int(self.ptr.size - 1)

    def rows(self, k: int) -> slice:
        return slice(int(self.ptr[k]), int(self.ptr[k + 1]))


class QueueLength(msgspec.Struct, frozen=True):
    """Queue length per GPU lane: `lane[k]` (model lane), `device[k]`, `stream[k]` and its series."""

    lane: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    series: Series


class MemoryBandwidth(msgspec.Struct, frozen=True):
    """Bandwidth (GB/s) per memory operation type `names[k]`, with totals over its operations."""

    names: tuple[str, ...]
    series: Series
    count: np.ndarray  # int64 operations
    bytes: np.ndarray  # float64 bytes moved (or set)
    busy_ns: np.ndarray  # int64 summed durations (as recorded, before the 1-µs stretch)


def step_series(key: np.ndarray, t_ns: np.ndarray, delta: np.ndarray, n_keys: int, tie: np.ndarray) -> Series:
    """Running sums of `delta` per key in (key, t, tie) order: HTA's sort by ts then cumsum per group."""
    order = np.lexsort((tie, t_ns, key))
    key, t_ns, delta = key[order], t_ns[order], delta[order]
    ptr = np.searchsorted(key, np.arange(n_keys + 1))
    value = np.cumsum(delta, dtype=np.float64)
    before = np.concatenate(([0.0], value))[ptr[:-1]]
    value -= np.repeat(before, np.diff(ptr))  # in place: a series' sum from its own first change
    return Series(t_ns.astype(np.int64, copy=False), value, ptr.astype(np.int64))


def queue_length(model: TraceModel) -> QueueLength:
    """HTA's queue length per GPU lane (see the module docstring)."""
    act = np.flatnonzero(model.kind_in(ACTIVITY_KINDS) & (model.launch_idx >= 0))
    launch_ids = model.name_ids_where(lambda n: n in QUEUE_LAUNCH_NAMES)
    act = act[model.name_in(launch_ids, model.launch_idx[act])] if launch_ids.size else act[:0]
    lanes, key = unique_inverse(model.lane[act])
    n = act.size
    series = step_series(np.concatenate((key, key)), np.concatenate((model.ts_ns[model.launch_idx[act]], model.ts_ns[act])),
                     np.concatenate((np.ones(n), -np.ones(n))), lanes.size,
                     np.concatenate((np.zeros(n, np.int8), np.ones(n, np.int8))))
    lanes = lanes.astype(np.int64)
    return QueueLength(lanes, model.lane_pid[lanes].astype(np.int64), model.lane_tid[lanes].astype(np.int64), series)


def memory_type(name: str) -> str:
    """HTA's memory operation type of a memcpy/memset name (`Memcpy HtoD (Pinned -> Device)` -> `Memcpy HtoD`)."""
    if name.startswith("Memset"):
        return "Memset"
    if not name.startswith("Memcpy"):
        return "Memcpy Unknown"
    return name[:MEMORY_TYPE_CHARS]


def copy_bandwidth_gbps(model: TraceModel, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, GB/s) of each memcpy/memset row: bytes from `gpu_arg_bytes` (0 when absent or negative), over
    the recorded duration (0 GB/s for a 0-ns copy, which has no time to divide by)."""
    nbytes = np.zeros(rows.size)
    arg_rows = model.gpu_arg_row
    pos = np.searchsorted(arg_rows, rows)
    hit = pos < arg_rows.size
    hit[hit] = arg_rows[pos[hit]] == rows[hit]
    nbytes[hit] = np.maximum(np.nan_to_num(model.gpu_arg_bytes[pos[hit]], nan=0.0, posinf=0.0), 0.0)
    dur = model.dur_ns[rows].astype(np.float64)
    return nbytes, np.divide(nbytes, dur, out=np.zeros(rows.size), where=dur > 0)


def is_memory_kernel(name: str) -> bool:
    """Whether HTA counts a GPU activity of this name as a memory kernel."""
    return MEMORY_KERNEL.match(name) is not None and COMM_KERNEL.match(name) is None


def memory_bandwidth(model: TraceModel) -> MemoryBandwidth:
    """HTA's memcpy/memset bandwidth per memory operation type (see the module docstring)."""
    rows = np.flatnonzero(model.kind_in(ACTIVITY_KINDS))
    names = unique(model.name_id[rows])  # the regexes run once per activity name, not per event or per name
    memory = names[np.fromiter((is_memory_kernel(model.names[i]) for i in names.tolist()), bool, names.size)]
    rows = rows[model.name_in(memory, rows)]
    ids, inverse = unique_inverse(model.name_id[rows])
    types = [memory_type(model.names[i]) for i in ids.tolist()]
    names = tuple(sorted(set(types)))
    type_of_id = np.array([names.index(t) for t in types], np.int64)
    key = type_of_id[inverse] if rows.size else np.zeros(0, np.int64)
    nbytes, gbps = copy_bandwidth_gbps(model, rows)
    start = model.ts_ns[rows]
    end = start + np.maximum(model.dur_ns[rows], MIN_COPY_NS * (model.dur_ns[rows] == 0))
    n = rows.size
    series = step_series(np.concatenate((key, key)), np.concatenate((start, end)), np.concatenate((gbps, -gbps)),
                     len(names), np.zeros(2 * n, np.int8))
    k = len(names)
    return MemoryBandwidth(names, series, np.bincount(key, minlength=k).astype(np.int64),
                           np.bincount(key, nbytes, minlength=k), np.bincount(key, model.dur_ns[rows], minlength=k).astype(np.int64))


def describe(values: np.ndarray) -> dict[str, float]:
    """pandas' `describe()` of a column, as HTA's summaries give it (std with ddof 1: NaN below 2 values, shown None)."""
    if values.size == 0:
        return {"count": 0}
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    std = float(np.std(values, ddof=1)) if values.size > 1 else None
    return {"count": int(values.size), "mean": float(values.mean()), "std": std, "min": float(values.min()),
            "25%": float(q25), "50%": float(q50), "75%": float(q75), "max": float(values.max())}


def time_weighted_mean(t_ns: np.ndarray, value: np.ndarray) -> float:
    """The step function averaged over time from its first change to its last (0 when that span is empty)."""
    if t_ns.size < 2 or t_ns[-1] <= t_ns[0]:
        return 0.0
    return float(np.sum(value[:-1] * np.diff(t_ns)) / (t_ns[-1] - t_ns[0]))


def time_at_or_above(t_ns: np.ndarray, value: np.ndarray, level: float) -> int:
    """Nanoseconds the step function spends at `level` or above (HTA's `get_time_spent_blocked_on_full_queue`
    sum: each row's time to the next row, where the row's value reaches the level)."""
    if t_ns.size < 2:
        return 0
    return int(np.diff(t_ns)[value[:-1] >= level].sum())


def queue_length_summary(q: QueueLength, span_ns: int, limit: int = MAX_SERIES,
                         full: int = QUEUE_FULL) -> list[dict[str, Any]]:
    """Per stream: HTA's describe() of the queue length, its time-weighted mean, and the time the queue was
    full (at `full` or more: the host's launch calls block), in µs and as a share of `span_ns`."""
    out = []
    for k in range(min(len(q.series), limit)):
        rows = q.series.rows(k)
        t, v = q.series.t_ns[rows], q.series.value[rows]
        at_full = time_at_or_above(t, v, full)
        out.append({"device": int(q.device[k]), "stream": int(q.stream[k]), "hta": _rounded(describe(v)),
                    "time_weighted_mean": round(time_weighted_mean(t, v), 4), "full_queue_us": at_full / 1e3,
                    "full_queue_share": round(at_full / span_ns, 6) if span_ns > 0 else 0.0})
    return out


def memory_bandwidth_summary(bw: MemoryBandwidth, limit: int = MAX_SERIES) -> list[dict[str, Any]]:
    """Per memory type: HTA's describe() of the bandwidth rows > 0, and Kinetoscope's totals: operations, bytes,
    time and average bandwidth (bytes over the summed durations, GB/s)."""
    out = []
    for k, name in enumerate(bw.names[:limit]):
        v = bw.series.value[bw.series.rows(k)]
        busy = int(bw.busy_ns[k])
        out.append({"type": name, "count": int(bw.count[k]), "bytes": int(bw.bytes[k]), "time_us": busy / 1e3,
                    "average_gbps": round(float(bw.bytes[k]) / busy, 6) if busy > 0 else None,
                    "hta": _rounded(describe(v[v > 0]))})
    return out


def counters_summary(model: TraceModel) -> dict[str, Any]:
    """The `report --format json` entry: queue length per stream and memcpy bandwidth per type (summaries only)."""
    q, bw = queue_length(model), memory_bandwidth(model)
    return {"queue_length": queue_length_summary(q, model.stop_ns - model.start_ns), "queue_streams": len(q.series),
            "memory_bandwidth": memory_bandwidth_summary(bw), "memory_types": len(bw.names)}


def _rounded(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in stats.items()}
