"""Memory per op: allocations, frees and the net increase of every op, per device, as torch-tb-profiler's memory
statistics table counts them, plus the peak increase within a call.

    table = op_memory_table(model, index, window=None)   # -> OpMemoryTable, one row per (op name, device)

Each `[memory]` event (model columns `mem_*`) belongs to the innermost CPU node running on its thread at its
timestamp (start <= ts < end), the nodes being ops, annotations, ProfilerSteps and `nn.Module` regions, as
torch-tb-profiler's operator tree holds them. Only an event whose innermost node is an op counts (one inside an
annotation but no op, or outside every node, is `unowned`), as torch-tb-profiler drops them:

    [ProfilerStep#1 ...............................................)
       [aten::linear .............................)   +8 B <- unowned (innermost node is the step)
          +100 B    [aten::t ..........)   -20 B
                       +50 B

    aten::t:      self: 1 allocation, 50 B allocated, 0 B freed, increase 50 B; with children the same
    aten::linear: self: 1 allocation, 100 B, freed 20 B, increase 80 B; with children 2 allocations, 150 B,
                  increase 130 B; peak increase 150 B (after aten::t's 50 B, before the free)

Per (op name, device), summed over the op's calls:
    calls                 calls of the op in the window (every call, with or without memory events)
    self_alloc_count      allocations (bytes > 0) made directly in the op ("Self Allocation Count")
    self_alloc_bytes      their bytes ("Self Allocation Size")
    self_freed_bytes      bytes freed directly in the op (positive; torch-tb-profiler has no such column)
    self_increase_bytes   allocated minus freed, directly in the op ("Self Size Increase")
    alloc_count, alloc_bytes, freed_bytes, increase_bytes: the same including every op nested in the op
        ("Allocation Count", "Allocation Size", "Size Increase")
    peak_increase_bytes   per call, the highest the counted allocations (nested ops included) rose above their
        level at the call's start, at any moment of the call; the largest over the calls (not a sum)
A row is kept where any figure but `calls` is non-zero. Devices are `CPU` (c10 DeviceType 0) and `GPU<id>`
(DeviceType 1, CUDA/HIP); events of other device types are not counted (torch-tb-profiler skips them too).
A window keeps the calls overlapping it and the memory events inside [start, end).
"""
from __future__ import annotations

import msgspec
import numpy as np

from ...trace.kinds import CPU_OP_KINDS, LaneKind
from ...trace.model import TraceModel, freeze_arrays, union, unique, unique_inverse
from ..core.op_forest import Forest, build_forest, innermost_at, subtree_max
from .index import TableIndex, Window, clip, module_rows

CPU, CUDA = 0, 1  # c10 DeviceType values counted


class OpMemoryTable(msgspec.Struct, frozen=True):
    """Rows per (op name, device); see the module docstring for every field. Sorted by device, then
    allocated bytes with children (descending), then name id."""

    name_id: np.ndarray  # int32
    device: np.ndarray  # int32 index into `devices`
    calls: np.ndarray
    self_alloc_count: np.ndarray
    self_alloc_bytes: np.ndarray
    self_freed_bytes: np.ndarray
    self_increase_bytes: np.ndarray
    alloc_count: np.ndarray
    alloc_bytes: np.ndarray
    freed_bytes: np.ndarray
    increase_bytes: np.ndarray
    peak_increase_bytes: np.ndarray
    devices: tuple[str, ...]  # "CPU", "GPU0", ...
    counted_events: int  # memory events of a counted device inside an op
    unowned_events: int  # memory events of a counted device outside every op
    window: Window

    def __post_init__(self) -> None:
        freeze_arrays(self)


def device_name(device_type: int, device_id: int) -> str:
    """`CPU` or `GPU<id>`, as torch-tb-profiler names the memory table's devices."""
    return "CPU" if device_type == CPU else f"GPU{device_id}"


def _tree(model: TraceModel, ops: np.ndarray) -> tuple[Forest, np.ndarray]:
    """The CPU node forest (ops, annotations, steps, modules) and which of its positions are `ops`."""
    cpu = model.on_lanes(LaneKind.CPU)
    rows = union(np.flatnonzero(cpu & model.kind_in(CPU_OP_KINDS)), module_rows(model))
    forest = build_forest(model, rows, np.zeros(0, np.int64), np.zeros(0, np.int64))
    return forest, np.isin(forest.rows, ops)


