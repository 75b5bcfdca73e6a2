"""The module table's graph replays: the nn.Module paths the reference ran each replayed call in
(`graphs.attribution`), counted like the modules this trace records.

Per module name, a replay adds one occurrence of each path node its calls ran kernels under (in the window), the
kernels of calls whose innermost module that node is as its GPU self time, and every kernel below the node as its
GPU total. Those kernels leave the self time of the module around the graph launch (its total keeps them: the
replay ran inside it). A reference path whose top modules are the ones around the launch (the capture ran inside
the module the replay runs in) continues them: those nodes are not counted twice, and the kernels of calls
directly in them stay where they are. Replayed calls spend no host time.
"""
from __future__ import annotations

import numpy as np

from ..core.op_forest import Forest, innermost_at
from ..graphs.attribution import GraphAttribution
from .index import clip, group_sum


def with_replayed_modules(model, forest: Forest, graphs: GraphAttribution, name_ids: np.ndarray, table: dict,
                          act_dur: np.ndarray, window) -> tuple[np.ndarray, dict]:
    """(name ids, columns) of the module table with the replays' paths added; unchanged without any."""
    if graphs.module_name.size == 0 or not (graphs.call_module >= 0).any():
        return name_ids, table
    kept = _kept_paths(model, forest, graphs)
    path = graphs.call_module.astype(np.int64)
    moves = (path >= 0) & kept[graphs.call_replay, np.maximum(path, 0)]
    mine = np.flatnonzero(graphs.act_call >= 0)
    own = group_sum(graphs.act_call[mine].astype(np.int64), act_dur[mine], graphs.size)
    ids = np.union1d(name_ids, graphs.module_name[kept.any_replay()])
    at = np.searchsorted(ids, name_ids)
    out = {}
    for key, values in table.items():
        out[key] = np.zeros(ids.size, np.int64)
        out[key][at] = values
    moved = mine[moves[graphs.act_call[mine]] & (forest.owner[mine] >= 0)]
    row_of_position = at[forest.name_ix]
    np.subtract.at(out["gpu_self_ns"], row_of_position[forest.owner[moved]], act_dur[moved])
    name_row = np.searchsorted(ids, graphs.module_name)
    calls = np.flatnonzero(moves)
    out["gpu_self_ns"] += group_sum(name_row[path[calls]], own[calls], ids.size)
    inside, _ = clip(graphs.call_start_ns, graphs.call_end_ns, window)
    inside &= graphs.call_end_ns > 0
    replay, node, weight, counted = _up_the_paths(graphs, kept, calls, own[calls], inside[calls])
    out["gpu_total_ns"] += group_sum(name_row[node], weight, ids.size)
    pairs = np.unique(replay[counted] * graphs.module_name.size + node[counted])
    out["calls"] += np.bincount(name_row[pairs % graphs.module_name.size], minlength=ids.size).astype(np.int64)
    return ids.astype(np.int32), out


def _kept_paths(model, forest: Forest, graphs: GraphAttribution) -> _Kept:
    """Per replay and reference path: whether the path node is the replay's own (False: it continues a module
    around the replay's graph launch)."""
    launches = graphs.replay_launch
    if forest.size:
        pos = innermost_at(model, forest, model.lane[launches], model.ts_ns[launches])
    else:
        pos = np.full(launches.size, -1, np.int64)
    places, context = np.unique(pos, return_inverse=True)
    masks = []
    for p in places.tolist():  # the launches' distinct innermost modules: a handful
        around = set()
        while p >= 0:
            around.add(int(forest.name_ids[forest.name_ix[p]]))
            p = int(forest.parent[p])
        masks.append(~_continued(graphs, around))
    return _Kept(context.astype(np.int64), np.array(masks, bool).reshape(len(masks), graphs.module_name.size))


class _Kept:
    """`kept[replay, path]` without a replays x paths matrix: one row per distinct launch context."""

    def __init__(self, context: np.ndarray, masks: np.ndarray) -> None:
        self.context, self.masks = context, masks

    def __getitem__(self, key: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        replay, path = key
        return self.masks[self.context[replay], path]

    def any_replay(self) -> np.ndarray:
        return self.masks.any(axis=0)


def _continued(graphs: GraphAttribution, around: set[int]) -> np.ndarray:
    """Per path: a top chain of modules named as the ones around the launch (parents are numbered first)."""
    out = np.zeros(graphs.module_name.size, bool)
    if not around:
        return out
    for q, (name, up) in enumerate(zip(graphs.module_name.tolist(), graphs.module_parent.tolist())):
        out[q] = name in around and (up < 0 or out[up])
    return out


def _up_the_paths(graphs: GraphAttribution, kept: _Kept, calls: np.ndarray, own: np.ndarray,
                  inside: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every (replay, path node, kernel time, counted) a call contributes to: its own path and each kept one above."""
    replay = graphs.call_replay[calls].astype(np.int64)
    node = graphs.call_module[calls].astype(np.int64)
    parts = []
    while node.size:
        parts.append((replay, node, own, inside))
        up = graphs.module_parent[node].astype(np.int64)
        go = up >= 0
        go[go] = kept[replay[go], up[go]]
        replay, node, own, inside = replay[go], up[go], own[go], inside[go]
    if not parts:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, np.zeros(0, bool)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))
