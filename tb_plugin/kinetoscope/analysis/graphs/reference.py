"""A reference run's launches, in program order, and the op calls that issued them (`ReferenceCalls`).

What a graph replays was launched once by ops, eagerly or into a capture. A reference is that record: each launch
(its kernel name, grid and block where recorded), the op call that issued it (the profiler tables' issuing op) and
that call's enclosing ops, its nn.Module path (the modules around it, outermost first, as the module tree keys
its nodes), its input shapes and its innermost user Python frame. It holds its own strings, so a reference read from one trace
file attributes the replays of another:

    ref = reference_calls(model, act_rows, act_grid, act_block, ops, modules, source="self")
    ref = reference_calls(..., launch_keys={row: (kernel name, grid, block)})  # captured launches the door re-read

Items come from two kinds of launch: those that own device activity in the reference (eager: the activity names
the kernel) and those that own none (recorded into a capture; ROCm names the kernel in the call's args, which the
door re-reads into `launch_keys`; a CUDA capture's launch calls name nothing: their kernel is a wildcard, matched
by position). Graph launches themselves are never items.
"""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.kinds import GRAPH_LAUNCH_CALLS, LAUNCH_CALLS, LAUNCH_KINDS
from ...trace.model import TraceModel, freeze_arrays
from ..core.frames import innermost_frames
from ..core.op_forest import Forest, innermost_at
from .align import WILDCARD

MAX_ITEMS = 2_000_000  # reference launches kept (the earliest)


class ReferenceCalls(msgspec.Struct, frozen=True):
    """A reference's launches in program order and the op calls around them; strings are its own (`strings`)."""

    source: str  # "self", or the reference trace's path as the user named it
    strings: tuple[str, ...]
    item_kernel: np.ndarray  # int64 string index of the kernel name, WILDCARD where the launch names none
    item_grid: np.ndarray  # float64 grid size (x*y*z), -1 unknown
    item_block: np.ndarray  # float64 block size, -1 unknown
    item_call: np.ndarray  # int64 the issuing call (into call_*), -1 when no op issued it
    call_name: np.ndarray  # int64 string index of the op name
    call_inputs: np.ndarray  # int64 string index of its recorded inputs text (the model's inputs key), -1 none
    call_parent: np.ndarray  # int64 the enclosing op call, -1 for top-level ones
    call_module: np.ndarray  # int64 its innermost nn.Module's path (into module_*), -1 outside every module
    call_row: np.ndarray  # int64 the call's row in the reference model (for "self": this model's rows)
    module_name: np.ndarray  # int64 per module path: string index of its last module's name
    module_parent: np.ndarray  # int64 per module path: the path one module shorter, -1 for a top-level module
    call_shape: np.ndarray  # int64 string index of the call's input shapes text (`Input Dims`), -1 none
    call_frame: np.ndarray  # int64 string index of its innermost user Python frame (`core/frames.py`), -1 none

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def size(self) -> int:
        return int(self.item_kernel.size)


def reference_calls(model: TraceModel, act_rows: np.ndarray, act_grid: np.ndarray, act_block: np.ndarray, ops: Forest,
                    modules: Forest, source: str = "self",
                    launch_keys: Optional[dict[int, tuple[str, float, float]]] = None) -> ReferenceCalls:
    """The launches of `model` (its GPU activities `act_rows` with their grid and block sizes, -1 unknown; `ops`:
    the op forest owning them, `modules`: the nn.Module forest) as a reference (see the module docstring)."""
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings))

    graph_ids = model.name_ids_where(lambda n: n in GRAPH_LAUNCH_CALLS)
    launch = model.launch_idx[act_rows]
    eager = np.flatnonzero((launch >= 0) & ~model.name_in(graph_ids, np.maximum(launch, 0)))
    captured = _captured_launches(model, graph_ids)
    call_pos = np.concatenate([ops.owner[eager].astype(np.int64), _call_owner(ops, captured)])
    order_ts = np.concatenate([model.ts_ns[launch[eager]], model.ts_ns[captured]])
    tie_ts = np.concatenate([model.ts_ns[act_rows[eager]], model.ts_ns[captured]])
    kernel = [sid(model.names[i]) for i in model.name_id[act_rows[eager]].tolist()]
    grid, block = list(act_grid[eager].tolist()), list(act_block[eager].tolist())
    keys = launch_keys or {}
    for row in captured.tolist():
        name, g, b = keys.get(row, (None, -1.0, -1.0))
        kernel.append(WILDCARD if name is None else sid(name))
        grid.append(float(g))
        block.append(float(b))
    order = np.lexsort((tie_ts, order_ts))[:MAX_ITEMS]
    item_kernel, call_pos = np.array(kernel, np.int64)[order], call_pos[order]
    calls, item_call = _calls_with_ancestors(ops, call_pos)
    names = [sid(model.names[i]) for i in model.name_id[ops.rows[calls]].tolist()]
    inputs = model.inputs_id[ops.rows[calls]]
    texts = [sid(model.inputs_strings[k]) if k >= 0 else -1 for k in inputs.tolist()]
    parent = _parents(ops, calls)
    module = innermost_at(model, modules, model.lane[ops.rows[calls]], ops.start_ns[calls]) if modules.size else \
        np.full(calls.size, -1, np.int64)
    path_of, path_name, path_parent = _module_paths(model, modules, module, sid)
    shapes = [sid(model.shape_strings[k]) if k >= 0 else -1 for k in model.shape_id[ops.rows[calls]].tolist()]
    frame = innermost_frames(model, ops, calls) if calls.size else None
    frames = [-1] * calls.size if frame is None else [sid(model.names[k]) if k >= 0 else -1 for k in frame.tolist()]
    return ReferenceCalls(source, tuple(strings), item_kernel, np.array(grid, np.float64)[order],
                          np.array(block, np.float64)[order], item_call, np.array(names, np.int64),
                          np.array(texts, np.int64), parent, path_of, ops.rows[calls], path_name, path_parent,
                          np.array(shapes, np.int64), np.array(frames, np.int64))


