"""The `nn.Module` hierarchy as a tree, with host and device time per node (self and total), as torch-tb-profiler's
Module view computes them.

    tree = module_tree(model, window=None)     # -> ModuleTree, nodes in preorder (children in order of first call)

Modules are `python_function` events named `nn.Module: <Class>_<instance>` (`with_modules=True` or
`with_stack=True`, torch >= 1.11). A module's parent is the innermost module running around it on its thread;
a tree node is a path of module names from a root, and every call of a module on that path counts in the node:

    [nn.Module: Encoder_0 .........................................................)
       [nn.Module: Linear_0 ......)  [aten::relu ....)  [nn.Module: Linear_1 .......)
          [aten::linear ...)                                [aten::linear ....)
             cudaLaunchKernel -> gemm (10 µs)                  cudaLaunchKernel -> gemm (12 µs)
                                        cudaLaunchKernel -> relu_k (3 µs)

    Encoder_0: device 25 µs; self device 3 µs (aten::relu's kernel: launched in the module, not in a child module)
    Linear_0: device 10 µs, self device 10 µs (its ops' kernels are its own: ops are not modules)

Per node, summed over its calls (torch-tb-profiler's ModuleStats):
    occurrences     calls of the module on this path overlapping the window
    operators       ops (`cpu_op`, not annotations) directly inside the module, summed over its calls
    host_ns         the calls' (clipped) durations
    self_host_ns    minus the durations of the nodes directly inside (ops, annotations, steps, modules) and of the
                    runtime/driver calls made directly in it (as torch-tb-profiler counts an op's host self time)
    device_ns       GPU activity time (kernels, memcpys, memsets) launched inside the module (its launch call runs
                    inside it), clipped to the window
    self_device_ns  the part not launched inside a child module, annotation or step: launched directly in the
                    module or inside one of its ops (torch-tb-profiler: a module's own runtimes plus its child
                    operators' device time)
torch-tb-profiler keys a module by its name and `Python module id` and shows one stats row per key at every
place the key appears in the hierarchy; Kinetoscope keys by the path, so a module called from two places
shows each place's own calls (the same figures wherever a module sits in one place, as `_<instance>` names do).
A launch call belongs to the innermost node running when it starts (time), as torch-tb-profiler assigns runtimes.

Graph replays (`graphs.attribution`): a replayed kernel's op call sits in the module path the reference ran it in,
and that path is grafted under the module around the replay's graph launch (a reference path that starts with
that module's name continues it). A replayed node counts one occurrence per replay that ran kernels under it, its
replayed op calls as operators, no host time, and the replayed kernels as device time; the kernels leave the self
device time of the module around the launch (its device total keeps them). `replayed_device_ns` is each node's
device time that graph replays ran (0 everywhere without replays).
"""
from __future__ import annotations

import msgspec
import numpy as np

from ...trace.kinds import CPU_OP_KINDS, LAUNCH_KINDS, LaneKind
from ...trace.model import TraceModel, freeze_arrays, union
from ..core.op_forest import Forest, build_forest
from ..graphs.attribution import GraphAttribution
from .index import MODULE_PREFIX, TableIndex, Window, clip, module_rows

MAX_NODES = 20_000  # tree nodes kept (in preorder): a deeper hierarchy is cut, and says so (`truncated`)


class ModuleTree(msgspec.Struct, frozen=True):
    """Tree nodes in preorder; see the module docstring for every field."""

    name_id: np.ndarray  # int32 model name id of the node's module (`nn.Module: ...`)
    parent: np.ndarray  # int32 index of the parent node, -1 for a root
    depth: np.ndarray  # int32 0 for a root
    occurrences: np.ndarray
    operators: np.ndarray
    host_ns: np.ndarray
    self_host_ns: np.ndarray
    device_ns: np.ndarray
    self_device_ns: np.ndarray
    replayed_device_ns: np.ndarray
    truncated: bool  # more than MAX_NODES nodes: the rest are left out
    window: Window

    def __post_init__(self) -> None:
        freeze_arrays(self)


def module_label(name: str) -> str:
    """A module's name without the `nn.Module: ` prefix, as torch-tb-profiler shows it."""
    return name[len(MODULE_PREFIX):] if name.startswith(MODULE_PREFIX) else name


