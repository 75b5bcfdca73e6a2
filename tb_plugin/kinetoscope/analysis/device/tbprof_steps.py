"""Steps and step time as torch-tb-profiler's Overview measured them, beside Kinetoscope's own breakdown.

torch-tb-profiler (its `event_parser.StepParser` and `overall_parser.OverallParser`) differs from
`dataloader_stalls` on two counts, and users who come from it compare these figures with its own:

1. Its steps reach to the end of their GPU work. A host `ProfilerStep#N` owns every runtime call that lies
   wholly inside it; the step then ends at the later of its own end and the end of the last kernel, memcpy
   or memset those calls launched, and the next step starts where it ends. The first step starts no
   earlier than the end of the device work launched before every step. Trailing steps that launched
   nothing (or fewer than 80% of the activities of the step before: the profiler stopped while their
   kernels ran) are dropped. Without any ProfilerStep, one step spans the host ops.

        host   [ProfilerStep#1 ..........)[ProfilerStep#2 ...........)
        GPU          [k][k]  [k][k]  [k][k][k]   [k]      [k][k]  [k][k]
        steps  [1 ................................)[2 .......................)

2. Its step time is split into categories by priority: a moment of the step counts for the first of
   Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec that covers it (on any device or
   thread), else Other. Kernel is every kernel but the NCCL/Gloo collectives' kernels; Communication is
   those kernels and the `nccl:*`/`gloo:*` ops; Runtime the CUDA runtime calls (not driver calls);
   DataLoader the `enumerate(DataLoader)#...__next__` and `enumerate(DataPipe)#...` ops; CPU Exec every
   other op and user annotation but the ProfilerSteps. torch-tb-profiler also counted GPU-side user
   annotations as CPU Exec; they are device time, so here they count for nothing.
"""
from __future__ import annotations

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.kinds import ACTIVITY_KINDS, CPU_OP_KINDS, Kind, LaneKind
from ...trace.model import TraceModel, freeze_arrays, unique
from ..core.selectors import step_rows

