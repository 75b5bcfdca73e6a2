"""Kernel-launch offsets: how long after its launch call each GPU activity started, and why.

    CPU   [L: cudaLaunchKernel)
    GPU   ......[prev on stream)        [k)
          |<------------ offset ----------->|
                         |<-queued->|<-lat->|   queued = max(0, prev_end - L.end)
                                            latency = k.start - max(L.end, prev_end)

Latency keeps its sign: a kernel may start before its launch call returns (CUPTI timestamps).

A launch is one unit of work sent to the device: a CUDA graph launch replays every node of the graph
under one launch call, and only its first node says when the launch reached the device (the others
start when the graph's dependencies allow). Offsets are measured per launch, at its first activity.
"""
from __future__ import annotations

import msgspec
import numpy as np

from ...trace.kinds import Kind
from ...trace.model import TraceModel, unique_inverse
from ..core.selectors import enclosing_of_kind, first_of_launch, parent_rows, per_model

PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("max", 100.0))


class LaunchOffsets(msgspec.Struct, frozen=True):
    """One row per launch call with device work: its first GPU activity (parallel arrays, sorted by GPU start)."""

    gpu_row: np.ndarray
    launch_row: np.ndarray
    op_row: np.ndarray  # innermost CPU op that issued the launch (External id + time containment), -1
    offset_ns: np.ndarray
    queued_ns: np.ndarray
    latency_ns: np.ndarray
    short: np.ndarray  # kernels that ran shorter than their launch call
    activity_offset_ns: np.ndarray  # offset of every linked activity, graph nodes included (per-activity view)

    @property
    def pairs(self) -> int:
        return int(self.gpu_row.size)


