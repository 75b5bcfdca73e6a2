"""The GPU kernel table (`kernel_table`: kernels, memcpys and memsets by name, or by launch shape and launching op)
and the ops that launched each kernel (`kernel_launchers`); `index.py` says what each column counts."""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.model import TraceModel, freeze_arrays, unique_inverse
from .index import ARG_FIELDS, Groups, TableIndex, Window, clip, group_extreme, group_sum


class KernelTable(msgspec.Struct, frozen=True):
    """Per GPU activity name; see the module docstring for every field."""

    name_id: np.ndarray
    kind: np.ndarray
    calls: np.ndarray
    total_ns: np.ndarray
    min_ns: np.ndarray
    max_ns: np.ndarray
    share: np.ndarray
    tensor_core: np.ndarray
    bytes: np.ndarray  # float64 memcpy/memset bytes moved in the window (NaN: not recorded)
    bandwidth_gbps: np.ndarray  # float64 bytes / time (GB/s)
    grid: np.ndarray  # float64 duration-weighted mean over the calls: grid size (blocks), NaN when not recorded
    block: np.ndarray  # ... block size (threads)
    registers: np.ndarray  # ... registers per thread
    shared_mem: np.ndarray  # ... shared memory per block (bytes)
    blocks_per_sm: np.ndarray  # ... blocks per SM
    occupancy: np.ndarray  # ... estimated achieved occupancy (%)
    device_ns: int
    window: Window
    split: str = "name"  # "name", or one of KERNEL_SPLITS: rows split by launch configuration (and launching op)
    op_id: Optional[np.ndarray] = None  # split "op_launch": the launching op's name id (-1: none or unknown)

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def mean_ns(self) -> np.ndarray:
        return self.total_ns // np.maximum(self.calls, 1)


# Kernel-table splits beyond one row per name, as torch-tb-profiler's Kernel view "group by kernel name + op name +
# properties" (its properties: grid, block, registers per thread, shared memory):
# - launch: one row per (name, grid, block, registers per thread, shared memory per block);
# - op_launch: one row per (name, launching op name, grid, block, registers, shared memory).
# Grid and block are the x*y*z products the model keeps: [16,1,1] and [1,16,1] share a row.
KERNEL_SPLITS = ("launch", "op_launch")


_LAUNCH_FIELDS = ("grid", "block", "registers", "shared_mem")


def kernel_table(model: TraceModel, index: TableIndex, window: Window = None, split: str = "name") -> KernelTable:
    """The kernel table (one row per kernel, memcpy or memset name; or, with `split`, per name and launch
    configuration, see KERNEL_SPLITS) for the whole trace or a window.

    Raises:
        ValueError: an unknown split.
    """
    if split == "name":
        group_ix, n, groups, name_of = index.act_name_ix, index.act_name_ids.size, index.act_groups, None
        op_of = None
    elif split in KERNEL_SPLITS:
        group_ix, name_of, op_of = _launch_groups(index, by_op=split == "op_launch")
        n = name_of.size
        groups = Groups.of(group_ix, n)
    else:
        raise ValueError(f"unknown kernel table split {split!r} (name, {', '.join(KERNEL_SPLITS)})")
    inside, dur = clip(index.act_start_ns, index.act_end_ns, window)
    calls = np.bincount(group_ix[inside], minlength=n).astype(np.int64)
    total = group_sum(group_ix, dur, n)
    device_ns = int(total.sum())
    share = total / device_ns if device_ns else np.zeros(n)
    name_ix = np.arange(n) if name_of is None else name_of
    keep = np.flatnonzero(calls > 0)
    keep = keep[np.lexsort((keep, index.act_name_ids[name_ix[keep]], -total[keep]))]
    args = _arg_means(index, inside, dur, n, group_ix)
    named = name_ix[keep]
    return KernelTable(name_id=index.act_name_ids[named], kind=index.act_name_kind[named], calls=calls[keep],
                       total_ns=total[keep], min_ns=group_extreme(groups, dur, inside, False)[keep],
                       max_ns=group_extreme(groups, dur, inside, True)[keep], share=share[keep],
                       tensor_core=index.tensor_core[named], **{k: v[keep] for k, v in args.items()},
                       device_ns=device_ns, window=window, split=split,
                       op_id=None if op_of is None or split != "op_launch" else op_of[keep])