def module_tree(model: TraceModel, index: TableIndex, window: Window = None) -> ModuleTree:
    """The module tree for the whole trace or a window; see the module docstring."""
    cpu = model.on_lanes(LaneKind.CPU)
    modules = module_rows(model)
    if modules.size == 0 and (index.graphs is None or not (index.graphs.call_module >= 0).any()):
        empty = np.zeros(0, np.int64)
        return ModuleTree(empty.astype(np.int32), empty.astype(np.int32), empty.astype(np.int32), *([empty] * 7),
                          truncated=False, window=window)
    rows = union(np.flatnonzero(cpu & model.kind_in(CPU_OP_KINDS)), modules)
    act = np.flatnonzero(model.activity_mask() & model.on_lanes(LaneKind.GPU))
    calls = np.flatnonzero(model.kind_in(LAUNCH_KINDS) & cpu)
    forest = build_forest(model, rows, act, calls)
    is_module = np.isin(forest.rows, modules)
    is_op = np.isin(forest.rows, index.ops.rows)  # the tree has its own forest: annotations are nodes here
    inside, dur = clip(forest.start_ns, forest.end_ns, window)
    child = forest.child
    _, call_dur = clip(forest.call_start_ns, forest.call_end_ns, window)
    n = forest.size
    children_ns = np.bincount(forest.parent[child], weights=dur[child], minlength=n)
    children_ns += np.bincount(forest.call_owner, weights=call_dur, minlength=n)
    self_host = np.maximum(dur - np.rint(children_ns).astype(np.int64), 0)
    act_in, act_dur = clip(model.ts_ns[act], model.end_ns[act], window)
    owned = forest.owner >= 0
    gpu_self = np.rint(np.bincount(forest.owner[owned], weights=act_dur[owned], minlength=n)).astype(np.int64)
    cs = np.concatenate(([0], np.cumsum(gpu_self)))
    device = cs[forest.subtree_end] - cs[np.arange(n)]
    not_op_child = child[~is_op[child]]  # child modules, annotations, steps: their device time is not self
    self_device = device - np.rint(np.bincount(forest.parent[not_op_child], weights=device[not_op_child],
                                               minlength=n)).astype(np.int64)
    operators = np.bincount(forest.parent[child[is_op[child] & inside[child]]], minlength=n)
    node, node_parent, node_name, ids = _paths(model, forest.rows, is_module)
    values = dict(occurrences=np.ones(n, np.int64), operators=operators, host_ns=dur, self_host_ns=self_host,
                  device_ns=device, self_device_ns=self_device, replayed_device_ns=np.zeros(n, np.int64))
    first, counted = model.ts_ns[forest.rows], is_module & inside
    if index.graphs is not None and index.graphs.size:
        grafted = _grafted(index.graphs, forest, node, is_module, is_op, node_name, ids, act_dur, window)
        node = np.concatenate([node, grafted.pop("node")])
        first = np.concatenate([first, grafted.pop("first")])
        counted = np.concatenate([counted, np.ones(first.size - counted.size, bool)])
        values = {k: np.concatenate([v, grafted[k]]) for k, v in values.items()}
        node_parent, node_name = np.array([p for p, _ in ids], np.int64), np.array([m for _, m in ids], np.int64)
    return _aggregate(first, (node, node_parent, node_name), counted, values, window)


