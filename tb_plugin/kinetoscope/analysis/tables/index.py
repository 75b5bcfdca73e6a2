"""The profiler tables: per operator, per GPU kernel (and memcpy/memset) and per nn.Module, for the whole
trace or any window.

API (other modules join these tables by name: `model.names[table.name_id[i]]`)::

    index = TableIndex.build(model)                        # once per model, O(events); immutable, thread-safe
    ops = op_table(model, index, window=None)              # -> OpTable, one row per CPU op name
    op_table(model, index, window, group="stack")          # -> one row per (op name, innermost user Python frame)
    op_table(model, index, window, group="shape")          # -> one row per (op name, input shapes: record_shapes)
    op_table(model, index, window, group="module")         # -> one row per (op name, innermost nn.Module around it)
    mods = module_table(model, index, window=None)         # -> OpTable, one row per `nn.Module: ...` name
    kernels = kernel_table(model, index, window=None)      # -> KernelTable, one row per kernel/memcpy/memset name
    kernel_table(model, index, window, split="launch")     # -> one row per (name, grid, block, registers, shared mem)
    kernel_table(model, index, window, split="op_launch")  # -> ... and launching op (torch-tb-profiler's grouping)
    launchers = kernel_launchers(model, index, kernels.name_id[:5], window=None, top=3)
        # -> {kernel name id: [(op name id, GPU ns, activities), ...]} the ops that launched each kernel
    records(model, ops) / records(model, kernels)          # -> list of plain dicts (field -> value), rows in order

`window` is None (the whole trace) or (start_ns, end_ns), absolute ns like `model.ts_ns`. An event counts in a
window when it overlaps [start, end) (a zero-length one when it starts inside), and only the part of its
duration inside the window counts: durations are clipped, calls are the events overlapping. The whole-trace
tables are therefore exact sums of the trace's durations.

Rows come sorted: ops by GPU total time, then CPU total (descending); kernels by total time (descending);
ties by name id. Every time is int64 ns.

OpTable rows (one per name; nested calls of the same name each count, as in torch.profiler):
    name_id       model name id
    calls         events of that name overlapping the window
    cpu_total_ns  their (clipped) durations
    cpu_self_ns   minus the (clipped) durations of their direct child ops (annotations are not ops) and of the
                  runtime/driver calls (cudaLaunchKernel, cudaMemcpy...) made directly in them, as torch.profiler
                  and torch-tb-profiler count host self time
    cpu_max_ns    longest single (clipped) call
    gpu_self_ns   GPU activity time (kernels, memcpys, memsets) whose launch call the op issued itself: the op
                  with the call's External id enclosing it, else the innermost op running when the call started
                  (`launch_offsets.issuing_ops`, so the launch table names the same op)
    gpu_total_ns  the same, launched by the op or by any op nested in it (per call, summed over calls)
    launches      launch calls of the op or its descendants whose GPU work ran in the window
    cpu_mean_ns / gpu_mean_ns (properties): totals per call (0 when no call)
  and for the table: linked_gpu_ns (GPU activity time in the window with a known launch call),
  top_level_gpu_ns (gpu_total over the calls with no enclosing op; equals linked_gpu_ns - unowned_gpu_ns),
  unowned_gpu_ns (linked time whose launch call ran outside every op).

KernelTable rows:
    name_id, kind (Kind: KERNEL, MEMCPY or MEMSET), calls, total_ns, min_ns, max_ns,
    share (total / all GPU activity time in the window, over every device), tensor_core (name signature,
    see `uses_tensor_cores`), mean_ns (property);
    bytes, bandwidth_gbps (memcpy/memset: bytes moved in the window, each copy's bytes times its share inside
    it, and bytes per ns of copy time = GB/s; NaN when the trace records no bytes);
    grid, block, registers, shared_mem, blocks_per_sm, occupancy (kernels: the launch shape as Kineto records it
    (grid and block as x*y*z), means over the calls weighted by their time in the window, as torch-tb-profiler
    weights "mean blocks per SM" and "mean est. achieved occupancy"; NaN when not recorded)
  and for the table: device_ns (all GPU activity time in the window).

An op is a `cpu_op` (aten::, c10d::, autograd nodes; 2021 `Operator` events that are not annotations), never
`ProfilerStep#N` nor a `record_function` annotation. A module is a `python_function` named `nn.Module: ...`
(recorded with `with_modules` / `with_stack`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Optional

import numpy as np

from ...trace.kinds import LAUNCH_KINDS, Kind, LaneKind
from ...trace.model import MAX_SHOWN_CHARS, TraceModel, freeze_arrays, shown, stable_order, union, unique_first, unique_inverse
from ..core.op_forest import Forest, build_forest, innermost_at
from ..core.selectors import first_of_launch, op_rows
from ..idle.launch_offsets import issuing_ops

Window = Optional[tuple[int, int]]
MODULE_PREFIX = "nn.Module: "
# Kernel-name signatures of Tensor Core (matrix unit) kernels, per era (see trace-format.md for the eras):
# Volta/Turing cuBLAS/cuDNN name the MMA shape (h884, s884, h1688, s1688, i8816, c1688), Ampere the 16x8x16
# one (16816), CUTLASS says `tensorop`, cuBLASLt/cuDNN's XMMA kernels `xmma`, Hopper `gmma`/`wgmma`
# (sm90_xmma_...), explicit `hmma`/`imma`/`mma_` instructions, and AMD Tensile `_MI<m>x<n>x<k>` (MFMA).
_TENSOR_CORE = re.compile(r"(?:884|1688|16816|8816|tensorop|xmma|gmma|hmma|imma|_mma_|mma_sync|_MI\d+x\d+x\d+)",
                          re.IGNORECASE)


def uses_tensor_cores(name: str) -> bool:
    """Whether a kernel name carries a Tensor Core (or AMD matrix core) signature."""
    return _TENSOR_CORE.search(name) is not None


@dataclass(frozen=True)
class _Groups:
    """Members sorted by group, for per-group min/max with one `reduceat`."""

    order: np.ndarray  # int64 member positions sorted by group
    bounds: np.ndarray  # int64 start of each group in `order`

    @staticmethod
    def of(group: np.ndarray, n_groups: int) -> _Groups:
        order = stable_order(group)
        if group.size and (int(group.min()) < 0 or int(group.max()) >= n_groups):
            return _Groups(order, np.searchsorted(group[order], np.arange(n_groups)).astype(np.int64))
        bounds = np.zeros(n_groups, np.int64)
        np.cumsum(np.bincount(group, minlength=n_groups)[:-1], out=bounds[1:])
        return _Groups(order, bounds)


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a cache key for its whole-trace tables
class TableIndex:
    """What every table of one model needs, computed once (O(events)); windows then cost O(ops + activities)."""

    act_rows: np.ndarray  # int64 GPU activity rows (kernel, memcpy, memset on GPU lanes), ascending
    act_start_ns: np.ndarray
    act_end_ns: np.ndarray
    act_name_ix: np.ndarray  # int32 into act_name_ids
    act_name_ids: np.ndarray  # int32 distinct activity names
    act_name_kind: np.ndarray  # int8 Kind of each activity name (its first activity's)
    act_first: np.ndarray  # bool: the first activity of its launch call (counts the launch once)
    act_linked: np.ndarray  # bool: its launch call is known (it may still run outside every op)
    act_groups: _Groups
    tensor_core: np.ndarray  # bool per activity name
    act_values: np.ndarray  # float64 (len(ARG_FIELDS), activities): the model's gpu_arg_* columns per activity, 0 absent
    act_present: np.ndarray  # bool (len(ARG_FIELDS), activities): recorded
    ops: Forest
    op_groups: _Groups
    modules: Forest
    module_groups: _Groups
    # op calls grouped by (name, a second key), made by `sub_groups` on first use (a report reads none of them):
    # "stack" (top user frame), "shape" (Input Dims), "module" (innermost nn.Module) -> _SubGroups, or None
    sub: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        freeze_arrays(self)

    def sub_groups(self, model: TraceModel, group: str) -> Optional[_SubGroups]:
        """The op calls grouped by (name, `group`'s key: SUB_GROUPS), made once (None: the trace has no python
        frames, no op with shapes, or no modules); the model is the one indexed."""
        found = self.sub.get(group, _UNMADE)
        if found is _UNMADE:
            make = _SUB_GROUPS[group][1]
            found = self.sub.setdefault(group, make(model, self))  # two threads may make it: both get the one stored first
        return found

    def with_sub_groups(self, model: TraceModel) -> TableIndex:
        """This index with every SUB_GROUPS made now (the server's: each table it may be asked for, counted in its
        memory from the start)."""
        for group in SUB_GROUPS:
            self.sub_groups(model, group)
        return self

    @staticmethod
    def build(model: TraceModel) -> TableIndex:
        """Index a model for `op_table`, `module_table`, `kernel_table` and `kernel_launchers`."""
        act = np.flatnonzero(model.activity_mask() & model.on_lanes(LaneKind.GPU))
        ids, first_at, ix = unique_first(model.name_id[act])
        kind_of = model.kind[act[first_at]]
        calls = np.flatnonzero(model.kind_in(LAUNCH_KINDS) & model.on_lanes(LaneKind.CPU))
        launch = model.launch_idx[act]
        callers = union(calls, launch[launch >= 0])  # the launch table's attribution: External id, then time
        ops = build_forest(model, op_rows(model), act, calls, (callers, issuing_ops(model, callers)))
        modules = build_forest(model, module_rows(model), act, np.zeros(0, np.int64))
        return TableIndex(act, model.ts_ns[act], model.end_ns[act], ix.astype(np.int32), ids.astype(np.int32),
                          kind_of.astype(np.int8), first_of_launch(model)[act], model.launch_idx[act] >= 0, _Groups.of(ix, ids.size),
                          np.array([uses_tensor_cores(model.names[i]) for i in ids.tolist()], bool),
                          *_activity_args(model, act), ops, _Groups.of(ops.name_ix, ops.name_ids.size),
                          modules, _Groups.of(modules.name_ix, modules.name_ids.size))


ARG_FIELDS = ("bytes", "grid", "block", "registers", "shared_mem", "blocks_per_sm", "occupancy")
_UNMADE = object()


def _activity_args(model: TraceModel, act: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The `gpu_arg_*` columns aligned with the activity rows (both ascending), as (values, present), one row per
    field (written field by field: no strided writes, no transposed copies)."""
    out = np.full((len(ARG_FIELDS), act.size), np.nan)
    rows = model.gpu_arg_row
    pos = np.searchsorted(act, rows)
    hit = (pos < act.size) & (act[np.minimum(pos, max(act.size - 1, 0))] == rows) if act.size else np.zeros(rows.size, bool)
    at = pos[hit]
    for k, name in enumerate(ARG_FIELDS):
        out[k, at] = getattr(model, f"gpu_arg_{name}")[hit]
    present = out >= 0  # NaN (no row) and the model's -1: not recorded
    out[~present] = 0.0
    return out, present


