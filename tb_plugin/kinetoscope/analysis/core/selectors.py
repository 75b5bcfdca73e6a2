"""Row selections several analyses share: GPU activities per device, steps, DataLoader waits, CPU ops.

Everything here is a pure function of the model returning index or interval arrays. Those of the model alone that
several analyses ask for (`per_model`) are computed once per model and shared read-only: at 10^7 events each is a
pass or two over every row, and a report asked for them 2-4 times each (0.3 s of CPU in all at 4 GB).
"""
from __future__ import annotations

from functools import wraps
from typing import Callable, TypeVar

import numpy as np

from ...trace import intervals
from ...trace.intervals import nesting_depth
from ...trace.kinds import (
    CAPTURE_BEGIN_RE,
    CAPTURE_END_RE,
    CPU_OP_KINDS,
    GRAPH_LAUNCH_CALLS,
    ITERATION_ANNOTATION_RE,
    LAUNCH_CALLS,
    LAUNCH_KINDS,
    LEGACY_OP_CATEGORY,
    STEP_RE,
    SYNC_CALLS,
    Kind,
    LaneKind,
    is_annotation_name,
    is_collective_name,
    is_comm_kernel_name,
    is_dataloader_name,
)
from ...trace.model import TraceModel, unique
from .nesting import NestedIndex, parents_by_depth

NO_OP = "(no op)"

_Selection = TypeVar("_Selection")


def per_model(select: Callable[[TraceModel], _Selection]) -> Callable[[TraceModel], _Selection]:
    """`select(model)` made once per model and shared (`TraceModel.shared`): read-only arrays, or tuples of them."""
    key = ("selection", select.__module__, select.__qualname__)

    @wraps(select)
    def shared(model: TraceModel) -> _Selection:
        return model.shared(key, lambda: select(model))
    return shared


def activity_rows_by_device(model: TraceModel) -> dict[int, np.ndarray]:
    """Rows of GPU activities (kernel, memcpy, memset) per device, each sorted by (ts, row)."""
    rows = np.flatnonzero(model.activity_mask() & model.on_lanes(LaneKind.GPU))
    device = model.device_of_row()[rows]
    result = {}
    for dev in unique(device):
        sel = rows[device == dev]
        result[int(dev)] = sel[np.argsort(model.ts_ns[sel], kind="stable")]
    return result


def cpu_rows(model: TraceModel) -> np.ndarray:
    """Rows of events on CPU-thread lanes."""
    return model.rows_on(LaneKind.CPU)


@per_model
def step_rows(model: TraceModel) -> np.ndarray:
    """`ProfilerStep#N` rows on CPU lanes, sorted by start.

    Steps are occurrences, not names: a trace that repeats `ProfilerStep#3` (two profilers, a restarted
    loop) has every occurrence as a step of its own.
    """
    ids = model.name_ids_where(lambda n: STEP_RE.match(n) is not None)
    rows = cpu_rows(model)
    rows = rows[model.name_in(ids, rows) & model.kind_in(CPU_OP_KINDS, rows)]
    return rows[np.argsort(model.ts_ns[rows], kind="stable")]


@per_model
def iteration_rows(model: TraceModel) -> np.ndarray:
    """The steps the verdict judges: `ProfilerStep#N` rows, or, in a trace without any, the outermost
    iteration annotations of a serving framework (`execute_...`, `step[...]`: see ITERATION_ANNOTATION_RE),
    sorted by start. Inference profiles have one such iteration or none; empty when there are neither."""
    steps = step_rows(model)
    if steps.size:
        return steps
    ids = model.name_ids_where(lambda n: ITERATION_ANNOTATION_RE.match(n) is not None)
    rows = cpu_rows(model)
    rows = rows[model.name_in(ids, rows) & (model.kind[rows] == Kind.USER_ANNOTATION)]
    rows = rows[np.lexsort((-model.dur_ns[rows], model.ts_ns[rows]))]
    if rows.size < 2:
        return rows
    reach = np.maximum.accumulate(model.end_ns[rows])  # an iteration inside an earlier one is part of it
    outer = np.ones(rows.size, bool)
    outer[1:] = model.end_ns[rows[1:]] > reach[:-1]
    return rows[outer]