def _grafted(graphs: GraphAttribution, forest: Forest, node: np.ndarray, is_module: np.ndarray, is_op: np.ndarray,
             node_name: np.ndarray, ids: dict[tuple[int, int], int], act_dur: np.ndarray,
             window: Window) -> dict[str, np.ndarray]:
    """The replays' module paths grafted into the tree (see the module docstring): new nodes numbered into `ids`,
    and one extra position per (replay, node) with its values (the `_aggregate` columns, `node` and `first`)."""
    names = node_name.tolist()
    base, moves = _launch_bases(graphs, forest, node, is_module, is_op)
    call_base = base[graphs.call_replay]
    graft = _Graft(graphs, ids, names)
    at = np.array([graft.node(b, p) for b, p in zip(call_base.tolist(), graphs.call_module.tolist())], np.int64)
    grafted = (graphs.call_module >= 0) & (at != call_base)
    mine = np.flatnonzero(graphs.act_call >= 0)
    own = np.bincount(graphs.act_call[mine], weights=act_dur[mine], minlength=graphs.size)
    inside, _ = clip(graphs.call_start_ns, graphs.call_end_ns, window)
    parent_at = np.where(graphs.call_parent >= 0, at[np.maximum(graphs.call_parent, 0)], -2)
    # (replay, node) -> [occurs, operators, self device, device, first start, device of the replay's calls below it]
    entries: dict[tuple[int, int], list] = {}
    for c in np.flatnonzero(grafted).tolist():
        r, n = int(graphs.call_replay[c]), int(at[c])
        chain = graft.up_to(n, int(call_base[c]))
        for k, a in enumerate(chain):
            e = entries.setdefault((r, a), [0, 0, 0.0, 0.0, np.iinfo(np.int64).max, 0.0])
            e[0] |= bool(inside[c])
            e[3] += own[c]
            e[4] = min(e[4], int(graphs.call_start_ns[c]))
            if k == 0:
                e[1] += int(parent_at[c] != n)
                e[2] += own[c]
    moved = np.bincount(graphs.call_replay[grafted], weights=own[grafted], minlength=base.size)
    ran = np.bincount(graphs.call_replay, weights=own, minlength=base.size)
    for r in np.flatnonzero((base >= 0) & (ran > 0)).tolist():  # the module around the launch gives them up
        for k, a in enumerate(graft.up_to(int(base[r]), -1)):
            e = entries.setdefault((r, a), [0, 0, 0.0, 0.0, np.iinfo(np.int64).max, 0.0])
            e[2] -= moved[r] if k == 0 and moves[r] else 0.0
            e[5] += ran[r]
    rows = list(entries.values())
    zeros = np.zeros(len(rows), np.int64)

    def col(i: int) -> np.ndarray:
        return np.rint(np.array([v[i] for v in rows], np.float64)).astype(np.int64) if rows else zeros

    first = np.array([v[4] for v in rows], np.int64) if rows else zeros
    return {"node": np.array([n for _, n in entries], np.int64), "first": first, "occurrences": col(0),
            "operators": col(1), "host_ns": zeros, "self_host_ns": zeros, "device_ns": col(3), "self_device_ns": col(2),
            "replayed_device_ns": col(3) + col(5)}