@dataclass(frozen=True)
class _SubGroups:
    """Op calls grouped by (op name, a second key: the innermost user Python frame around the call, or the
    call's input shapes)."""

    group_ix: np.ndarray  # int32 per op position
    name_ids: np.ndarray  # int32 op name id per group
    sub_ids: np.ndarray  # int32 per group: frame name id (into model.names) or shape id (model.shape_strings); -1: none
    groups: _Groups

    def __post_init__(self) -> None:
        freeze_arrays(self)


def is_user_frame(name: str) -> bool:
    """A `with_stack` frame of code (`file.py(123): func`), not a builtin call nor an `nn.Module: ...` region."""
    return not name.startswith(("<built-in", MODULE_PREFIX))


def _stack_groups(model: TraceModel, ops: Forest) -> Optional[_SubGroups]:
    """Each op call's innermost user frame and the groups they make: from python_function events (`with_stack=True`,
    torch >= 1.10), else from the first frame of the ops' own `Call stack` args (<= 1.13-era files)."""
    if ops.size == 0:
        return None
    frames = np.flatnonzero((model.kind == Kind.PYTHON_FUNCTION) & model.on_lanes(LaneKind.CPU))
    if frames.size == 0:
        own = model.call_frame_id[ops.rows]
        return _sub_groups(ops, own, len(model.names)) if (own >= 0).any() else None
    frames = frames[model.name_in(model.name_ids_where(is_user_frame), frames)]  # builtins and modules: climb past
    forest = build_forest(model, frames, np.zeros(0, np.int64), np.zeros(0, np.int64))
    pos = innermost_at(model, forest, model.lane[ops.rows], ops.start_ns)
    frame = np.where(pos >= 0, forest.name_ids[forest.name_ix[np.maximum(pos, 0)]] if forest.size else -1, -1)
    return _sub_groups(ops, frame, len(model.names))


