"""Graph-replayed kernels given to the op calls that captured them: `GraphAttribution`, one per trace with replays.

A graph launch (`cudaGraphLaunch`, `hipGraphLaunch`) owns every kernel its replay runs, under one correlation id and
no op. Each replay's kernels, in device order, are aligned with a reference's launches (`align.align`): the same
trace's eager launches and captured launch calls ("self"), or another trace's (`reference.ReferenceCalls`, attached
to the model by `with_reference`). A matched kernel is then the work of a *replayed call*: one per (replay, op call
of the reference around the matched launch), so an op the capture ran 38 times and the graph replays 4 times has
152 replayed calls, as it would have run eagerly. Replayed calls have the reference's op names, recorded inputs,
nesting and nn.Module, and no host time (the replay spent none in them); their span is their kernels'.

    graphs = attribute(model, act_rows, act_start, act_end, act_grid, act_block, ops, modules)  # None: no replay
    graphs.act_call[k]    # the replayed call issuing activity k of the tables' index, -1 unattributed
    with_reference(model, ref) -> model  # another trace's reference, its strings added to the model's tables

Replays with the same kernel sequence are aligned once. Where the reference holds no run of those kernels, nothing
is attributed, and `reference` says where the kernels were looked for.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import msgspec
import numpy as np

from ...trace.kinds import GRAPH_LAUNCH_CALLS
from ...trace.model import TraceModel, freeze_arrays
from ..core.op_forest import Forest
from .align import Keys, align
from .reference import ReferenceCalls, keys_in, reference_calls, renumbered, strings_to_ids, with_ancestors

META_KEY = "graph_reference"  # model.meta: the ReferenceCalls a door attached (`with_reference`)
REFERENCE_ERROR_KEY = "graph_reference_error"  # model.meta: why the reference a door looked for was not used


class GraphAttribution(msgspec.Struct, frozen=True, eq=False):
    """The replayed calls of one trace's graph replays and the activities they issued."""

    reference: str  # "self" or the reference trace's path
    act_rows: np.ndarray  # int64 the tables' index's activity rows (ascending), which act_call follows
    act_call: np.ndarray  # int32 per activity of the tables' index: its replayed call, -1 none
    call_name: np.ndarray  # int32 model name id of each replayed call
    call_inputs: np.ndarray  # int32 model inputs id (-1: none recorded)
    call_parent: np.ndarray  # int32 enclosing replayed call (same replay), -1 for top-level ones
    call_module: np.ndarray  # int32 its innermost nn.Module's path in the reference (into module_*), -1 none
    call_replay: np.ndarray  # int32 the replay (into replay_launch)
    call_start_ns: np.ndarray  # int64 the first start of the kernels it or its descendants issued
    call_end_ns: np.ndarray  # int64 their last end
    replay_launch: np.ndarray  # int64 model row of each replay's graph launch call, ascending
    replay_kernels: np.ndarray  # int64 activities each replay ran
    replay_matched: np.ndarray  # int64 of those, the ones matched with a reference launch
    replay_ambiguous: np.ndarray  # bool: another placement in the reference fit as well
    replayed_ns: int  # time of every graph-replayed activity
    attributed_ns: int  # of that, the time of the attributed ones
    module_name: np.ndarray  # int32 per reference module path: model name id of its last module
    module_parent: np.ndarray  # int32 per path: the path one module shorter, -1 for a top-level module
    call_shape: np.ndarray  # int32 model shape id (model.shape_strings) of the call's input shapes, -1 none
    call_frame: np.ndarray  # int32 model name id of the call's innermost user Python frame in the reference, -1 none

    def call_sub(self, group: str) -> np.ndarray:
        """Each replayed call's second key in the op table's `group` (OP_GROUPS): its innermost module's name id,
        its input shapes' id, its innermost user frame's name id (`stack`), or -1 (`name`)."""
        if group == "module":
            return np.where(self.call_module >= 0, self.module_name[np.maximum(self.call_module, 0)], -1).astype(np.int32) \
                if self.module_name.size else np.full(self.size, -1, np.int32)
        if group == "shape":
            return self.call_shape
        if group == "stack":
            return self.call_frame
        return np.full(self.size, -1, np.int32)

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def size(self) -> int:
        return int(self.call_name.size)

    def entry(self) -> dict:
        """The report's `graph_attribution` entry."""
        us = 1e3
        return {"reference": self.reference, "replays": int(self.replay_launch.size),
                "replayed_us": round(self.replayed_ns / us, 3), "attributed_us": round(self.attributed_ns / us, 3),
                "attributed_share": round(self.attributed_ns / self.replayed_ns, 4) if self.replayed_ns else 0.0,
                "ambiguous_replays": int(self.replay_ambiguous.sum()), "replayed_calls": self.size}