def _launch_bases(graphs: GraphAttribution, forest: Forest, node: np.ndarray, is_module: np.ndarray,
                  is_op: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per replay, the tree node of the module around its graph launch (-1 none), and whether that module's self
    device time holds the replay's kernels (the launch ran in it or in its ops, not inside an annotation)."""
    at = np.minimum(np.searchsorted(forest.call_rows, graphs.replay_launch), max(forest.call_rows.size - 1, 0))
    found = forest.call_rows.size > 0
    base = np.full(graphs.replay_launch.size, -1, np.int64)
    moves = np.zeros(graphs.replay_launch.size, bool)
    for r, (k, row) in enumerate(zip(at.tolist(), graphs.replay_launch.tolist())):
        pos = int(forest.call_owner[k]) if found and forest.call_rows[k] == row else -1
        through_other = False
        while pos >= 0 and not is_module[pos]:
            through_other |= not is_op[pos]
            pos = int(forest.parent[pos])
        if pos >= 0:
            base[r], moves[r] = node[pos], not through_other
    return base, moves


class _Graft:
    """Reference module paths placed under the trace's tree nodes, numbered into the tree's (parent, name) ids."""

    def __init__(self, graphs: GraphAttribution, ids: dict[tuple[int, int], int], names: list[int]) -> None:
        self.graphs, self.ids, self.names = graphs, ids, names
        self.parents = [p for p, _ in ids]
        self.memo: dict[tuple[int, int], int] = {}

    def node(self, base: int, path: int) -> int:
        """The tree node of reference path `path` under tree node `base` (-1: a root); `base` for no path."""
        if path < 0:
            return base
        key = (base, path)
        if key not in self.memo:
            name = int(self.graphs.module_name[path])
            up = int(self.graphs.module_parent[path])
            same = self._named(base, name) if up < 0 else -1
            if same >= 0:  # the capture ran inside a module the replay runs in too: the same node
                self.memo[key] = same
            else:
                parent = self.node(base, up) if up >= 0 else base
                n = self.ids.setdefault((parent, name), len(self.ids))
                if n == len(self.names):
                    self.names.append(name)
                    self.parents.append(parent)
                self.memo[key] = n
        return self.memo[key]

    def _named(self, n: int, name: int) -> int:
        """The nearest of `n` and the nodes above it named `name`, -1 none."""
        while n >= 0 and self.names[n] != name:
            n = self.parents[n]
        return n

    def up_to(self, n: int, stop: int) -> list[int]:
        """`n` and the nodes above it, up to and without `stop` (-1: every ancestor)."""
        out = []
        while n >= 0 and n != stop:
            out.append(n)
            n = self.parents[n]
        return out


def _paths(model: TraceModel, rows: np.ndarray,
           is_module: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[tuple[int, int], int]]:
    """Each module position's tree node: (node per forest position (-1 for non-modules), parent node per node,
    name id per node, the (parent node, name id) -> node numbering). A module's parent module comes from the
    modules' own nesting (a forest of modules alone, in preorder: a parent before its children), so one pass
    numbers the paths."""
    node = np.full(rows.size, -1, np.int64)
    mods = np.flatnonzero(is_module)
    if mods.size == 0:
        empty = np.zeros(0, np.int64)
        return node, empty, empty, {}
    alone = build_forest(model, rows[mods], np.zeros(0, np.int64), np.zeros(0, np.int64))
    names = model.name_id[rows[mods]].tolist()
    ids: dict[tuple[int, int], int] = {}
    mine = [0] * mods.size
    for k, (up, name) in enumerate(zip(alone.parent.tolist(), names)):  # one dict lookup per module call
        mine[k] = ids.setdefault((mine[up] if up >= 0 else -1, name), len(ids))
    node[mods] = mine
    keys = list(ids)  # in numbering order (dicts keep insertion order)
    return node, np.array([p for p, _ in keys], np.int64), np.array([n for _, n in keys], np.int64), ids


def _aggregate(first: np.ndarray, paths: tuple[np.ndarray, np.ndarray, np.ndarray],
               counted: np.ndarray, values: dict[str, np.ndarray], window: Window) -> ModuleTree:
    """Per-node sums of the positions' values (module calls, then grafted replays; `first`: each one's start),
    nodes in preorder with children by their first call."""
    node, node_parent, node_name = paths
    k = node_parent.size
    sel = np.flatnonzero(counted & (node >= 0))
    sums = {key: np.rint(np.bincount(node[sel], weights=v[sel], minlength=k)).astype(np.int64) for key, v in values.items()}
    first_ts = np.full(k, np.iinfo(np.int64).max)
    has = np.flatnonzero(node >= 0)
    np.minimum.at(first_ts, node[has], first[has])
    order = _preorder(node_parent, first_ts)
    truncated = order.size > MAX_NODES
    order = order[:MAX_NODES]
    renumber = np.full(k + 1, -1, np.int64)
    renumber[order] = np.arange(order.size)
    parent = renumber[node_parent[order]]  # a root's -1 indexes the trailing -1
    depth = np.zeros(order.size, np.int64)
    for i in range(order.size):  # parents come first in preorder
        depth[i] = depth[parent[i]] + 1 if parent[i] >= 0 else 0
    keep = sums["occurrences"][order] > 0
    if not keep.all():  # nodes with no call in the window: drop them (their subtrees have none either)
        order, parent, depth = _drop(order, parent, depth, keep)
    return ModuleTree(node_name[order].astype(np.int32), parent.astype(np.int32), depth.astype(np.int32),
                      **{key: v[order] for key, v in sums.items()}, truncated=bool(truncated), window=window)


def _preorder(node_parent: np.ndarray, first_ts: np.ndarray) -> np.ndarray:
    """Node ids in preorder, siblings by first call."""
    k = node_parent.size
    kids: dict[int, list[int]] = {}
    for i in np.lexsort((np.arange(k), first_ts)).tolist():
        kids.setdefault(int(node_parent[i]), []).append(i)
    out: list[int] = []
    stack = list(reversed(kids.get(-1, [])))
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(reversed(kids.get(i, [])))
    return np.array(out, np.int64)


def _drop(order: np.ndarray, parent: np.ndarray, depth: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kept nodes, parents renumbered (a kept node's parent is kept: a call inside a window makes its
    parent's call overlap the window too)."""
    new = np.cumsum(keep) - 1
    parent = np.where(parent >= 0, new[np.maximum(parent, 0)], -1)
    return order[keep], parent[keep], depth[keep]