def _launch_groups(index: TableIndex, by_op: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Activities grouped by (name, launch fields[, launching op]): (group per activity, name index per group,
    op name id per group or -1). A field a call does not record keys as -1, so such calls group together."""
    cols = [index.act_name_ix.astype(np.float64)]
    for name in _LAUNCH_FIELDS:
        k = ARG_FIELDS.index(name)
        cols.append(np.where(index.act_present[k], index.act_values[k], -1.0))
    op_name = np.full(index.act_rows.size, -1, np.int64)
    if by_op and index.ops.size:
        owner = index.ops.owner
        op_name = np.where(owner >= 0, index.ops.name_ids[index.ops.name_ix[np.maximum(owner, 0)]], -1)
    cols.append(op_name.astype(np.float64))
    if index.act_rows.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    group_ix = np.zeros(index.act_rows.size, np.int64)
    for col in cols:  # one int64 key per column, compacted after each (np.unique(axis=0) sorts rows: 10x slower)
        _, code = unique_inverse(col)
        _, group_ix = unique_inverse(group_ix * (int(code.max()) + 1) + code)
    first = np.zeros(int(group_ix.max()) + 1, np.int64)
    first[group_ix[::-1]] = np.arange(group_ix.size - 1, -1, -1)  # any member gives the group's name and op
    return group_ix.astype(np.int64), index.act_name_ix[first].astype(np.int64), op_name[first].astype(np.int64)


def _arg_means(index: TableIndex, inside: np.ndarray, dur: np.ndarray, n: int,
               group_ix: Optional[np.ndarray] = None) -> dict[str, np.ndarray]:
    """Per name: bytes moved (each copy's bytes times the share of it inside the window) and their bandwidth;
    the launch fields as means weighted by each call's time in the window (NaN where no call records them, or
    where every call that does lasted 0 ns). Two bincounts per field, one field at a time: a (fields, activities)
    matrix of weights and its products made this the peak of a 6M-event report."""
    group_ix = index.act_name_ix if group_ix is None else group_ix
    full = index.act_end_ns - index.act_start_ns
    frac = np.divide(dur, full, out=inside.astype(np.float64), where=full > 0)
    present = index.act_present
    in_window = np.where(inside, dur, 0).astype(np.float64)
    out, moved = {}, np.zeros(n)
    for k, name in enumerate(ARG_FIELDS):
        weight = (frac if k == 0 else in_window) * present[k]  # bytes: each copy counts by its share inside the window
        value_sum = np.bincount(group_ix, weights=weight * index.act_values[k], minlength=n)
        if k == 0:
            moved = value_sum
            continue
        weight_sum = np.bincount(group_ix, weights=weight, minlength=n)
        out[name] = np.divide(value_sum, weight_sum, out=np.full(n, np.nan), where=weight_sum > 0)
    copies = np.bincount(group_ix, weights=present[0] * inside, minlength=n)
    moved_ns = np.bincount(group_ix, weights=np.where(inside, dur, 0) * present[0], minlength=n)
    out["bytes"] = np.where(copies > 0, moved, np.nan)
    out["bandwidth_gbps"] = np.divide(moved, moved_ns, out=np.full(n, np.nan), where=moved_ns > 0)  # bytes/ns = GB/s
    return out


def kernel_launchers(model: TraceModel, index: TableIndex, name_ids: np.ndarray, window: Window = None,
                     top: int = 3) -> dict[int, list[tuple[int, int, int]]]:
    """The ops that launched each of the given kernel names: up to `top` per name, by GPU time.

    Returns:
        {kernel name id: [(op name id, GPU ns in the window, activities), ...]}, largest first; activities
        launched outside every op are listed under op name id -1.
    """
    name_ids = np.asarray(name_ids, np.int64).reshape(-1)
    result: dict[int, list[tuple[int, int, int]]] = {int(k): [] for k in name_ids.tolist()}
    local = np.full(index.act_name_ids.size, -1, np.int64)  # activity name index -> position among name_ids
    pos = np.searchsorted(index.act_name_ids, name_ids)
    found = (pos < index.act_name_ids.size) & (index.act_name_ids[np.minimum(pos, index.act_name_ids.size - 1)] == name_ids)
    local[pos[found]] = np.flatnonzero(found)
    sel = np.flatnonzero(local[index.act_name_ix] >= 0) if local.size else np.zeros(0, np.int64)
    inside, dur = clip(index.act_start_ns[sel], index.act_end_ns[sel], window)
    sel, dur = sel[inside], dur[inside]
    if sel.size == 0:
        return result
    owner = index.ops.owner[sel]
    op_ix = np.zeros(sel.size, np.int64)  # 0: no op
    if index.ops.size:
        op_ix = np.where(owner >= 0, index.ops.name_ix[np.maximum(owner, 0)], -1).astype(np.int64) + 1
    width = index.ops.name_ids.size + 1
    pairs, inverse = unique_inverse(local[index.act_name_ix[sel]] * width + op_ix)  # one int64 key
    ns = group_sum(inverse, dur, pairs.size)
    count = np.bincount(inverse, minlength=pairs.size)
    kernel_local, op_of = pairs // width, pairs % width - 1
    op_name = np.full(op_of.size, -1, np.int64)
    op_name[op_of >= 0] = index.ops.name_ids[op_of[op_of >= 0]]
    for j in np.lexsort((op_name, -ns)).tolist():
        entries = result[int(name_ids[kernel_local[j]])]
        if len(entries) < top:
            entries.append((int(op_name[j]), int(ns[j]), int(count[j])))
    return result