def with_reference(model: TraceModel, ref: ReferenceCalls) -> TraceModel:
    """The model with another trace's reference attached: the strings the replayed calls need (op, module and frame
    names, recorded inputs, input shapes) appended to its name, inputs and shape tables (no event refers to them), the
    reference in its meta."""
    names, inputs = strings_to_ids(model.names), strings_to_ids(model.inputs_strings)
    shapes = strings_to_ids(model.shape_strings)
    wanted_shapes = set(ref.call_shape[ref.call_shape >= 0].tolist())
    new_shapes = tuple(t for t in dict.fromkeys(ref.strings[i] for i in sorted(wanted_shapes)) if t not in shapes)
    wanted = set(ref.call_name.tolist()) | set(ref.module_name.tolist()) | set(ref.call_frame[ref.call_frame >= 0].tolist())
    new_names = tuple(t for t in dict.fromkeys(ref.strings[i] for i in sorted(wanted)) if t not in names)
    texts = set(ref.call_inputs[ref.call_inputs >= 0].tolist())
    new_inputs = tuple(t for t in dict.fromkeys(ref.strings[i] for i in sorted(texts)) if t not in inputs)
    return replace(model, names=model.names + new_names, inputs_strings=model.inputs_strings + new_inputs,
                   shape_strings=model.shape_strings + new_shapes, meta={**model.meta, META_KEY: ref})


def attribute(model: TraceModel, act_rows: np.ndarray, act_start: np.ndarray, act_end: np.ndarray,
              act_grid: np.ndarray, act_block: np.ndarray, ops: Forest, modules: Forest) -> Optional[GraphAttribution]:
    """The trace's replayed calls (see the module docstring); None when no activity is a graph replay's."""
    graph_ids = model.name_ids_where(lambda n: n in GRAPH_LAUNCH_CALLS)
    launch = model.launch_idx[act_rows]
    replayed = np.flatnonzero((launch >= 0) & model.name_in(graph_ids, np.maximum(launch, 0)))
    if replayed.size == 0:
        return None
    replayed = replayed[np.lexsort((act_start[replayed], launch[replayed]))]
    bounds = np.flatnonzero(np.concatenate(([True], launch[replayed][1:] != launch[replayed][:-1], [True])))
    ref = model.meta.get(META_KEY)
    if not isinstance(ref, ReferenceCalls):
        ref = reference_calls(model, act_rows, act_grid, act_block, ops, modules)
    names, inputs = strings_to_ids(model.names), strings_to_ids(model.inputs_strings)
    ref_keys = Keys(keys_in(ref, names), ref.item_grid, ref.item_block)
    label = np.where(ref.item_call >= 0, ref.call_name[np.maximum(ref.item_call, 0)], -1) if ref.call_name.size else \
        np.full(ref.size, -1, np.int64)
    call_name = _ids(ref, ref.call_name, names)
    call_inputs = _ids(ref, ref.call_inputs, inputs)
    kernel_name = model.name_id[act_rows[replayed]].astype(np.int64)
    templates: dict[bytes, tuple] = {}
    act_call = np.full(act_rows.size, -1, np.int32)
    parts, n_calls, matched, ambiguous = [], 0, [], []
    for r in range(bounds.size - 1):
        sel = replayed[bounds[r]:bounds[r + 1]]
        keys = Keys(kernel_name[bounds[r]:bounds[r + 1]], act_grid[sel], act_block[sel])
        sig = np.concatenate([keys.name, keys.grid.astype(np.int64), keys.block.astype(np.int64)]).tobytes()
        if sig not in templates:
            templates[sig] = _template(ref, align(keys, ref_keys, label))
        calls, parent, kernel_call, found, unsure = templates[sig]
        calls, parent, kernel_call = _below_enclosing(calls, parent, kernel_call, call_name,
                                                      _enclosing_names(model, ops, launch[sel[0]]))
        mine = kernel_call >= 0
        act_call[sel[mine]] = n_calls + kernel_call[mine]
        parts.append((calls, np.where(parent >= 0, parent + n_calls, -1), r))
        n_calls += calls.size
        matched.append(found)
        ambiguous.append(unsure)
    refs = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    parent = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    replay = np.concatenate([np.full(p[0].size, p[2], np.int64) for p in parts]) if parts else np.zeros(0, np.int64)
    start, end = _spans(act_call, act_start, act_end, parent)
    dur = act_end[replayed] - act_start[replayed]
    i32 = np.int32
    return GraphAttribution(ref.source, act_rows, act_call, call_name[refs].astype(i32), call_inputs[refs].astype(i32),
                            parent.astype(i32), ref.call_module[refs].astype(i32), replay.astype(i32), start, end,
                            launch[replayed[bounds[:-1]]], np.diff(bounds).astype(np.int64),
                            np.array(matched, np.int64), np.array(ambiguous, bool), int(dur.sum()),
                            int(dur[act_call[replayed] >= 0].sum()), _ids(ref, ref.module_name, names).astype(i32),
                            ref.module_parent.astype(i32),
                            _ids(ref, ref.call_shape, strings_to_ids(model.shape_strings))[refs].astype(i32),
                            _ids(ref, ref.call_frame, names)[refs].astype(i32))


