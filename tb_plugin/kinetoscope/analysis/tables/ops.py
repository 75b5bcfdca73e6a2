"""The operator and module tables (`op_table`, `module_table`): one row per CPU op (or nn.Module) name, or per (name,
second key); `index.py` says what each column counts."""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.model import TraceModel, freeze_arrays
from ..core.op_forest import Forest
from ..graphs.attribution import GraphAttribution, subtree_sums
from .index import OP_GROUPS, SUB_GROUP_MAKERS, Groups, SubGroups, TableIndex, Window, clip, group_extreme, group_sum
from .replayed_modules import with_replayed_modules


class OpTable(msgspec.Struct, frozen=True):
    """Per op (or module) name; see the module docstring for every field."""

    name_id: np.ndarray
    calls: np.ndarray
    cpu_total_ns: np.ndarray
    cpu_self_ns: np.ndarray
    cpu_max_ns: np.ndarray
    gpu_self_ns: np.ndarray
    gpu_total_ns: np.ndarray
    launches: np.ndarray
    linked_gpu_ns: int
    top_level_gpu_ns: int
    unowned_gpu_ns: int
    window: Window
    frame_id: Optional[np.ndarray] = None  # grouped by stack: the frame name id of each row (-1: none)
    shape_id: Optional[np.ndarray] = None  # grouped by shape: the row's input shapes (model.shape_strings; -1: none)
    module_id: Optional[np.ndarray] = None  # grouped by module: the innermost nn.Module's name id (-1: none)

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def cpu_mean_ns(self) -> np.ndarray:
        return self.cpu_total_ns // np.maximum(self.calls, 1)

    @property
    def gpu_mean_ns(self) -> np.ndarray:
        return self.gpu_total_ns // np.maximum(self.calls, 1)


def _forest_table(model: TraceModel, index: TableIndex, forest: Forest, groups: Groups, window: Window,
                  sub: Optional[SubGroups] = None, sub_field: str = "") -> OpTable:
    name, name_ids = (forest.name_ix, forest.name_ids) if sub is None else (sub.group_ix, sub.name_ids)
    groups = groups if sub is None else sub.groups
    n_names = name_ids.size
    inside, dur = clip(forest.start_ns, forest.end_ns, window)
    children = group_sum(forest.parent[forest.child], dur[forest.child], forest.size)
    if forest.call_rows.size:  # runtime calls made inside an op are not its own CPU work (as torch.profiler counts)
        _, call_dur = clip(forest.call_start_ns, forest.call_end_ns, window)
        children += group_sum(forest.call_owner, call_dur, forest.size)
    self_ns = np.maximum(dur - children, 0)
    act_in, act_dur = clip(index.act_start_ns, index.act_end_ns, window)
    owned = forest.owner >= 0
    gpu_self = group_sum(forest.owner[owned], act_dur[owned], forest.size)
    launches_self = np.bincount(forest.owner[owned], weights=(act_in & index.act_first)[owned], minlength=forest.size)
    gpu_total = _subtree_totals(forest, gpu_self)
    launches_total = _subtree_totals(forest, np.rint(launches_self).astype(np.int64))
    linked_ns = int(act_dur[index.act_linked].sum())
    top = int(gpu_total[forest.parent < 0].sum())
    calls = np.bincount(name[inside], minlength=n_names).astype(np.int64)
    table = dict(calls=calls, cpu_total_ns=group_sum(name, dur, n_names), cpu_self_ns=group_sum(name, self_ns, n_names),
                 cpu_max_ns=group_extreme(groups, dur, inside, True), gpu_self_ns=group_sum(name, gpu_self, n_names),
                 gpu_total_ns=group_sum(name, gpu_total, n_names), launches=group_sum(name, launches_total, n_names))
    sub_ids = None if sub is None else sub.sub_ids
    replayed = index.graphs if forest is index.ops else None
    if replayed is not None:
        rows = _Rows(name_ids, sub_ids, name if sub is None else sub.group_ix)
        name_ids, sub_ids, table, top = _with_replayed(index, replayed, rows, sub_field, table, act_dur, top, window)
        calls = table["calls"]
    elif index.graphs is not None and forest is index.modules:
        name_ids, table = with_replayed_modules(model, forest, index.graphs, name_ids, table, act_dur, window)
        calls = table["calls"]
    keep = np.flatnonzero((calls > 0) | (table["gpu_total_ns"] > 0))
    keep = keep[np.lexsort((keep, name_ids[keep], -table["cpu_total_ns"][keep], -table["gpu_total_ns"][keep]))]
    return OpTable(name_id=name_ids[keep], **{k: v[keep] for k, v in table.items()}, linked_gpu_ns=linked_ns,
                   top_level_gpu_ns=top, unowned_gpu_ns=linked_ns - top, window=window,
                   **({} if sub_ids is None else {sub_field: sub_ids[keep]}))


