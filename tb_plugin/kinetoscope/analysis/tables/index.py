"""The profiler tables' index (`TableIndex`, built once per model) and their groupings; the tables themselves are
per operator and per nn.Module (`ops.py`), per GPU kernel, memcpy and memset (`kernels.py`), as plain rows
(`rows.py`), for the whole trace or any window.

API (other modules join these tables by name: `model.names[table.name_id[i]]`; `op_table`, `module_table` in `ops.py`,
`kernel_table`, `kernel_launchers` in `kernels.py`, `records` in `rows.py`)::

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

import re
from typing import Optional

import msgspec
import numpy as np

from ...trace.kinds import LAUNCH_KINDS, Kind, LaneKind
from ...trace.model import TraceModel, freeze_arrays, stable_order, union, unique_first, unique_inverse
from ..core.frames import MODULE_PREFIX, innermost_frames
from ..core.op_forest import Forest, build_forest, innermost_at
from ..core.selectors import first_of_launch, op_rows
from ..graphs.attribution import GraphAttribution, attribute
from ..idle.launch_offsets import issuing_ops

Window = Optional[tuple[int, int]]




# Kernel-name signatures of Tensor Core (matrix unit) kernels, per era (see trace-format.md for the eras):
# Volta/Turing cuBLAS/cuDNN name the MMA shape (h884, s884, h1688, s1688, i8816, c1688), Ampere the 16x8x16
# one (16816), CUTLASS says `tensorop`, cuBLASLt/cuDNN's XMMA kernels `xmma`, Hopper `gmma`/`wgmma`
# (sm90_xmma_...), explicit `hmma`/`imma`/`mma_` instructions, and AMD Tensile `_MI<m>x<n>x<k>` (MFMA).
_TENSOR_CORE = re.compile(r"(?:884|1688|16816|8816|tensorop|xmma|gmma|hmma|imma|_mma_|mma_sync|_MI\d+x\d+x\d+)",
                          re.IGNORECASE)


def uses_tensor_cores(name: str) -> bool:
    """Whether a kernel name carries a Tensor Core (or AMD matrix core) signature."""
    return _TENSOR_CORE.search(name) is not None


class Groups(msgspec.Struct, frozen=True):
    """Members sorted by group, for per-group min/max with one `reduceat`."""

    order: np.ndarray  # int64 member positions sorted by group
    bounds: np.ndarray  # int64 start of each group in `order`

    @staticmethod
    def of(group: np.ndarray, n_groups: int) -> Groups:
        order = stable_order(group)
        if group.size and (int(group.min()) < 0 or int(group.max()) >= n_groups):
            return Groups(order, np.searchsorted(group[order], np.arange(n_groups)).astype(np.int64))
        bounds = np.zeros(n_groups, np.int64)
        np.cumsum(np.bincount(group, minlength=n_groups)[:-1], out=bounds[1:])
        return Groups(order, bounds)


class TableIndex(msgspec.Struct, frozen=True, eq=False, weakref=True):  # compared and hashed by identity: a cache key for its whole-trace tables
    """What every table of one model needs, computed once (O(events)); windows then cost O(ops + activities)."""

    act_rows: np.ndarray  # int64 GPU activity rows (kernel, memcpy, memset on GPU lanes), ascending
    act_start_ns: np.ndarray
    act_end_ns: np.ndarray
    act_name_ix: np.ndarray  # int32 into act_name_ids
    act_name_ids: np.ndarray  # int32 distinct activity names
    act_name_kind: np.ndarray  # int8 Kind of each activity name (its first activity's)
    act_first: np.ndarray  # bool: the first activity of its launch call (counts the launch once)
    act_linked: np.ndarray  # bool: its launch call is known (it may still run outside every op)
    act_groups: Groups
    tensor_core: np.ndarray  # bool per activity name
    act_values: np.ndarray  # float64 (len(ARG_FIELDS), activities): the model's gpu_arg_* columns per activity, 0 absent
    act_present: np.ndarray  # bool (len(ARG_FIELDS), activities): recorded
    ops: Forest
    op_groups: Groups
    modules: Forest
    module_groups: Groups
    graphs: Optional[GraphAttribution] = None  # graph-replayed kernels given to the ops that captured them, or None
    # op calls grouped by (name, a second key), made by `sub_groups` on first use (a report reads none of them):
    # "stack" (top user frame), "shape" (Input Dims), "module" (innermost nn.Module) -> SubGroups, or None
    sub: dict = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        freeze_arrays(self)

    def sub_groups(self, model: TraceModel, group: str) -> Optional[SubGroups]:
        """The op calls grouped by (name, `group`'s key: SUB_GROUPS), made once (None: the trace has no python
        frames, no op with shapes, or no modules); the model is the one indexed."""
        found = self.sub.get(group, _UNMADE)
        if found is _UNMADE:
            make = SUB_GROUP_MAKERS[group][1]
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
        values, present = _activity_args(model, act)
        graphs = attribute(model, act, model.ts_ns[act], model.end_ns[act], *launch_shapes(values, present), ops, modules)
        return TableIndex(act, model.ts_ns[act], model.end_ns[act], ix.astype(np.int32), ids.astype(np.int32),
                          kind_of.astype(np.int8), first_of_launch(model)[act], model.launch_idx[act] >= 0, Groups.of(ix, ids.size),
                          np.array([uses_tensor_cores(model.names[i]) for i in ids.tolist()], bool),
                          values, present, ops, Groups.of(ops.name_ix, ops.name_ids.size),
                          modules, Groups.of(modules.name_ix, modules.name_ids.size), graphs)


ARG_FIELDS = ("bytes", "grid", "block", "registers", "shared_mem", "blocks_per_sm", "occupancy")


_UNMADE = object()


def launch_shapes(values: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The activities' grid and block sizes from `TableIndex.act_values`/`act_present`, -1 where not recorded."""
    return tuple(np.where(present[k], values[k], -1.0) for k in (ARG_FIELDS.index("grid"), ARG_FIELDS.index("block")))


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