# Category names, in torch-tb-profiler's priority order (its ProfileRole), and the raw names that decide them.
CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
COMM_OP_NAMES = frozenset(f"{lib}:{op}" for lib in ("nccl", "gloo")
                          for op in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter"))
STEP_PREFIX = "ProfilerStep#"
DATALOADER_PREFIX, DATALOADER_SUFFIX, DATAPIPE_PREFIX = "enumerate(DataLoader)#", ".__next__", "enumerate(DataPipe)#"
TAIL_KEEP_RATIO = 0.8  # a last step with under 80% of the activities of the one before lost kernels to the stop


class TbprofSteps(msgspec.Struct, frozen=True):
    """torch-tb-profiler's steps (after extension to their device work) and their time per category (ns)."""

    name_id: np.ndarray  # int32 the host step's name id, -1 for the one whole-trace step of a trace without steps
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    category_ns: np.ndarray  # int64 (len(CATEGORIES), steps): time of each step in each category

    def __post_init__(self) -> None:
        freeze_arrays(self)

    @property
    def count(self) -> int:
        return int(self.start_ns.size)

    def average_ns(self) -> dict[str, float]:
        """Mean time per step in each category, and `total`: the mean step time (0 without steps)."""
        if not self.count:
            return {**{c: 0.0 for c in CATEGORIES}, "total": 0.0}
        means = self.category_ns.mean(axis=1).tolist()
        return {**dict(zip(CATEGORIES, means)), "total": float(np.mean(self.end_ns - self.start_ns))}


def tbprof_steps(model: TraceModel) -> TbprofSteps:
    """torch-tb-profiler's steps of a trace and their time per category (see the module docstring)."""
    name_id, start, end = _host_steps(model)
    if start.size:
        start, end, keep = _device_extended(model, start, end)
        name_id = name_id[:keep]
    return TbprofSteps(name_id.astype(np.int32), start, end, _category_ns(model, start, end))


def _host_steps(model: TraceModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ProfilerStep rows (name ids, starts, ends); without any, one step over every host op (operators only:
    torch-tb-profiler left user annotations out of the host span)."""
    rows = step_rows(model)
    if rows.size:
        return model.name_id[rows], model.ts_ns[rows], model.end_ns[rows]
    ops = np.flatnonzero((model.kind == Kind.CPU_OP) & model.on_lanes(LaneKind.CPU))
    if ops.size == 0:
        return np.zeros(0, np.int32), intervals.EMPTY, intervals.EMPTY
    return np.full(1, -1, np.int32), model.ts_ns[ops].min(keepdims=True), model.end_ns[ops].max(keepdims=True)


def _device_extended(model: TraceModel, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Steps extended to the device work their runtime calls launched; trailing steps without it dropped.

    Returns:
        (starts, ends, how many leading steps are kept).
    """
    acts = np.flatnonzero(model.kind_in(ACTIVITY_KINDS))
    call = model.launch_idx[acts]
    linked = call >= 0
    linked[linked] = model.kind[call[linked]] == Kind.RUNTIME
    step = np.full(acts.size, -1, np.int64)
    k = np.searchsorted(start, model.ts_ns[call[linked]], side="right") - 1
    inside = (k >= 0) & (model.end_ns[call[linked]] <= end[np.maximum(k, 0)])
    step[np.flatnonzero(linked)[inside]] = k[inside]
    matched = step >= 0
    if not matched.any():  # no step launched device work: the host steps stand
        return start, end, int(start.size)
    n = start.size
    count = np.bincount(step[matched], minlength=n)
    dev_min = np.full(n, np.iinfo(np.int64).max)
    dev_max = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(dev_min, step[matched], model.ts_ns[acts[matched]])
    np.maximum.at(dev_max, step[matched], model.end_ns[acts[matched]])
    first = int(start[0])
    if count[0]:  # work launched before the steps and finished before step 0's first activity pushes step 0's start
        early = model.end_ns[acts[~matched]]
        early = early[early < dev_min[0]]
        first = max(first, int(early.max())) if early.size else first
    reach = np.maximum(end, np.where(count > 0, dev_max, end))
    new_end = np.maximum.accumulate(np.maximum(reach, first))
    new_start = np.maximum(start, np.concatenate(([first], new_end[:-1])))
    keep = n
    if n > 1:
        last = int(np.flatnonzero(count)[-1])
        keep = last + 1
        if last > 0 and count[last - 1] * TAIL_KEEP_RATIO > count[last]:
            keep = last
    return new_start[:keep], new_end[:keep], keep


def _category_ns(model: TraceModel, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Time of each step in each category, each moment counted once, for the first category covering it."""
    out = np.zeros((len(CATEGORIES), start.size), np.int64)
    if start.size == 0:
        return out
    # per category: its time not already taken by a category before it, counted inside each step's own window
    # (`covered` clips to it): what the union of the categories so far covers, less what it covered before this one
    # (|(T u C) n W| - |T n W| = |(C - T) n W|, exactly: no subtraction of unions). Other is the rest of each step.
    taken_s, taken_e = np.zeros(0, np.int64), np.zeros(0, np.int64)
    before = np.zeros(start.size, np.int64)
    for c, (s, e) in enumerate(_category_unions(model)):
        if s.size:
            taken_s, taken_e = intervals.union(np.concatenate((taken_s, s)), np.concatenate((taken_e, e)))
            now = intervals.covered(taken_s, taken_e, start, end)
            out[c], before = now - before, now
    out[-1] = (end - start) - out[:-1].sum(axis=0)
    return out


def _category_unions(model: TraceModel) -> list[tuple[np.ndarray, np.ndarray]]:
    """The union of each category but Other, in priority order."""
    is_comm_op = model.name_in(model.name_ids_where(lambda n: n in COMM_OP_NAMES))
    is_step = model.name_in(model.name_ids_where(lambda n: n.startswith(STEP_PREFIX)))
    is_loader = model.name_in(model.name_ids_where(
        lambda n: (n.startswith(DATALOADER_PREFIX) and n.endswith(DATALOADER_SUFFIX)) or n.startswith(DATAPIPE_PREFIX)))
    op = model.kind_in(CPU_OP_KINDS)
    kernel = model.kind == Kind.KERNEL
    comm_ids = unique(model.external_id[op & is_comm_op])
    comm_ids = comm_ids[comm_ids >= 0]
    comm_kernel = kernel & np.isin(model.external_id, comm_ids) if comm_ids.size else np.zeros_like(kernel)
    masks = (kernel & ~comm_kernel, model.kind == Kind.MEMCPY, model.kind == Kind.MEMSET,
             comm_kernel | (op & is_comm_op & ~is_loader & ~is_step), model.kind == Kind.RUNTIME, op & is_loader,
             op & ~is_loader & ~is_step & ~is_comm_op)
    code = np.full(model.n_events, -1, np.int8)  # the masks are disjoint: each row's category, if any
    for c, mask in enumerate(masks):
        code[mask] = c
    return intervals.coded_unions(model.ts_ns, model.end_ns, code, model.lane_ptr, len(masks))


MAX_STEP_ROWS = 1000  # steps listed in the report (as `report.MAX_STEP_ROWS`); the average covers them all


def tbprof_steps_entry(model: TraceModel, steps: TbprofSteps, limit: int = MAX_STEP_ROWS) -> dict:
    """The report's `tbprof_steps`: the first `limit` steps as columns (`name`, `start_us` from the trace start,
    `dur_us`, `<category>_us`), the average step (`average_us`, with `total`) and each category's share of it
    (`average_pct`), as torch-tb-profiler's Overview showed them. Columns, not rows: the summary stays small
    with a thousand steps."""
    t0 = model.start_ns
    columns = {"name": ["0" if i < 0 else model.shown_names[i] for i in steps.name_id[:limit].tolist()],
               "start_us": ((steps.start_ns[:limit] - t0) / 1e3).tolist(),
               "dur_us": ((steps.end_ns[:limit] - steps.start_ns[:limit]) / 1e3).tolist(),
               **{f"{c}_us": (steps.category_ns[j, :limit] / 1e3).tolist() for j, c in enumerate(CATEGORIES)}}
    average = steps.average_ns()
    total = average["total"]
    return {"count": steps.count, "categories": list(CATEGORIES), "steps": columns,
            "average_us": {k: v / 1e3 for k, v in average.items()},
            "average_pct": {c: (100.0 * average[c] / total if total > 0 else 0.0) for c in CATEGORIES}}