def _module_paths(model: TraceModel, modules: Forest, innermost: np.ndarray, sid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The module paths of the calls' innermost modules (positions of `modules`, -1 none): each call's path
    (-1 none), and per path its last module's string index and its parent path. Only the paths the calls sit
    in, and the paths above them, are numbered (a module forest is in preorder: a parent before its children)."""
    used = with_ancestors(modules.parent.astype(np.int64), innermost) if modules.size else np.zeros(0, np.int64)
    paths: dict[tuple[int, int], int] = {}
    path_at = np.full(modules.size + 1, -1, np.int64)
    for m, up in zip(used.tolist(), modules.parent[used].tolist()):
        name = sid(model.names[modules.name_ids[modules.name_ix[m]]])
        path_at[m] = paths.setdefault((int(path_at[up]) if up >= 0 else -1, name), len(paths))
    keys = list(paths)
    return (path_at[np.where(innermost >= 0, innermost, modules.size)], np.array([n for _, n in keys], np.int64),
            np.array([p for p, _ in keys], np.int64))


def captured_launch_rows(model: TraceModel) -> np.ndarray:
    """Launch calls that own no device activity (recorded into a graph by a capture), graph launches aside."""
    return _captured_launches(model, model.name_ids_where(lambda n: n in GRAPH_LAUNCH_CALLS))


def _captured_launches(model: TraceModel, graph_ids: np.ndarray) -> np.ndarray:
    ids = model.name_ids_where(lambda n: n in LAUNCH_CALLS)
    rows = np.flatnonzero(model.name_in(ids) & model.kind_in(LAUNCH_KINDS) & ~model.name_in(graph_ids))
    owned = model.launch_idx[model.activity_mask() & (model.launch_idx >= 0)]
    return rows[~np.isin(rows, owned)]


def _call_owner(ops: Forest, calls: np.ndarray) -> np.ndarray:
    """The op position owning each runtime call (the forest's call owners), -1 for none."""
    if calls.size == 0 or ops.call_rows.size == 0:
        return np.full(calls.size, -1, np.int64)
    at = np.minimum(np.searchsorted(ops.call_rows, calls), ops.call_rows.size - 1)
    return np.where(ops.call_rows[at] == calls, ops.call_owner[at].astype(np.int64), -1)


def with_ancestors(parent: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """`nodes` (positions, -1 ignored) and every node above them (`parent`: -1 at the top), ascending."""
    seen = np.zeros(parent.size, bool)
    frontier = np.unique(nodes[nodes >= 0])
    while frontier.size:
        frontier = frontier[~seen[frontier]]
        seen[frontier] = True
        up = parent[frontier].astype(np.int64)
        frontier = np.unique(up[up >= 0])
    return np.flatnonzero(seen)


def renumbered(kept: np.ndarray, n: int, positions: np.ndarray) -> np.ndarray:
    """`positions` (among `n`, -1 for none) as indices into `kept` (ascending); -1 for none or one not kept."""
    index = np.full(n + 1, -1, np.int64)
    index[kept] = np.arange(kept.size)
    return index[np.where(positions >= 0, positions, n)]


def _calls_with_ancestors(ops: Forest, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The op positions issuing items and every op around them (ascending), and each item's index among them."""
    calls = with_ancestors(ops.parent, pos)
    return calls, renumbered(calls, ops.size, pos)


def _parents(ops: Forest, calls: np.ndarray) -> np.ndarray:
    """Each call's enclosing call among `calls` (all ancestors are in it), -1 for top-level ones."""
    return renumbered(calls, ops.size, ops.parent[calls].astype(np.int64))


def keys_in(ref: ReferenceCalls, name_of: dict[str, int]) -> np.ndarray:
    """The reference's kernel names as ids of another string table (`name_of`; a name it lacks: -3, matching no
    kernel), wildcards kept."""
    mapped = np.array([name_of.get(s, -3) for s in ref.strings] + [WILDCARD], np.int64)
    return mapped[np.where(ref.item_kernel == WILDCARD, len(ref.strings), ref.item_kernel)]


def strings_to_ids(texts: tuple[str, ...]) -> dict[str, int]:
    """A string table's index: text -> id (the first of duplicates)."""
    out: dict[str, int] = {}
    for i, text in enumerate(texts):
        out.setdefault(text, i)
    return out