class SubGroups(msgspec.Struct, frozen=True):
    """Op calls grouped by (op name, a second key: the innermost user Python frame around the call, or the
    call's input shapes)."""

    group_ix: np.ndarray  # int32 per op position
    name_ids: np.ndarray  # int32 op name id per group
    sub_ids: np.ndarray  # int32 per group: frame name id (into model.names) or shape id (model.shape_strings); -1: none
    groups: Groups

    def __post_init__(self) -> None:
        freeze_arrays(self)


def _stack_groups(model: TraceModel, ops: Forest) -> Optional[SubGroups]:
    """Each op call's innermost user frame (`core/frames.py`) and the groups they make."""
    if ops.size == 0:
        return None
    frame = innermost_frames(model, ops, np.arange(ops.size))
    return None if frame is None else _sub_groups(ops, frame, len(model.names))


def _shape_groups(model: TraceModel, ops: Forest) -> Optional[SubGroups]:
    """Each op call's input shapes (`Input Dims`, `record_shapes=True`) and the groups they make, as
    torch.profiler's `key_averages(group_by_input_shape=True)` and torch-tb-profiler's "group by input shape"."""
    if not model.shape_strings or ops.size == 0:
        return None
    return _sub_groups(ops, model.shape_id[ops.rows], len(model.shape_strings))


def _module_groups(model: TraceModel, ops: Forest, modules: Forest) -> Optional[SubGroups]:
    """Each op call's innermost `nn.Module: ...` region (with_modules / with_stack) and the groups they make;
    ops outside every module (the backward pass runs on autograd's own thread) group under -1."""
    if modules.size == 0 or ops.size == 0:
        return None
    pos = innermost_at(model, modules, model.lane[ops.rows], ops.start_ns)
    module = np.where(pos >= 0, modules.name_ids[modules.name_ix[np.maximum(pos, 0)]], -1)
    return _sub_groups(ops, module, len(model.names))