def op_memory_table(model: TraceModel, index: TableIndex, window: Window = None) -> OpMemoryTable:
    """The memory statistics per (op name, device) for the whole trace or a window; see the module docstring.
    `index` gives the ops (`TableIndex.ops`)."""
    forest, is_op = _tree(model, index.ops.rows)
    dev_type, dev_id = model.mem_device_type.astype(np.int64), model.mem_device_id.astype(np.int64)
    counted = (dev_type == CPU) | (dev_type == CUDA)
    if window is not None:
        counted &= (model.mem_ts_ns >= window[0]) & (model.mem_ts_ns < window[1])
    ev = np.flatnonzero(counted)
    pos = innermost_at(model, forest, model.mem_lane[ev], model.mem_ts_ns[ev])
    owned = pos >= 0
    owned[owned] = is_op[pos[owned]]
    dev_key = np.where(dev_type[ev] == CPU, -1, dev_id[ev])
    keys, dev_ix = unique_inverse(dev_key)
    devices = tuple("CPU" if k < 0 else f"GPU{k}" for k in keys.tolist())
    nbytes = model.mem_bytes[ev]
    inside, _ = clip(forest.start_ns, forest.end_ns, window)
    parts = [_device_rows(model, forest, is_op & inside, ev[owned & (dev_ix == d)], pos[owned & (dev_ix == d)],
                          nbytes[owned & (dev_ix == d)], d) for d in range(len(devices))]
    calls = np.bincount(forest.name_ix[is_op & inside], minlength=forest.name_ids.size)
    columns = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64) for k in _FIELDS}
    columns["calls"] = calls[columns.pop("name_ix")].astype(np.int64)
    order = np.lexsort((columns["name_id"], -columns["alloc_bytes"], columns["device"]))
    return OpMemoryTable(**{k: v[order] for k, v in columns.items()}, devices=devices,
                         counted_events=int(owned.sum()), unowned_events=int((~owned).sum()), window=window)


_SELF = ("self_alloc_count", "self_alloc_bytes", "self_freed_bytes", "self_increase_bytes")
_FIELDS = ("name_ix", "name_id", "device", *_SELF, "alloc_count", "alloc_bytes", "freed_bytes", "increase_bytes",
           "peak_increase_bytes")


def _device_rows(model: TraceModel, forest: Forest, counted_node: np.ndarray, ev: np.ndarray, pos: np.ndarray,
                 nbytes: np.ndarray, device: int) -> dict[str, np.ndarray]:
    """One device's rows: per op name, the self and with-children sums over the counted calls."""
    n = forest.size
    alloc = nbytes > 0
    per_node = {"self_alloc_count": np.bincount(pos, weights=alloc, minlength=n),
                "self_alloc_bytes": np.bincount(pos, weights=np.where(alloc, nbytes, 0), minlength=n),
                "self_freed_bytes": np.bincount(pos, weights=np.where(alloc, 0, -nbytes), minlength=n)}
    per_node = {k: np.rint(v).astype(np.int64) for k, v in per_node.items()}
    per_node["self_increase_bytes"] = per_node["self_alloc_bytes"] - per_node["self_freed_bytes"]
    cs = {k: np.concatenate(([0], np.cumsum(v))) for k, v in per_node.items()}
    ends, starts = forest.subtree_end.astype(np.int64), np.arange(n)
    total = {k[5:]: cs[k][ends] - cs[k][starts] for k in _SELF}
    peak = _peak_increase(model, forest, ev, pos, nbytes)
    node_cols = {**per_node, **total, "peak_increase_bytes": peak}
    name_ix = forest.name_ix.astype(np.int64)
    n_names = forest.name_ids.size
    sel = counted_node
    out = {k: np.bincount(name_ix[sel], weights=v[sel], minlength=n_names) for k, v in node_cols.items() if k != "peak_increase_bytes"}
    out = {k: np.rint(v).astype(np.int64) for k, v in out.items()}
    best = np.zeros(n_names, np.int64)
    np.maximum.at(best, name_ix[sel], peak[sel])
    out["peak_increase_bytes"] = best
    keep = np.flatnonzero(np.any(np.stack([out[k] for k in out]) != 0, axis=0))
    return {"name_ix": keep, "name_id": forest.name_ids[keep].astype(np.int32),
            "device": np.full(keep.size, device, np.int32), **{k: v[keep] for k, v in out.items()}}


def _peak_increase(model: TraceModel, forest: Forest, ev: np.ndarray, pos: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Per node: the highest level its lane's counted events reach during the node, above the level at its
    start (0 when it never rose). Levels are one running sum per lane; a node's highest is the max over the
    events of its subtree (each event's owner is the innermost op at it), pushed up the tree by pointer
    doubling: after round k each node holds the max of its descendants less than 2^k levels down, so the
    rounds are log2(depth), not depth."""
    peak = np.zeros(forest.size, np.int64)
    if ev.size == 0:
        return peak
    low = np.iinfo(np.int64).min
    highest = np.full(forest.size, low, np.int64)
    before = np.zeros(forest.size, np.int64)
    lane_of_ev, ts = model.mem_lane[ev], model.mem_ts_ns[ev]
    node_lane = model.lane[forest.rows]
    for lane in unique(lane_of_ev).tolist():  # one running sum per thread (a few dozen at most)
        sel = np.flatnonzero(lane_of_ev == lane)
        sel = sel[np.argsort(ts[sel], kind="stable")]
        level = np.cumsum(nbytes[sel])
        np.maximum.at(highest, pos[sel], level)
        nodes = np.flatnonzero(node_lane == lane)
        at = np.searchsorted(ts[sel], forest.start_ns[nodes], side="left")
        before[nodes] = np.concatenate(([0], level))[at]
    highest = subtree_max(forest.parent, highest)
    reached = highest != low
    peak[reached] = np.maximum(highest[reached] - before[reached], 0)
    return peak