def launch_offsets(model: TraceModel) -> LaunchOffsets:
    """Offsets, queueing and latency of every launch, at its first GPU activity."""
    acts = np.flatnonzero(model.activity_mask())  # (lane, ts) order
    prev_end = np.full(acts.size, np.iinfo(np.int64).min // 2, np.int64)  # "none before": far past, no overflow
    same_lane = model.lane[acts[1:]] == model.lane[acts[:-1]]
    prev_end[1:] = np.where(same_lane, model.end_ns[acts[:-1]], prev_end[1:])
    every = model.launch_idx[acts] >= 0
    linked = every & first_of_launch(model)[acts]
    all_gpu = acts[every]
    gpu, prev_end = acts[linked], prev_end[linked]
    launch = model.launch_idx[gpu]
    launch_end = model.end_ns[launch]
    order = np.argsort(model.ts_ns[gpu], kind="stable")
    gpu, launch, launch_end, prev_end = gpu[order], launch[order], launch_end[order], prev_end[order]
    return LaunchOffsets(
        gpu_row=gpu, launch_row=launch, op_row=issuing_ops(model, launch),
        offset_ns=model.ts_ns[gpu] - model.ts_ns[launch],
        queued_ns=np.maximum(0, prev_end - launch_end),
        latency_ns=model.ts_ns[gpu] - np.maximum(launch_end, prev_end),
        short=(model.kind[gpu] == Kind.KERNEL) & (model.dur_ns[gpu] < model.dur_ns[launch]),
        activity_offset_ns=model.ts_ns[all_gpu] - model.ts_ns[model.launch_idx[all_gpu]],
    )


def issuing_ops(model: TraceModel, launch: np.ndarray) -> np.ndarray:
    """The CPU op that issued each launch call: same External id, same thread, enclosing it in time.

    External ids alone are not trustworthy (some writers copy the correlation id into them), hence
    the containment check; launches whose id names no enclosing op fall back to the innermost
    enclosing cpu_op on their thread.
    """
    result = np.full(launch.size, -1, np.int64)
    ops = _ops_by_external_id(model)
    if ops.size and launch.size:
        _by_external_id(model, launch, ops, result)
    missing = np.flatnonzero(result < 0)
    if missing.size:
        unique_launch, inverse = unique_inverse(launch[missing])
        found = enclosing_of_kind(model, unique_launch, (Kind.CPU_OP,), parent_rows(model))
        result[missing] = found[inverse]
    return result


@per_model
def _ops_by_external_id(model: TraceModel) -> np.ndarray:
    """The cpu_op rows that carry an External id, by it (stable): the launch offsets and the tables both look
    their launches' issuers up in it."""
    ops = np.flatnonzero((model.kind == Kind.CPU_OP) & (model.external_id >= 0))
    return ops[np.argsort(model.external_id[ops], kind="stable")]


def _by_external_id(model: TraceModel, launch: np.ndarray, ops: np.ndarray, result: np.ndarray) -> None:
    """`result[i]` = the op of `ops` (sorted by External id) that issued launch i, where one does."""
    keys = model.external_id[ops]
    want = model.external_id[launch]
    pos = np.minimum(np.searchsorted(keys, want), keys.size - 1)
    cand = ops[pos]
    ok = ((keys[pos] == want) & (want >= 0) & (model.lane[cand] == model.lane[launch])
          & (model.ts_ns[cand] <= model.ts_ns[launch]) & (model.end_ns[cand] >= model.end_ns[launch]))
    result[ok] = cand[ok]


def percentiles_us(values_ns: np.ndarray) -> dict[str, float]:
    """p50/p90/p99/max in µs by linear interpolation (numpy's default); empty input gives {}."""
    if values_ns.size == 0:
        return {}
    points = np.percentile(values_ns.astype(np.float64), [q for _, q in PERCENTILES])
    return {label: float(v) / 1e3 for (label, _), v in zip(PERCENTILES, points)}


def grouped_percentile(group: np.ndarray, values: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct group id, the q-th percentile of its values (linear interpolation).

    Returns:
        (group ids, percentile per group), vectorized: one lexsort for all groups.
    """
    if group.size == 0:
        return np.zeros(0, group.dtype), np.zeros(0)
    order = np.lexsort((values, group))
    g, v = group[order], values[order].astype(np.float64)
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    sizes = np.diff(np.concatenate((starts, [g.size])))
    pos = starts + (sizes - 1) * (q / 100.0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, starts + sizes - 1)
    return g[starts], v[lo] + (v[hi] - v[lo]) * (pos - lo)


def launch_table(model: TraceModel, launch: LaunchOffsets, by: str = "kernel", top: int = 50) -> list[dict]:
    """Offsets grouped by kernel name or by issuing CPU op, largest total offset first.

    Args:
        by: "kernel" (GPU activity name) or "op" (the CPU op that launched it; `(no op)` when unknown).
        top: rows to return.
    """
    if by not in ("kernel", "op"):
        raise ValueError(f"by must be 'kernel' or 'op', not {by!r}")
    if by == "kernel":
        group = model.name_id[launch.gpu_row].astype(np.int64)
    else:
        group = np.where(launch.op_row >= 0, model.name_id[np.maximum(launch.op_row, 0)], -1).astype(np.int64)
    ids, counts = np.unique(group, return_counts=True)
    total = np.bincount(np.searchsorted(ids, group), weights=launch.offset_ns, minlength=ids.size)
    short = np.bincount(np.searchsorted(ids, group), weights=launch.short, minlength=ids.size)
    stats = {name: grouped_percentile(group, values, q)[1] for name, values, q in (
        ("offset_p50_us", launch.offset_ns, 50), ("offset_p99_us", launch.offset_ns, 99),
        ("queued_p50_us", launch.queued_ns, 50), ("latency_p50_us", launch.latency_ns, 50))}
    rows = []
    for i in np.argsort(-total, kind="stable")[:top]:
        row = {"name": model.shown_names[ids[i]] if ids[i] >= 0 else "(no op)", "count": int(counts[i]),
               "total_offset_us": float(total[i]) / 1e3}
        row.update({key: float(col[i]) / 1e3 for key, col in stats.items()})
        row["short"] = int(short[i])
        rows.append(row)
    return rows