def _sub_groups(ops: Forest, sub: np.ndarray, n_sub: int) -> SubGroups:
    """Groups of op calls by (name, `sub`: an id below `n_sub` per call, -1 for none)."""
    key = ops.name_ix.astype(np.int64) * (n_sub + 1) + (sub.astype(np.int64) + 1)
    keys, group_ix = unique_inverse(key)
    group_ix = group_ix.astype(np.int32)
    name_ids = ops.name_ids[keys // (n_sub + 1)]
    sub_ids = (keys % (n_sub + 1) - 1).astype(np.int32)
    return SubGroups(group_ix, name_ids.astype(np.int32), sub_ids, Groups.of(group_ix, keys.size))


def module_rows(model: TraceModel) -> np.ndarray:
    """Rows of `nn.Module: ...` python_function events on CPU lanes, ascending."""
    ids = model.name_ids_where(lambda n: n.startswith(MODULE_PREFIX))
    mask = model.name_in(ids) & (model.kind == Kind.PYTHON_FUNCTION) & model.on_lanes(LaneKind.CPU)
    return np.flatnonzero(mask)


def clip(start_ns: np.ndarray, end_ns: np.ndarray, window: Window) -> tuple[np.ndarray, np.ndarray]:
    """Which intervals count in the window, and each one's duration inside it (0 where it does not count)."""
    if window is None:
        return np.ones(start_ns.size, bool), end_ns - start_ns
    t0, t1 = int(window[0]), int(window[1])
    inside = (start_ns < t1) & ((end_ns > t0) | (start_ns >= t0))
    dur = np.minimum(end_ns, t1) - np.maximum(start_ns, t0)
    return inside, np.where(inside, np.maximum(dur, 0), 0)


def group_sum(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per-group sums of int64 values (float64 sums of integers are exact below 2^53 ns: 104 days)."""
    return np.bincount(groups, weights=values, minlength=n).astype(np.int64)


def group_extreme(groups: Groups, values: np.ndarray, mask: np.ndarray, largest: bool) -> np.ndarray:
    """Per-group max (or min) of the masked values; 0 for a group with none."""
    if groups.bounds.size == 0:
        return np.zeros(0, np.int64)
    fill = np.iinfo(np.int64).min if largest else np.iinfo(np.int64).max
    picked = np.where(mask, values, fill)[groups.order]
    reduce = np.maximum if largest else np.minimum
    out = reduce.reduceat(picked, groups.bounds) if picked.size else np.full(groups.bounds.size, fill)
    return np.where(out == fill, 0, out)


# The op table's groupings beyond the name: each one's column of its second key in the table, and its maker (run on
# first use: `TableIndex.sub_groups`).
SUB_GROUP_MAKERS = {
    "stack": ("frame_id", lambda model, index: _stack_groups(model, index.ops) or _replays_only(model, index, "stack")),
    "shape": ("shape_id", lambda model, index: _shape_groups(model, index.ops) or _replays_only(model, index, "shape")),
    "module": ("module_id", lambda model, index: _module_groups(model, index.ops, index.modules)
               or _replays_only(model, index, "module")),
}


def _replays_only(model: TraceModel, index: TableIndex, group: str) -> Optional[SubGroups]:
    """For a trace that records no second key of its own but replays graphs whose calls have one (the reference's
    modules, shapes, Python frames): every op call under -1, so the replayed calls' keys make the rows; else None."""
    graphs = index.graphs
    if graphs is None or not (graphs.call_sub(group) >= 0).any() or index.ops.size == 0:
        return None
    return _sub_groups(index.ops, np.full(index.ops.size, -1, np.int32), len(model.names))


SUB_GROUPS = tuple(SUB_GROUP_MAKERS)


OP_GROUPS = ("name", *SUB_GROUPS)