@per_model
def capture_spans(model: TraceModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lane, start, end) of every CUDA/HIP stream capture: a `...StreamBeginCapture` call to the next
    `...StreamEndCapture` call on the same thread (an unfinished capture runs to the end of the trace)."""
    begin_ids = model.name_ids_where(lambda n: CAPTURE_BEGIN_RE.match(n) is not None)
    end_ids = model.name_ids_where(lambda n: CAPTURE_END_RE.match(n) is not None)
    calls = model.kind_in(LAUNCH_KINDS)
    begins, ends = np.flatnonzero(model.name_in(begin_ids) & calls), np.flatnonzero(model.name_in(end_ids) & calls)
    lane, start, stop = model.lane[begins], model.ts_ns[begins], np.full(begins.size, model.stop_ns, np.int64)
    for one in unique(lane).tolist():  # rows are in (lane, ts) order: per lane, the first end after each begin
        sel, closing = np.flatnonzero(lane == one), ends[model.lane[ends] == one]
        after = np.searchsorted(model.ts_ns[closing], start[sel], side="right")
        found = after < closing.size
        stop[sel[found]] = model.end_ns[closing[after[found]]]
    return lane, start, stop


def captured_launch_mask(model: TraceModel, rows: np.ndarray) -> np.ndarray:
    """Which launch-call rows were recorded into a graph by a stream capture on their thread (they own no
    device activity: the graph's replay does)."""
    lane, start, stop = capture_spans(model)
    captured = np.zeros(rows.size, bool)
    for one, s, e in zip(lane.tolist(), start.tolist(), stop.tolist()):
        captured |= (model.lane[rows] == one) & (model.ts_ns[rows] >= s) & (model.ts_ns[rows] < e)
    return captured


def covering_frame(model: TraceModel, lane: int, start_ns: int, end_ns: int) -> int:
    """The innermost Python frame (`python_function`, recorded with `with_stack=True`) on `lane` that covers
    at least half of [start_ns, end_ns), or -1: what host code held the thread when no CPU op ran (image
    preprocessing in PIL and numpy calls no ATen op)."""
    lo, hi = int(model.lane_ptr[lane]), int(model.lane_ptr[lane + 1])
    rows = np.arange(lo, hi)
    rows = rows[model.kind[rows] == Kind.PYTHON_FUNCTION]
    if not rows.size:
        return -1
    overlap = np.minimum(model.end_ns[rows], end_ns) - np.maximum(model.ts_ns[rows], start_ns)
    rows = rows[overlap * 2 >= end_ns - start_ns]
    return int(rows[np.argmax(model.depth[rows])]) if rows.size else -1


@per_model
def launch_call_rows(model: TraceModel) -> np.ndarray:
    """Every call that sends work to a device (LAUNCH_CALLS on runtime or driver rows)."""
    ids = model.name_ids_where(lambda n: n in LAUNCH_CALLS)
    return np.flatnonzero(model.name_in(ids) & model.kind_in(LAUNCH_KINDS))


@per_model
def dataloader_union(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """Union of the DataLoader wait intervals (`enumerate(DataLoader)#...__next__` on CPU lanes)."""
    ids = model.name_ids_where(is_dataloader_name)
    rows = cpu_rows(model)
    rows = rows[model.name_in(ids, rows)]
    return intervals.union(model.ts_ns[rows], model.end_ns[rows])


@per_model
def collective_union(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """Union of the CPU-side collectives (`record_param_comms`, `nccl:*`, `gloo:*`, `c10d::*`) on CPU lanes."""
    ids = model.name_ids_where(is_collective_name)
    rows = cpu_rows(model)
    rows = rows[model.name_in(ids, rows) & model.kind_in(CPU_OP_KINDS, rows)]
    return intervals.union(model.ts_ns[rows], model.end_ns[rows])


@per_model
def cpu_compute_union(model: TraceModel) -> tuple[np.ndarray, np.ndarray]:
    """Union of the CPU's own work: operators on CPU lanes that are no collective, step, DataLoader wait or
    region annotation (2021 files write annotations as operators; their names tell them apart).

    A collective that runs while this union covers it is hidden behind the host's work (DDP's gloo
    all-reduce on its own thread during backward); the rest of it is time the host only waited.
    """
    def not_work(name: str) -> bool:
        return is_collective_name(name) or is_dataloader_name(name) or STEP_RE.match(name) is not None

    rows = cpu_rows(model)
    rows = rows[(model.kind[rows] == Kind.CPU_OP) & ~model.name_in(model.name_ids_where(not_work), rows)]
    rows = rows[~legacy_annotation_mask(model, rows)]
    return intervals.union(model.ts_ns[rows], model.end_ns[rows])


def legacy_annotation_mask(model: TraceModel, rows: np.ndarray) -> np.ndarray:
    """Which of `rows` are region annotations that 2021 files write as operators (category `Operator`, a
    name that labels a region, `kinds.is_annotation_name`; collectives are operators)."""
    legacy = np.array([c == LEGACY_OP_CATEGORY for c in model.cats], bool)
    ids = model.name_ids_where(lambda n: is_annotation_name(n) and not is_collective_name(n))
    return legacy[model.cat_id[rows]] & model.name_in(ids, rows)


def comm_mask(model: TraceModel, rows: np.ndarray) -> np.ndarray:
    """Which of `rows` are communication kernels (NCCL/RCCL, every naming era)."""
    ids = model.name_ids_where(is_comm_kernel_name)
    return (model.kind[rows] == Kind.KERNEL) & model.name_in(ids, rows)


@per_model
def sync_rows(model: TraceModel) -> np.ndarray:
    """Host-blocking synchronization calls (cudaDeviceSynchronize, synchronous cudaMemcpy, ...); never polls."""
    ids = model.name_ids_where(lambda n: n in SYNC_CALLS)
    return np.flatnonzero(model.name_in(ids) & model.kind_in((Kind.RUNTIME, Kind.DRIVER)))


def graph_launch_mask(model: TraceModel, launch: np.ndarray) -> np.ndarray:
    """Which launch rows (-1 allowed: False) are graph launches (`cudaGraphLaunch` and its twins)."""
    ids = model.name_ids_where(lambda n: n in GRAPH_LAUNCH_CALLS)
    return (launch >= 0) & model.name_in(ids, np.maximum(launch, 0))


@per_model
def first_of_launch(model: TraceModel) -> np.ndarray:
    """Per row, True for the first GPU activity of its launch call (every activity without a launch too).

    A graph launch owns all the nodes it replays; only its first node marks when the launch reached
    the device. The others start when the graph's own dependencies let them.
    """
    first = np.ones(model.n_events, bool)
    acts = np.flatnonzero(model.activity_mask() & (model.launch_idx >= 0))
    if acts.size:
        order = acts[np.lexsort((model.ts_ns[acts], model.launch_idx[acts]))]
        launch = model.launch_idx[order]
        first[order[1:]] = launch[1:] != launch[:-1]
    return first


def op_rows(model: TraceModel) -> np.ndarray:
    """CPU ops (not annotations, not ProfilerStep) of every lane, ascending: the ops of `OpIndex`, without its index."""
    ops = _ops_and_annotations(model)
    return ops[~_annotation_mask(model, ops)]


@per_model
def _ops_and_annotations(model: TraceModel) -> np.ndarray:
    """CPU ops and annotations, not ProfilerStep, of every lane, ascending."""
    step_ids = model.name_ids_where(lambda n: STEP_RE.match(n) is not None)
    ops = cpu_rows(model)
    return ops[model.kind_in(CPU_OP_KINDS, ops) & ~model.name_in(step_ids, ops)]


def _annotation_mask(model: TraceModel, ops: np.ndarray) -> np.ndarray:
    """Which of `ops` are annotations (`user_annotation`, or a 2021 file's region written as an operator)."""
    return (model.kind[ops] == Kind.USER_ANNOTATION) | legacy_annotation_mask(model, ops)


FEW_QUERIES = 16  # up to this many outermost-op queries on a lane scan it instead of indexing its nesting


class OpIndex:
    """Per CPU lane, its ops and annotations (not ProfilerStep) for enclosing-op lookups.

    Ops are `cpu_op`s (aten::, c10d::, autograd ...); annotations are `user_annotation`s
    (`record_function` labels such as `## forward ##`, `Optimizer.step#...`). 2021 files write both as
    `Operator`; there the name tells them apart (operators are namespaced with `::`).
    """

    def __init__(self, model: TraceModel) -> None:
        self._model = model
        ops = _ops_and_annotations(model)
        lanes = model.lane[ops]  # rows are in the model's (lane, ts, -dur) order: each lane is one slice
        cuts = np.flatnonzero(np.diff(lanes)) + 1
        annotation = _annotation_mask(model, ops)
        self._annotations = int(np.count_nonzero(annotation))
        self._rows: dict[int, np.ndarray] = {}
        self._is_annotation: dict[int, np.ndarray] = {}  # per lane, by row
        for rows, is_annotation in zip(np.split(ops, cuts), np.split(annotation, cuts)) if ops.size else ():
            lane = int(model.lane[rows[0]])
            self._rows[lane], self._is_annotation[lane] = rows, is_annotation
        self._depth: dict[int, np.ndarray] = {}
        self._nested: dict[tuple[int, bool], tuple[np.ndarray, NestedIndex]] = {}

    @property
    def op_count(self) -> int:
        """CPU ops (not annotations, not ProfilerStep) on every lane."""
        return sum(int(rows.size) for rows in self._rows.values()) - self._annotations

    @property
    def lanes(self) -> list[int]:
        """CPU lanes with ops or annotations."""
        return sorted(self._rows)

    def outermost_at(self, lane: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
        """Row of the outermost op running on `lane[i]` at `t_ns[i]`, or -1."""
        lane = np.asarray(lane)
        t_ns = np.asarray(t_ns, np.int64)
        result = np.full(lane.size, -1, np.int64)
        for lane_id in unique(lane).tolist():
            rows = self._rows.get(lane_id)
            if rows is None:
                continue
            sel = np.flatnonzero(lane == lane_id)
            if lane_id not in self._depth and sel.size <= FEW_QUERIES:  # a scan beats indexing the whole lane
                result[sel] = [self._outermost_scan(rows, t) for t in t_ns[sel].tolist()]
                continue
            if lane_id not in self._depth:
                self._depth[lane_id] = nesting_depth(self._model.ts_ns[rows], self._model.dur_ns[rows], np.array([0, rows.size]))
            hit = intervals.enclosing_top(self._model.ts_ns[rows], self._model.end_ns[rows], self._depth[lane_id], t_ns[sel])
            result[sel] = np.where(hit >= 0, rows[np.maximum(hit, 0)], -1)
        return result

    def _outermost_scan(self, rows: np.ndarray, t_ns: int) -> int:
        """The first op in (start, -length) order that contains t: the outermost (one query, O(ops))."""
        started = rows[:np.searchsorted(self._model.ts_ns[rows], t_ns, side="right")]
        running = np.flatnonzero(self._model.end_ns[started] > t_ns)
        return int(started[running[0]]) if running.size else -1

    def culprit_at(self, lane: np.ndarray, t_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What `lane[i]` was doing at `t_ns[i]`, for naming the CPU work behind a gap.

        Returns:
            (op, annotation, after): the innermost op running then (or, when none runs, the op that
            ended last before; `after` is True there), and the innermost annotation around that
            moment (-1 when none).
        """
        lane, t_ns = np.asarray(lane), np.asarray(t_ns, np.int64)
        op, ann, after = (np.full(lane.size, -1, np.int64), np.full(lane.size, -1, np.int64), np.zeros(lane.size, bool))
        for lane_id in unique(lane):
            sel = np.flatnonzero(lane == lane_id)
            rows, index = self.nested(int(lane_id), annotation=False)
            if rows.size:
                hit = index.innermost_at(t_ns[sel])
                before = index.last_ended_before(t_ns[sel])
                after[sel] = (hit < 0) & (before >= 0)
                op[sel] = np.where(hit >= 0, rows[np.maximum(hit, 0)], np.where(before >= 0, rows[np.maximum(before, 0)], -1))
            rows, index = self.nested(int(lane_id), annotation=True)
            if rows.size:
                hit = index.innermost_at(t_ns[sel])
                ann[sel] = np.where(hit >= 0, rows[np.maximum(hit, 0)], -1)
        return op, ann, after

    def nested(self, lane: int, annotation: bool) -> tuple[np.ndarray, NestedIndex]:
        """The ops (or annotations) of one lane as rows and their NestedIndex (built once, then cached)."""
        key = (lane, annotation)
        if key not in self._nested:
            rows = self._rows.get(lane, np.zeros(0, np.int64))
            rows = rows[self._is_annotation.get(lane, np.zeros(0, bool)) == annotation]
            self._nested[key] = (rows, NestedIndex(self._model.ts_ns[rows], self._model.end_ns[rows]))
        return self._nested[key]


def parent_rows(model: TraceModel) -> np.ndarray:
    """Row of each event's enclosing parent on its lane (the last earlier row one level up), or -1.

    `nesting.parents_by_depth` over the whole model (lanes are contiguous runs of rows), less the parents it finds
    on an earlier lane; exact for properly nested lanes, the nearest open ancestor where events overlap partially.
    """
    parent = parents_by_depth(model.depth)
    linked = np.flatnonzero(parent >= 0)
    parent[linked[model.lane[parent[linked]] != model.lane[linked]]] = -1
    return parent


def enclosing_of_kind(model: TraceModel, rows: np.ndarray, kinds: tuple, parent: np.ndarray) -> np.ndarray:
    """For each row, the innermost ancestor whose kind is in `kinds` (-1 when none)."""
    wanted = model.kind_in(kinds)
    current = parent[rows]
    result = np.full(rows.size, -1, np.int64)
    pending = np.arange(rows.size)
    while pending.size:
        cur = current[pending]
        alive = cur >= 0
        pending, cur = pending[alive], cur[alive]
        found = wanted[cur]
        result[pending[found]] = cur[found]
        pending, cur = pending[~found], cur[~found]
        current[pending] = parent[cur]
    return result


def names_of(model: TraceModel, rows: np.ndarray) -> list[str]:
    """Event names of rows, with `(no op)` for -1."""
    return [model.shown_names[model.name_id[r]] if r >= 0 else NO_OP for r in rows.tolist()]