class _Rows(msgspec.Struct, frozen=True):
    """A table's rows before the replays: their name ids, second keys (None: by name only), each op position's row."""

    name_ids: np.ndarray
    sub_ids: Optional[np.ndarray]
    of_position: np.ndarray


def _with_replayed(index: TableIndex, graphs: GraphAttribution, rows: _Rows, sub_field: str, table: dict,
                   act_dur: np.ndarray, top: int, window: Window) -> tuple[np.ndarray, Optional[np.ndarray], dict, int]:
    """The table with the graph replays' calls added (`graphs.attribution`): each replayed call counts as a call of
    its op (inside the window when its kernels are), in the row of its name and, grouped, of its second key
    (`GraphAttribution.call_sub`), with no host time; the kernels it issued are its GPU self time and, with its
    replayed descendants', its GPU total. The kernels leave the self time of the op that issued the graph launch
    (its total keeps them: the replay ran inside it). Returns the rows' name ids, second keys, columns and the
    top-level GPU time."""
    group = next((g for g, (field, _) in SUB_GROUP_MAKERS.items() if field == sub_field), "name")
    mine_sub = np.full(rows.name_ids.size, -1, np.int64) if rows.sub_ids is None else rows.sub_ids.astype(np.int64)
    span = int(max(mine_sub.max(initial=-1), graphs.call_sub(group).max(initial=-1))) + 2
    keys = rows.name_ids.astype(np.int64) * span + mine_sub + 1
    call_keys = graphs.call_name.astype(np.int64) * span + graphs.call_sub(group).astype(np.int64) + 1
    ids = np.union1d(keys, call_keys)
    at = np.searchsorted(ids, keys)
    out = {}
    for key, values in table.items():
        out[key] = np.zeros(ids.size, np.int64)
        out[key][at] = values
    forest = index.ops
    mine = np.flatnonzero(graphs.act_call >= 0)
    owned = mine[forest.owner[mine] >= 0]
    np.subtract.at(out["gpu_self_ns"], at[rows.of_position[forest.owner[owned]]], act_dur[owned])
    own = group_sum(graphs.act_call[mine].astype(np.int64), act_dur[mine], graphs.size)
    inside, _ = clip(graphs.call_start_ns, graphs.call_end_ns, window)
    row = np.searchsorted(ids, call_keys)
    out["calls"] += np.bincount(row[inside & (graphs.call_end_ns > 0)], minlength=ids.size).astype(np.int64)
    out["gpu_self_ns"] += group_sum(row, own, ids.size)
    out["gpu_total_ns"] += group_sum(row, subtree_sums(graphs.call_parent, own), ids.size)
    sub_ids = None if rows.sub_ids is None else (ids % span - 1).astype(np.int32)
    return (ids // span).astype(np.int32), sub_ids, out, top + int(act_dur[mine[forest.owner[mine] < 0]].sum())


def _subtree_totals(forest: Forest, per_node: np.ndarray) -> np.ndarray:
    """Each node's value plus all its descendants' (a prefix sum over the preorder positions)."""
    cs = np.concatenate(([0], np.cumsum(per_node)))
    return cs[forest.subtree_end] - cs[np.arange(forest.size)]


def op_table(model: TraceModel, index: TableIndex, window: Window = None, group: str = "name") -> OpTable:
    """The operator table (one row per CPU op name) for the whole trace or a window; see the module docstring.

    `group`:
    - `name`: one row per op name.
    - `stack`: one row per (op name, innermost user Python frame around the call). `frame_id` names the frame
      (`file.py(123): func`, from `with_stack=True` python_function events, or in older files the first frame of
      the op's `Call stack` arg; -1 where none runs).
    - `shape`: one row per (op name, input shapes). `shape_id` indexes `model.shape_strings` (the call's
      `Input Dims`, `record_shapes=True`; -1 for calls without).
    - `module`: one row per (op name, innermost `nn.Module: ...` region around the call). `module_id` names it
      (`with_modules=True` or `with_stack=True` traces; -1 outside every module, as the backward pass is).
    A trace without frames (shapes, modules) gives the plain table with every `frame_id` (`shape_id`,
    `module_id`) -1.

    Raises:
        ValueError: an unknown group.
    """
    if group not in OP_GROUPS:
        raise ValueError(f"unknown op table group {group!r} (one of {', '.join(OP_GROUPS)})")
    if group == "name":
        return _forest_table(model, index, index.ops, index.op_groups, window)
    column, sub = SUB_GROUP_MAKERS[group][0], index.sub_groups(model, group)
    if sub is None:
        plain = _forest_table(model, index, index.ops, index.op_groups, window)
        return msgspec.structs.replace(plain, **{column: np.full(plain.name_id.size, -1, np.int32)})
    return _forest_table(model, index, index.ops, index.op_groups, window, sub, column)


def module_table(model: TraceModel, index: TableIndex, window: Window = None) -> OpTable:
    """The module table (one row per `nn.Module: ...` name); fields as in `op_table`."""
    return _forest_table(model, index, index.modules, index.module_groups, window)