def _enclosing_names(model: TraceModel, ops: Forest, launch_row: int) -> set[int]:
    """Names of the ops around a graph launch call in this trace (the call's owner and its ancestors)."""
    at = int(np.searchsorted(ops.call_rows, launch_row))
    if at >= ops.call_rows.size or ops.call_rows[at] != launch_row:
        return set()
    names, node = set(), int(ops.call_owner[at])
    while node >= 0:
        names.add(int(ops.name_ids[ops.name_ix[node]]))
        node = int(ops.parent[node])
    return names


def _below_enclosing(calls: np.ndarray, parent: np.ndarray, kernel_call: np.ndarray, call_name: np.ndarray,
                     enclosing: set[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A template without its top calls that are ops this trace runs around the graph launch itself (the
    `Torch-Compiled Region` a capture ran in is the one its replay runs in: a real call already); kernels they
    issued directly, and their children, move up to the first call kept (or none)."""
    if not enclosing or not calls.size:
        return calls, parent, kernel_call
    drop = np.zeros(calls.size, bool)
    for k in range(calls.size):  # parents precede children: a top chain is dropped from the root down
        drop[k] = int(call_name[calls[k]]) in enclosing and (parent[k] < 0 or drop[parent[k]])
    if not drop.any():
        return calls, parent, kernel_call
    keep = np.flatnonzero(~drop)
    return calls[keep], renumbered(keep, calls.size, parent[keep]), renumbered(keep, calls.size, kernel_call)


def _ids(ref: ReferenceCalls, column: np.ndarray, table: dict[str, int]) -> np.ndarray:
    """A reference column of string indices as ids of the model's table (-1 absent or none)."""
    mapped = np.array([table.get(s, -1) for s in ref.strings] + [-1], np.int64)
    return mapped[np.where(column >= 0, column, len(ref.strings))]


def _template(ref: ReferenceCalls, found) -> tuple:
    """What one replay's alignment attributes: the reference calls it replays (with every call around them,
    ascending), their parents among them, each kernel's issuing call among them (-1 none), matches, ambiguity."""
    item = found.mapping
    call = np.where(item >= 0, ref.item_call[np.maximum(item, 0)], -1)
    calls, n = with_ancestors(ref.call_parent, call), ref.call_name.size
    return (calls, renumbered(calls, n, ref.call_parent[calls]), renumbered(calls, n, call), found.matched,
            found.ambiguous)


def _spans(act_call: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each replayed call's first kernel start and last kernel end over its subtree (0, 0 for one with none)."""
    n = parent.size
    lo, hi = np.full(n, np.iinfo(np.int64).max), np.full(n, np.iinfo(np.int64).min)
    mine = np.flatnonzero(act_call >= 0)
    np.minimum.at(lo, act_call[mine], start[mine])
    np.maximum.at(hi, act_call[mine], end[mine])
    for level in _levels_deepest_first(parent):
        np.minimum.at(lo, parent[level], lo[level])
        np.maximum.at(hi, parent[level], hi[level])
    empty = lo > hi
    return np.where(empty, 0, lo), np.where(empty, 0, hi)


def subtree_sums(parent: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each replayed call's value plus its descendants' (`parent`: the enclosing call, -1 at the top)."""
    total = values.astype(np.int64).copy()
    for level in _levels_deepest_first(parent):
        np.add.at(total, parent[level], total[level])
    return total


def call_depths(parent: np.ndarray) -> np.ndarray:
    """Each replayed call's nesting depth (`parent`: the enclosing call, -1 at the top): 0 for top-level calls."""
    parent = parent.astype(np.int64)
    depth = np.zeros(parent.size, np.int64)
    up = parent.copy()
    while (up >= 0).any():
        depth[up >= 0] += 1
        up = np.where(up >= 0, parent[np.maximum(up, 0)], -1)
    return depth


def _levels_deepest_first(parent: np.ndarray) -> list[np.ndarray]:
    """The calls that have a parent, one array per nesting depth, deepest first."""
    depth = call_depths(parent)
    return [np.flatnonzero(depth == d) for d in range(int(depth.max()) if parent.size else 0, 0, -1)]