def _shape_groups(model: TraceModel, ops: Forest) -> Optional[_SubGroups]:
    """Each op call's input shapes (`Input Dims`, `record_shapes=True`) and the groups they make, as
    torch.profiler's `key_averages(group_by_input_shape=True)` and torch-tb-profiler's "group by input shape"."""
    if not model.shape_strings or ops.size == 0:
        return None
    return _sub_groups(ops, model.shape_id[ops.rows], len(model.shape_strings))


def _module_groups(model: TraceModel, ops: Forest, modules: Forest) -> Optional[_SubGroups]:
    """Each op call's innermost `nn.Module: ...` region (with_modules / with_stack) and the groups they make;
    ops outside every module (the backward pass runs on autograd's own thread) group under -1."""
    if modules.size == 0 or ops.size == 0:
        return None
    pos = innermost_at(model, modules, model.lane[ops.rows], ops.start_ns)
    module = np.where(pos >= 0, modules.name_ids[modules.name_ix[np.maximum(pos, 0)]], -1)
    return _sub_groups(ops, module, len(model.names))


def _sub_groups(ops: Forest, sub: np.ndarray, n_sub: int) -> _SubGroups:
    """Groups of op calls by (name, `sub`: an id below `n_sub` per call, -1 for none)."""
    key = ops.name_ix.astype(np.int64) * (n_sub + 1) + (sub.astype(np.int64) + 1)
    keys, group_ix = unique_inverse(key)
    group_ix = group_ix.astype(np.int32)
    name_ids = ops.name_ids[keys // (n_sub + 1)]
    sub_ids = (keys % (n_sub + 1) - 1).astype(np.int32)
    return _SubGroups(group_ix, name_ids.astype(np.int32), sub_ids, _Groups.of(group_ix, keys.size))


def module_rows(model: TraceModel) -> np.ndarray:
    """Rows of `nn.Module: ...` python_function events on CPU lanes, ascending."""
    ids = model.name_ids_where(lambda n: n.startswith(MODULE_PREFIX))
    mask = model.name_in(ids) & (model.kind == Kind.PYTHON_FUNCTION) & model.on_lanes(LaneKind.CPU)
    return np.flatnonzero(mask)


@dataclass(frozen=True)
class OpTable:
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


@dataclass(frozen=True)
class KernelTable:
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


def clip(start_ns: np.ndarray, end_ns: np.ndarray, window: Window) -> tuple[np.ndarray, np.ndarray]:
    """Which intervals count in the window, and each one's duration inside it (0 where it does not count)."""
    if window is None:
        return np.ones(start_ns.size, bool), end_ns - start_ns
    t0, t1 = int(window[0]), int(window[1])
    inside = (start_ns < t1) & ((end_ns > t0) | (start_ns >= t0))
    dur = np.minimum(end_ns, t1) - np.maximum(start_ns, t0)
    return inside, np.where(inside, np.maximum(dur, 0), 0)


def _sum(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per-group sums of int64 values (float64 sums of integers are exact below 2^53 ns: 104 days)."""
    return np.bincount(groups, weights=values, minlength=n).astype(np.int64)


def _group_extreme(groups: _Groups, values: np.ndarray, mask: np.ndarray, largest: bool) -> np.ndarray:
    """Per-group max (or min) of the masked values; 0 for a group with none."""
    if groups.bounds.size == 0:
        return np.zeros(0, np.int64)
    fill = np.iinfo(np.int64).min if largest else np.iinfo(np.int64).max
    picked = np.where(mask, values, fill)[groups.order]
    reduce = np.maximum if largest else np.minimum
    out = reduce.reduceat(picked, groups.bounds) if picked.size else np.full(groups.bounds.size, fill)
    return np.where(out == fill, 0, out)


def _forest_table(model: TraceModel, index: TableIndex, forest: Forest, groups: _Groups, window: Window,
                  sub: Optional[_SubGroups] = None, sub_field: str = "") -> OpTable:
    name, name_ids = (forest.name_ix, forest.name_ids) if sub is None else (sub.group_ix, sub.name_ids)
    groups = groups if sub is None else sub.groups
    n_names = name_ids.size
    inside, dur = clip(forest.start_ns, forest.end_ns, window)
    children = _sum(forest.parent[forest.child], dur[forest.child], forest.size)
    if forest.call_rows.size:  # runtime calls made inside an op are not its own CPU work (as torch.profiler counts)
        _, call_dur = clip(forest.call_start_ns, forest.call_end_ns, window)
        children += _sum(forest.call_owner, call_dur, forest.size)
    self_ns = np.maximum(dur - children, 0)
    act_in, act_dur = clip(index.act_start_ns, index.act_end_ns, window)
    owned = forest.owner >= 0
    gpu_self = _sum(forest.owner[owned], act_dur[owned], forest.size)
    launches_self = np.bincount(forest.owner[owned], weights=(act_in & index.act_first)[owned], minlength=forest.size)
    gpu_total = _subtree_totals(forest, gpu_self)
    launches_total = _subtree_totals(forest, np.rint(launches_self).astype(np.int64))
    linked_ns = int(act_dur[index.act_linked].sum())
    top = int(gpu_total[forest.parent < 0].sum())
    calls = np.bincount(name[inside], minlength=n_names).astype(np.int64)
    table = dict(calls=calls, cpu_total_ns=_sum(name, dur, n_names), cpu_self_ns=_sum(name, self_ns, n_names),
                 cpu_max_ns=_group_extreme(groups, dur, inside, True), gpu_self_ns=_sum(name, gpu_self, n_names),
                 gpu_total_ns=_sum(name, gpu_total, n_names), launches=_sum(name, launches_total, n_names))
    keep = np.flatnonzero((calls > 0) | (table["gpu_total_ns"] > 0))
    keep = keep[np.lexsort((keep, name_ids[keep], -table["cpu_total_ns"][keep], -table["gpu_total_ns"][keep]))]
    return OpTable(name_id=name_ids[keep], **{k: v[keep] for k, v in table.items()}, linked_gpu_ns=linked_ns,
                   top_level_gpu_ns=top, unowned_gpu_ns=linked_ns - top, window=window,
                   **({} if sub is None else {sub_field: sub.sub_ids[keep]}))


def _subtree_totals(forest: Forest, per_node: np.ndarray) -> np.ndarray:
    """Each node's value plus all its descendants' (a prefix sum over the preorder positions)."""
    cs = np.concatenate(([0], np.cumsum(per_node)))
    return cs[forest.subtree_end] - cs[np.arange(forest.size)]


# The op table's groupings beyond the name: each one's column of its second key in the table, and its maker (run on
# first use: `TableIndex.sub_groups`).
_SUB_GROUPS = {
    "stack": ("frame_id", lambda model, index: _stack_groups(model, index.ops)),
    "shape": ("shape_id", lambda model, index: _shape_groups(model, index.ops)),
    "module": ("module_id", lambda model, index: _module_groups(model, index.ops, index.modules)),
}
SUB_GROUPS = tuple(_SUB_GROUPS)
OP_GROUPS = ("name", *SUB_GROUPS)


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
    column, sub = _SUB_GROUPS[group][0], index.sub_groups(model, group)
    if sub is None:
        plain = _forest_table(model, index, index.ops, index.op_groups, window)
        return replace(plain, **{column: np.full(plain.name_id.size, -1, np.int32)})
    return _forest_table(model, index, index.ops, index.op_groups, window, sub, column)


def module_table(model: TraceModel, index: TableIndex, window: Window = None) -> OpTable:
    """The module table (one row per `nn.Module: ...` name); fields as in `op_table`."""
    return _forest_table(model, index, index.modules, index.module_groups, window)


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
        groups = _Groups.of(group_ix, n)
    else:
        raise ValueError(f"unknown kernel table split {split!r} (name, {', '.join(KERNEL_SPLITS)})")
    inside, dur = clip(index.act_start_ns, index.act_end_ns, window)
    calls = np.bincount(group_ix[inside], minlength=n).astype(np.int64)
    total = _sum(group_ix, dur, n)
    device_ns = int(total.sum())
    share = total / device_ns if device_ns else np.zeros(n)
    name_ix = np.arange(n) if name_of is None else name_of
    keep = np.flatnonzero(calls > 0)
    keep = keep[np.lexsort((keep, index.act_name_ids[name_ix[keep]], -total[keep]))]
    args = _arg_means(index, inside, dur, n, group_ix)
    named = name_ix[keep]
    return KernelTable(name_id=index.act_name_ids[named], kind=index.act_name_kind[named], calls=calls[keep],
                       total_ns=total[keep], min_ns=_group_extreme(groups, dur, inside, False)[keep],
                       max_ns=_group_extreme(groups, dur, inside, True)[keep], share=share[keep],
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
    ns = _sum(inverse, dur, pairs.size)
    count = np.bincount(inverse, minlength=pairs.size)
    kernel_local, op_of = pairs // width, pairs % width - 1
    op_name = np.full(op_of.size, -1, np.int64)
    op_name[op_of >= 0] = index.ops.name_ids[op_of[op_of >= 0]]
    for j in np.lexsort((op_name, -ns)).tolist():
        entries = result[int(name_ids[kernel_local[j]])]
        if len(entries) < top:
            entries.append((int(op_name[j]), int(ns[j]), int(count[j])))
    return result


def records(model: TraceModel, table: Any) -> list[dict[str, Any]]:
    """A table's rows as plain dicts: `name` (the shown name) and every per-row field, in row order."""
    per_row = [f.name for f in fields(table) if isinstance(getattr(table, f.name), np.ndarray)]
    extra = ["cpu_mean_ns", "gpu_mean_ns"] if isinstance(table, OpTable) else ["mean_ns"]
    columns = {key: getattr(table, key).tolist() for key in per_row + extra}
    if "kind" in columns:
        columns["kind"] = [Kind(k).name.lower() for k in columns["kind"]]
    for key in ("bytes", "bandwidth_gbps", *ARG_FIELDS):  # NaN (not recorded) as None: JSON has no NaN
        if key in columns:
            columns[key] = [None if v != v else v for v in columns[key]]
    if "frame_id" in columns:
        columns["frame"] = [model.shown_names[i] if i >= 0 else None for i in columns.pop("frame_id")]
    if "op_id" in columns:
        columns["op"] = [model.shown_names[i] if i >= 0 else None for i in columns.pop("op_id")]
    if "module_id" in columns:
        columns["module"] = [model.shown_names[i] if i >= 0 else None for i in columns.pop("module_id")]
    if "shape_id" in columns:
        columns["shapes"] = [shown(model.shape_strings[i]) if i >= 0 else None for i in columns.pop("shape_id")]
    names = [model.shown_names[i] for i in columns["name_id"]]
    rows = [{"name": name, **{key: values[i] for key, values in columns.items()}} for i, name in enumerate(names)]
    return with_name_keys(rows, [model.names[i] for i in columns["name_id"]])


def name_key(name: str) -> Optional[str]:
    """A stable id of a name cut for showing (over MAX_SHOWN_CHARS characters), None for one shown whole.

    16 hex digits of the full name's SHA-1: the same in every file, run and route, so two rows whose shown
    names are the same first 999 characters stay apart, in bounded space (a writer may put a 50 MB name in
    a trace; no answer may grow with it).
    """
    if len(name) <= MAX_SHOWN_CHARS:
        return None
    return hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def with_name_keys(rows: list[dict[str, Any]], full_names: list[str]) -> list[dict[str, Any]]:
    """`rows` (modified in place and returned) with `name_key` and `name_chars` on each row whose name was cut."""
    for row, full in zip(rows, full_names):
        key = name_key(full)
        if key is not None:
            row["name_key"], row["name_chars"] = key, len(full)
    return rows
