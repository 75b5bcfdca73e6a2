"""What-if replay: re-time a trace's steps after an edit, from the trace's own dependencies.

The replay keeps what the trace recorded and moves only what an edit changes, honouring three kinds of
dependency:

- **host order**: the main thread (the one that holds the steps) runs its events in recorded order. An edit that
  removes or shortens host time (a DataLoader wait, an op's host time, a sync) moves every later host event
  earlier by what it removed: a monotone warp of host time. Other threads move with the main thread;
- **launch -> device**: a GPU activity starts no earlier than its launch call plus its launch latency. An
  activity that was queued when it was launched (the stream's previous activity was still running) waited for
  its stream; one that was not waited only for its launch, and keeps its recorded latency;
- **stream order**: an activity starts no earlier than the previous one on its stream has ended, plus the gap
  recorded between them (a CUDA-graph node's dependency bubble, a cross-stream wait that the trace does not
  name);
- **blocking syncs on the main thread** (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, synchronous copies):
  a sync that waited for the device ends when the work it waited for ends (plus the recorded return latency);
  one that did not wait keeps its own recorded length. The work a sync waited for is what was launched before
  it began and ended before it returned: a stream sync does not wait for the other streams.

On a stream, each activity's end is `e[k] = max(a[k], e[k-1] + B[k]) + d[k]` (a: launch time plus latency,
B: the recorded gap, d: the duration). With `c = cumsum(B + d)` this is `e[k] = c[k] + max(e[0], max over
j <= k of (a[j] + d[j] - c[j]))`: one running maximum per stream, computed between consecutive syncs.

With no edit the replay gives back every recorded time exactly: the latencies and gaps are read from the trace
so that each recorded start is the later of its two constraints. The figures an edit gives are estimates: the
replay does not know of contention between streams on one GPU, clock and power effects, kernels that get
faster or slower when the work around them moves, a CPU that other processes (DataLoader workers) slow down,
or cross-stream event waits, which it keeps as recorded gaps.

A step is done when the host has ended it and the device has run the work launched inside it; its time in
the replay runs from the previous step's done point to its own (the first from its start, or from the end of
the device's backlog then), so the steps add up to the whole run. Where the device runs behind the host
(the launch queue grows through the window) this is the device's pace, not the host's: the host cannot run
ahead for long (the launch queue and the caching allocator stop it).

Edits, as the CLI and the routes spell them:

    dataloader=0            remove every DataLoader wait
    dataloader-workers=K    each step's DataLoader wait becomes max(0, wait / K - the step's time without it):
                            K workers load batches in parallel, overlapped with the previous step
    sync:NAME=0             remove the syncs made by the call NAME or inside an op NAME (`sync:aten::item=0`)
    sync:NAME*F             shorten those syncs' waits to a fraction F
    host:NAME*F             scale the host time of the ops (or annotation regions) named NAME by F
    kernel:PATTERN*F        scale the device time of kernels named PATTERN, whose name contains it, or that match
                            it as a glob (with * ? or [)
    kernel:in:OP*F          scale the device time of the kernels launched inside an op or region named OP, or
                            any of OP1|OP2|... (once per kernel however many of these ops nest around its launch)
    fuse:NAME               the kernels launched inside each occurrence of the op or region NAME become one kernel
                            per stream, as long as all of them; the other launch calls cost no host time
    comm=hidden             communication hidden under compute: communication kernels keep their length on their
                            own streams, but no other stream, sync or step end waits for them any more, and
                            the host stops waiting in CPU collectives
    warmup=median           the first step as fast as the median of the others: its host time and the device
                            time of the work launched inside it scaled by median / first (one-time costs gone)
    straggler=median        a multi-rank run's stragglers as fast as its median rank (analysis/distributed/straggler.py)
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ...trace import intervals
from ...trace.kinds import Kind, LaneKind, is_collective_name
from ...trace.model import TraceModel, unique, unique_inverse
from ..core.selectors import comm_mask, cpu_compute_union, cpu_rows, dataloader_union, iteration_rows, launch_call_rows, sync_rows
from .edits import MAX_EDITS, MAX_FACTOR, MAX_NAME, NO_STEPS, OP_SEP, SPELLINGS, STRAGGLER, WARMUP, Edit, EditError, parse_edit  # noqa: F401

try:
    from . import _replay as _accel
except ImportError:  # built without a C compiler: the numpy pass
    _accel = None
ACCELERATED = _accel is not None

DEVICE_BEHIND = 1.05  # replayed / recorded median step above which the device runs behind the host


@dataclass(frozen=True)
class WhatIf:
    """Per step (in time order): the recorded time, the replay's step time without and with the edits, and the
    predicted time: the recorded one less what the edits saved in the replay (ns)."""

    step_names: tuple[str, ...]
    recorded_ns: np.ndarray  # the step's recorded length (ProfilerStep start to end, as `steps` gives it)
    replayed_ns: np.ndarray  # the unedited replay's step time (host time or device period, the later)
    edited_ns: np.ndarray  # the same with the edits applied
    edited_host_ns: np.ndarray  # the edited replay's host time per step (ProfilerStep start to end)
    edits: tuple[str, ...]
    matched: dict[str, int] = field(default_factory=dict)  # edit -> how many events it changed

    @property
    def device_behind(self) -> bool:
        """The device runs behind the host: the replay's median step is over DEVICE_BEHIND times the recorded one
        (the launch queue grows through the window; the recorded host steps are not the run's pace)."""
        return bool(self.recorded_ns.size) and self.median_replayed_ns > DEVICE_BEHIND * self.median_recorded_ns

    @property
    def base_ns(self) -> float:
        """The median step savings are shares of: the recorded one, or the replay's where the device runs behind."""
        return self.median_replayed_ns if self.device_behind else self.median_recorded_ns

    @property
    def predicted_ns(self) -> np.ndarray:
        """Each step as the edits would make it: the recorded step less what the edits save in the replay, never
        less than the host's own edited time (with no edit, exactly the recorded step). Where the device runs
        behind the host, the recorded host steps are not the run's pace: `saving_ns` (the replay's) says more."""
        return np.maximum(self.recorded_ns - (self.replayed_ns - self.edited_ns), self.edited_host_ns)

    @property
    def median_recorded_ns(self) -> float:
        return float(np.median(self.recorded_ns)) if self.recorded_ns.size else math.nan

    @property
    def median_replayed_ns(self) -> float:
        return float(np.median(self.replayed_ns)) if self.replayed_ns.size else math.nan

    @property
    def median_predicted_ns(self) -> float:
        return float(np.median(self.predicted_ns)) if self.predicted_ns.size else math.nan

    @property
    def saving_ns(self) -> float:
        """The time saved per step, the mean over the steps, in the replay: removing a wait can move work from one
        step into the next, so a median can rise while the whole run gets shorter."""
        return float((self.replayed_ns - self.edited_ns).mean()) if self.replayed_ns.size else math.nan


class Replayer:
    """One trace, ready to replay under any edits: the dependencies are read once, the unedited replay run once."""

    def __init__(self, model: TraceModel) -> None:
        self.ctx = _Context.of(model)
        self.base = _replay(self.ctx, _Plan())[0]

    def apply(self, edits: tuple[Edit, ...] = ()) -> WhatIf:
        """The steps re-timed with `edits` (see `whatif`)."""
        if len(edits) > MAX_EDITS:
            raise EditError(f"at most {MAX_EDITS} edits at once")
        if any(e.kind == "straggler" for e in edits):
            raise EditError(f"{STRAGGLER} re-times a multi-rank run (its folder), not one trace")
        ctx, matched = self.ctx, {}
        plan = _plan(ctx, edits, matched)
        workers = [e for e in edits if e.kind == "dataloader-workers"]
        if workers:
            plan = _with_workers(ctx, plan, int(workers[-1].factor), matched, workers[-1].text)
        edited, edited_host, _ = _replay(ctx, plan)
        names = tuple(ctx.model.shown_names[i] for i in ctx.model.name_id[ctx.steps])
        return WhatIf(names, (ctx.step_end - ctx.step_start).astype(np.int64), self.base, edited, edited_host,
                      tuple(e.text for e in edits), matched)


def whatif(model: TraceModel, edits: tuple[Edit, ...] = ()) -> WhatIf:
    """Re-times the steps of `model` with `edits` applied (module docstring). A trace without steps gives
    empty arrays (`whatif_entry` says why).

    Raises:
        EditError: more than MAX_EDITS edits are given.
    """
    return Replayer(model).apply(edits)


def replayed_ends(model: TraceModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The unedited replay against the trace: (activity rows, recorded ends, replayed ends), ns from the trace
    start. They are equal: the replay's latencies, gaps and sync tails are read so that it gives back every
    recorded time (tests check it on every shared trace)."""
    ctx = _Context.of(model)
    _, _, end = _replay(ctx, _Plan())
    return ctx.acts, ctx.start + ctx.dur, end


@dataclass
class _Plan:
    """What the edits change: host intervals with their new share of length, a per-activity duration scale,
    and per-sync factors on the waits."""

    cut_start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cut_end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cut_factor: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dur_scale: Optional[np.ndarray] = None  # per activity (ctx order)
    sync_factor: Optional[np.ndarray] = None  # per main-thread sync
    fused_into: Optional[np.ndarray] = None  # per activity: the activity it is fused into (itself: the fused kernel), -1
    gap_i: Optional[np.ndarray] = None  # per activity: its stream gap, where an edit changes it (comm=hidden)
    latency_i: Optional[np.ndarray] = None  # per activity: its launch latency, where an edit changes it
    unawaited: Optional[np.ndarray] = None  # per activity: no sync and no step end waits for it (comm=hidden)


@dataclass(frozen=True)
class _Context:
    """The trace's timeline relative to its start (float64 ns, exact at these sizes)."""

    model: TraceModel
    steps: np.ndarray
    step_start: np.ndarray
    step_end: np.ndarray
    acts: np.ndarray  # GPU activities, by (lane, start)
    lane: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    host: np.ndarray  # when each activity's launch call began (its own start when it has none)
    linked: np.ndarray
    queued: np.ndarray  # bool: launched while its stream was busy (its start waited for the stream, not the launch)
    segment: np.ndarray  # how many main-thread syncs began before the launch
    joins: np.ndarray  # the first sync that may wait for the activity (syncs.size: none)
    syncs: np.ndarray  # main-thread sync rows, by start
    sync_start: np.ndarray
    sync_end: np.ndarray
    sync_waited: np.ndarray  # bool: the device was still running work the sync waited for when it began
    sync_own: np.ndarray  # the call's own length when it did not wait for the device, else 0
    sync_tail: np.ndarray  # from the end of the awaited device work to the sync's return, when it waited
    dur_i: np.ndarray  # int64 ns
    latency_i: np.ndarray  # L: launch to start, for the activity that waits only for its launch (int64 ns)
    gap_i: np.ndarray  # B: the recorded gap after the stream's previous activity (int64 ns)
    lane_i: np.ndarray  # dense lane index of each activity
    n_lanes: int
    seg_order: np.ndarray  # activities by segment, (lane, start) order inside each
    seg_bounds: np.ndarray  # where each segment's activities begin in seg_order
    seg_groups: np.ndarray  # where each segment's runs (of one lane each) begin among all runs
    group_local: np.ndarray  # per seg_order position: its run, numbered from its segment's first
    group_start: np.ndarray  # seg_order position where each run begins
    group_last: np.ndarray  # and ends
    group_lane: np.ndarray  # each run's lane
    joined: np.ndarray  # activities by the sync that joins them
    joined_bounds: np.ndarray
    in_step: np.ndarray  # bool: launched inside a step
    by_step: np.ndarray  # those activities, grouped by step
    step_bounds: np.ndarray  # where each step's begin in by_step
    step_has_work: np.ndarray  # bool per step
    cache: dict = field(default_factory=dict)  # what plans share (`_cached`)
    # where the first step's time starts, in every replay alike: the first step's host start, or the end of the
    # backlog the device was still running then (work launched before the window, or outside any step, that
    # started before the first step's own work ended), as recorded
    first_start: Optional[float] = None

    @staticmethod
    def of(model: TraceModel) -> _Context:
        t0 = model.start_ns
        steps = iteration_rows(model)
        main = int(np.bincount(model.lane[steps]).argmax()) if steps.size else -1
        step_start = (model.ts_ns[steps] - t0).astype(np.float64)
        step_end = (model.end_ns[steps] - t0).astype(np.float64)
        acts = np.flatnonzero(model.activity_mask() & model.on_lanes(LaneKind.GPU))
        acts = acts[np.lexsort((model.ts_ns[acts], model.lane[acts]))]
        lane = model.lane[acts]
        start = (model.ts_ns[acts] - t0).astype(np.float64)
        dur = model.dur_ns[acts].astype(np.float64)
        launch = model.launch_idx[acts]
        linked = launch >= 0
        host = np.where(linked, (model.ts_ns[np.maximum(launch, 0)] - t0).astype(np.float64), start)
        end = start + dur
        first = np.ones(acts.size, bool)
        first[1:] = lane[1:] != lane[:-1]
        # the latest end among the earlier activities of the same stream
        previous = np.concatenate(([-np.inf], end[:-1]))
        prev_end = np.where(first, -np.inf, _lane_running_max(np.where(first, -np.inf, previous), first))
        queued = linked & (prev_end > host)
        own_latency = start - host  # negative where the device clock runs ahead of the host's: kept, to give back the start
        typical = float(np.median(own_latency[linked & ~queued])) if np.any(linked & ~queued) else 0.0
        latency = np.where(queued, np.minimum(typical, own_latency), own_latency)
        # B: from the end of the stream's previous activity to this start. It is negative where activities overlap
        # on one stream (programmatic dependent launch, a graph's parallel branches); for an activity that was not
        # queued it only keeps the overlap, if any
        just_before = np.where(first, -np.inf, previous)
        gap = np.where(first, 0.0, start - just_before)
        gap = np.where(queued, gap, np.minimum(gap, 0.0))
        syncs = sync_rows(model)
        syncs = syncs[model.lane[syncs] == main] if main >= 0 else syncs[:0]
        syncs = syncs[np.argsort(model.ts_ns[syncs], kind="stable")]
        sync_start = (model.ts_ns[syncs] - t0).astype(np.float64)
        sync_end = (model.end_ns[syncs] - t0).astype(np.float64)
        # replayed in stream order: an activity without a launch call follows the segment of the one before it
        segment = _lane_running_max(np.searchsorted(sync_start, host, side="right"), first)
        # the device work a sync waited for: launched before it began, and ended before it returned (a stream
        # sync does not wait for the other streams). Each activity joins the first sync that may have waited for it
        joins = np.maximum(segment, np.searchsorted(sync_end, end, side="left"))
        by_sync = np.full(syncs.size + 1, -np.inf)
        np.maximum.at(by_sync, joins, end)
        awaited = np.maximum.accumulate(by_sync)[:syncs.size]
        waited = awaited > sync_start
        sync_own = np.where(waited, 0.0, sync_end - sync_start)
        sync_tail = np.where(waited, sync_end - awaited, 0.0)
        seg_order = np.argsort(segment, kind="stable")  # (lane, start) order kept inside each segment
        seg_bounds = np.searchsorted(segment[seg_order], np.arange(syncs.size + 2))
        lane_i = unique_inverse(lane)[1]
        ordered = lane_i[seg_order]
        seg_first = np.ones(acts.size, bool)  # a run of one lane begins (inside a segment)
        seg_first[1:] = ordered[1:] != ordered[:-1]
        seg_first[seg_bounds[(seg_bounds > 0) & (seg_bounds < acts.size)]] = True
        group_start = np.flatnonzero(seg_first)
        group_last = np.append(group_start[1:], acts.size) - 1
        seg_groups = np.searchsorted(group_start, seg_bounds)
        group_global = np.cumsum(seg_first) - 1
        segment_of_pos = np.searchsorted(seg_bounds, np.arange(acts.size), side="right") - 1
        group_local = group_global - seg_groups[np.clip(segment_of_pos, 0, seg_groups.size - 1)]
        # the activities launched inside each step, grouped by step (for the steps' device ends)
        step_of = np.searchsorted(step_start, host, side="right") - 1
        in_step = linked & (step_of >= 0) & (host < step_end[np.maximum(step_of, 0)]) if steps.size else np.zeros(acts.size, bool)
        by_step = np.flatnonzero(in_step)
        by_step = by_step[np.argsort(step_of[by_step], kind="stable")]
        step_bounds = np.searchsorted(step_of[by_step], np.arange(steps.size))
        step_has_work = np.bincount(step_of[by_step], minlength=steps.size)[:steps.size] > 0
        first_start = None
        if steps.size:
            own = by_step[step_of[by_step] == 0] if by_step.size else by_step
            first_start = float(step_start[0])
            if own.size:
                backlog = ~in_step & (start < end[own].max())
                if backlog.any():
                    first_start = max(first_start, float(end[backlog].max()))
        joined = np.argsort(joins, kind="stable")
        joined_bounds = np.searchsorted(joins[joined], np.arange(syncs.size + 2))
        return _Context(model, steps, step_start, step_end, acts, lane, start, dur, host, linked, queued,
                        segment, joins, syncs, sync_start, sync_end, waited, sync_own, sync_tail,
                        dur_i=model.dur_ns[acts].astype(np.int64),
                        latency_i=np.round(latency).astype(np.int64), gap_i=np.round(gap).astype(np.int64),
                        lane_i=lane_i, n_lanes=int(lane_i.max(initial=-1)) + 1, seg_order=seg_order,
                        seg_bounds=seg_bounds, seg_groups=seg_groups, group_local=group_local.astype(np.int64),
                        group_start=group_start, group_last=group_last, group_lane=ordered[group_start],
                        joined=joined, joined_bounds=joined_bounds,
                        in_step=in_step, by_step=by_step, step_bounds=step_bounds, step_has_work=step_has_work,
                        first_start=first_start)


def _cached(ctx: _Context, key: str, compute):
    """A value every plan of one trace shares (the CPU rows, the op nesting), computed once per context."""
    if key not in ctx.cache:
        ctx.cache[key] = compute()
    return ctx.cache[key]


def _lane_running_max(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Running maximum of `values` that restarts where `first` is True (rows grouped by lane), for every lane at
    once: each value is replaced by its rank, lifted by its group's number times the count, so one running maximum
    over the keys never carries from one group into the next (a trace may hold 100k streams)."""
    if values.size == 0:
        return values.copy()
    ranks = np.empty(values.size, np.int64)
    order = np.argsort(values, kind="stable")
    ranks[order] = np.arange(values.size)
    lift = (np.cumsum(first) - 1) * values.size
    best = np.maximum.accumulate(lift + ranks) - lift
    return values[order[best]]


def _plan(ctx: _Context, edits: tuple[Edit, ...], matched: dict[str, int]) -> _Plan:
    model, t0 = ctx.model, ctx.model.start_ns
    cuts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    plan = _Plan()
    scaled_in = np.zeros(ctx.acts.size, bool)
    for edit in edits:
        if edit.kind == "dataloader":
            s, e = _cached(ctx, "dataloader", lambda: dataloader_union(model))
            cuts.append(((s - t0).astype(np.float64), (e - t0).astype(np.float64), np.zeros(s.size)))
            matched[edit.text] = int(s.size)
        elif edit.kind == "host":
            rows = _cached(ctx, "cpu_rows", lambda: cpu_rows(model))
            target = edit.target
            ids = model.name_ids_where(lambda n, target=target: n == target)
            rows = rows[model.name_in(ids, rows)]
            s, e = intervals.union(model.ts_ns[rows], model.end_ns[rows])
            cuts.append(((s - t0).astype(np.float64), (e - t0).astype(np.float64), np.full(s.size, edit.factor)))
            matched[edit.text] = int(rows.size)
        elif edit.kind == "kernel":
            pattern = edit.target
            glob = any(ch in pattern for ch in "*?[")
            low = pattern.lower()
            ids = model.name_ids_where(lambda n, pattern=pattern, glob=glob, low=low:
                                       n == pattern or (fnmatch.fnmatchcase(n, pattern) if glob else low in n.lower()))
            hit = model.name_in(ids, ctx.acts)
            scale = plan.dur_scale if plan.dur_scale is not None else np.ones(ctx.acts.size)
            scale[hit] *= edit.factor
            plan.dur_scale = scale
            matched[edit.text] = int(hit.sum())
        elif edit.kind == "kernel-in":
            hit = _launched_inside(ctx, edit.target.split(OP_SEP))
            scale = plan.dur_scale if plan.dur_scale is not None else np.ones(ctx.acts.size)
            fresh = hit & ~scaled_in  # a kernel inside two such ops (conv2d > cudnn_convolution) is scaled once
            scale[fresh] *= edit.factor
            scaled_in |= hit
            plan.dur_scale = scale
            matched[edit.text] = int(hit.sum())
        elif edit.kind == "fuse":
            fused, calls = _fusion(ctx, edit.target)
            if plan.fused_into is None:
                plan.fused_into = fused
            else:
                plan.fused_into = np.where(plan.fused_into >= 0, plan.fused_into, fused)
            cuts.append(((model.ts_ns[calls] - t0).astype(np.float64), (model.end_ns[calls] - t0).astype(np.float64),
                         np.zeros(calls.size)))
            matched[edit.text] = int(np.count_nonzero(fused >= 0))
        elif edit.kind == "comm":
            plan.gap_i, plan.latency_i, host, n = _hidden_comm(ctx)
            plan.unawaited = comm_mask(model, ctx.acts)
            cuts.append(host)
            matched[edit.text] = n
        elif edit.kind == "warmup":
            factor, rows = _warmup(ctx)
            if rows is not None:
                cuts.append((ctx.step_start[:1], ctx.step_end[:1], np.array([factor])))
                scale = plan.dur_scale if plan.dur_scale is not None else np.ones(ctx.acts.size)
                scale[rows] *= factor
                plan.dur_scale = scale
            matched[edit.text] = 0 if rows is None else 1 + int(rows.size)
        elif edit.kind == "sync":
            hit = _syncs_named(ctx, edit.target)
            factor = plan.sync_factor if plan.sync_factor is not None else np.ones(ctx.syncs.size)
            factor[hit] *= edit.factor
            plan.sync_factor = factor
            matched[edit.text] = int(hit.sum())
    if cuts:
        plan.cut_start, plan.cut_end, plan.cut_factor = _disjoint(*(np.concatenate(parts) for parts in zip(*cuts)))
    return plan


def _warmup(ctx: _Context) -> tuple[float, Optional[np.ndarray]]:
    """(median / first step time, the activities launched inside the first step) for `warmup=median`; (1, None)
    when there is no second step or the first is no slower than the median of the others."""
    if ctx.steps.size < 2:
        return 1.0, None
    durs = ctx.step_end - ctx.step_start
    median = float(np.median(durs[1:]))
    if durs[0] <= median:  # durations are never negative: a first step above the median is above 0
        return 1.0, None
    return median / float(durs[0]), ctx.by_step[ctx.step_bounds[0]:ctx.step_bounds[1]]


def _occurrences(ctx: _Context, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outermost intervals of the ops or regions named `names` on each thread: (lane, start, end) arrays,
    sorted by (lane, start)."""
    model = ctx.model
    wanted = set(names)
    ids = model.name_ids_where(lambda n: n in wanted)
    rows = _cached(ctx, "cpu_rows", lambda: cpu_rows(model))
    rows = rows[model.name_in(ids, rows)] if ids.size else rows[:0]
    if not rows.size:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    rows = rows[np.lexsort((model.ts_ns[rows], model.lane[rows]))]
    lane = model.lane[rows].astype(np.int64)
    start, end = model.ts_ns[rows], model.end_ns[rows]
    new_lane = np.concatenate(([True], lane[1:] != lane[:-1]))
    reach = _lane_running_max(np.concatenate(([np.iinfo(np.int64).min], end[:-1])), new_lane)
    outer = new_lane | (start >= reach)
    bounds = np.flatnonzero(outer)
    return lane[outer], start[outer], np.maximum.reduceat(end, bounds)


def _in_occurrence(ctx: _Context, occ: tuple[np.ndarray, np.ndarray, np.ndarray], calls: np.ndarray) -> np.ndarray:
    """For each launch call row, the occurrence (index) it runs inside on its thread, -1 for none."""
    model = ctx.model
    lane, start, end = occ
    if not lane.size or not calls.size:
        return np.full(calls.size, -1, np.int64)
    key_occ = lane * (1 << 40) + (start - model.start_ns)
    call_lane = model.lane[calls].astype(np.int64)
    key_call = call_lane * (1 << 40) + (model.ts_ns[calls] - model.start_ns)
    k = np.searchsorted(key_occ, key_call, side="right") - 1
    ok = k >= 0
    ok[ok] &= (lane[k[ok]] == call_lane[ok]) & (model.ts_ns[calls[ok]] < end[k[ok]])
    return np.where(ok, k, -1)


def _launched_inside(ctx: _Context, names: list[str]) -> np.ndarray:
    """Which activities are kernels whose launch call ran inside an op or region named in `names`."""
    launch = ctx.model.launch_idx[ctx.acts]
    kernels = (ctx.model.kind[ctx.acts] == Kind.KERNEL) & (launch >= 0)
    hit = np.zeros(ctx.acts.size, bool)
    hit[kernels] = _in_occurrence(ctx, _occurrences(ctx, names), launch[kernels]) >= 0
    return hit


def _fusion(ctx: _Context, name: str) -> tuple[np.ndarray, np.ndarray]:
    """`fuse:NAME`: the kernels launched inside each occurrence of an op or region named NAME become one kernel
    per stream, as long as all of them, launched by the first one's call; the other launch calls cost nothing.
    Returns per activity the activity it is fused into (the first of its group: itself; -1 outside any group),
    and the launch call rows whose host time goes."""
    fused = np.full(ctx.acts.size, -1, np.int64)
    launch = ctx.model.launch_idx[ctx.acts]
    kernels = np.flatnonzero((ctx.model.kind[ctx.acts] == Kind.KERNEL) & (launch >= 0))
    occurrence = _in_occurrence(ctx, _occurrences(ctx, [name]), launch[kernels])
    members, occurrence = kernels[occurrence >= 0], occurrence[occurrence >= 0]
    if not members.size:
        return fused, np.zeros(0, np.int64)
    group = occurrence * (int(ctx.lane_i.max()) + 1) + ctx.lane_i[members]  # one fused kernel per occurrence and stream
    order = np.lexsort((ctx.start[members], group))
    members, group = members[order], group[order]
    first = np.concatenate(([True], group[1:] != group[:-1]))
    run = np.cumsum(first) - 1
    fused[members] = members[np.flatnonzero(first)[run]]
    single = np.bincount(run) == 1  # a group of one is left as it is
    fused[members[single[run]]] = -1
    dropped = members[(fused[members] >= 0) & (fused[members] != members)]
    return fused, unique(launch[dropped])


def _hidden_comm(ctx: _Context) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], int]:
    """`comm=hidden`: communication runs under compute. On the device, the time other streams' activities waited
    while a communication kernel ran (their stream gap, or their wait after launch) goes; the communication
    kernels keep their length on their own stream. On the host, the CPU collectives' time that no CPU operator
    covers (gloo waits) goes. Returns the new gaps and latencies, the host cuts and how many waits changed."""
    model, t0 = ctx.model, ctx.model.start_ns
    comm = comm_mask(model, ctx.acts)
    gap, latency = ctx.gap_i.copy(), ctx.latency_i.copy()
    changed = 0
    if comm.any():
        us, ue = intervals.union(model.ts_ns[ctx.acts[comm]] - t0, model.end_ns[ctx.acts[comm]] - t0)
        start = (model.ts_ns[ctx.acts] - t0)
        other = ~comm
        covered_gap = intervals.covered(us, ue, start - np.maximum(gap, 0), start)
        covered_latency = intervals.covered(us, ue, start - np.maximum(latency, 0), start)
        gap = np.where(other, gap - covered_gap, gap)
        latency = np.where(other, latency - covered_latency, latency)
        changed = int(np.count_nonzero(other & ((covered_gap > 0) | (covered_latency > 0))))
    # the host's own waits in collectives: CPU-side collectives that launch no device work (gloo's; an NCCL
    # collective's CPU op only enqueues its kernel), where no CPU operator runs
    ids = model.name_ids_where(is_collective_name)
    rows = _cached(ctx, "cpu_rows", lambda: cpu_rows(model))
    rows = rows[model.name_in(ids, rows)]
    calls = launch_call_rows(model)
    key = lambda r: model.lane[r].astype(np.int64) * (1 << 40) + (model.ts_ns[r] - t0)  # noqa: E731
    call_keys = np.sort(key(calls))
    launches = np.zeros(rows.size, bool)
    if call_keys.size:
        first_after = np.searchsorted(call_keys, key(rows))
        launches = (first_after < call_keys.size) & \
            (call_keys[np.minimum(first_after, call_keys.size - 1)] < key(rows) + model.dur_ns[rows])
    cs, ce = intervals.union(model.ts_ns[rows[~launches]], model.end_ns[rows[~launches]])
    ws, we = intervals.subtract(cs, ce, *cpu_compute_union(model))
    host = ((ws - t0).astype(np.float64), (we - t0).astype(np.float64), np.zeros(ws.size))
    return gap, latency, host, changed + int(ws.size)


def _syncs_named(ctx: _Context, name: str) -> np.ndarray:
    """Which main-thread syncs are the call `name` or run inside an event named `name` on their thread (any
    enclosing level: an op, a region)."""
    model = ctx.model
    ids = model.name_ids_where(lambda n: n == name)
    hit = model.name_in(ids, ctx.syncs)
    if ctx.syncs.size and ids.size:
        lane = int(model.lane[ctx.syncs[0]])  # the main thread's
        rows = np.arange(model.lane_ptr[lane], model.lane_ptr[lane + 1])  # the model keeps each lane's rows together
        rows = rows[model.name_in(ids, rows)]
        s, e = intervals.union(model.ts_ns[rows], model.end_ns[rows])
        t = model.ts_ns[ctx.syncs]
        k = np.searchsorted(s, t, side="right") - 1
        hit |= (k >= 0) & (t < e[np.maximum(k, 0)]) & (model.end_ns[ctx.syncs] <= e[np.maximum(k, 0)])
    return hit


def _disjoint(start: np.ndarray, end: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted, disjoint host intervals: where two edits' intervals overlap, the earlier-starting one keeps the
    overlap and the later one is trimmed to begin at its end."""
    order = np.argsort(start, kind="stable")
    start, end, factor = start[order], end[order], factor[order]
    reach = np.maximum.accumulate(np.concatenate(([-np.inf], end[:-1])))
    start = np.maximum(start, reach)
    keep = end > start
    return start[keep], end[keep], factor[keep]


def _with_workers(ctx: _Context, plan: _Plan, workers: int, matched: dict[str, int], text: str) -> _Plan:
    """The plan with each step's DataLoader wait w replaced by max(0, w / K - the step's time without it)."""
    model, t0 = ctx.model, ctx.model.start_ns
    s, e = _cached(ctx, "dataloader", lambda: dataloader_union(model))
    s, e = (s - t0).astype(np.float64), (e - t0).astype(np.float64)
    matched[text] = int(s.size)
    if not s.size or not ctx.steps.size:
        return plan
    without = _Plan(*_disjoint(np.concatenate((plan.cut_start, s)), np.concatenate((plan.cut_end, e)),
                               np.concatenate((plan.cut_factor, np.zeros(s.size)))),
                    dur_scale=plan.dur_scale, sync_factor=plan.sync_factor)
    bare, _, _ = _replay(ctx, without)
    wait = intervals.covered(s.astype(np.int64), e.astype(np.int64), ctx.step_start.astype(np.int64),
                             ctx.step_end.astype(np.int64)).astype(np.float64)
    new_wait = np.maximum(wait / workers - bare, 0.0)
    share = np.divide(new_wait, wait, out=np.ones_like(wait), where=wait > 0)
    step = np.clip(np.searchsorted(ctx.step_start, s, side="right") - 1, 0, None)
    factor = np.where(s < ctx.step_start[0], share[0], share[step])
    return _Plan(*_disjoint(np.concatenate((plan.cut_start, s)), np.concatenate((plan.cut_end, e)),
                            np.concatenate((plan.cut_factor, factor))),
                 dur_scale=plan.dur_scale, sync_factor=plan.sync_factor)


def _warp(plan: _Plan, t: np.ndarray) -> np.ndarray:
    """Host time after the plan's host edits (before the syncs' changes): t minus what was removed before t."""
    if not plan.cut_start.size:
        return t
    removed = (1.0 - plan.cut_factor) * (plan.cut_end - plan.cut_start)
    before = np.concatenate(([0.0], np.cumsum(removed)[:-1]))
    x = np.empty(2 * plan.cut_start.size)
    y = np.empty_like(x)
    x[0::2], x[1::2] = plan.cut_start, plan.cut_end
    y[0::2], y[1::2] = before, before + removed
    return t - np.interp(t, x, y, left=0.0, right=float(before[-1] + removed[-1]))


def _replay(ctx: _Context, plan: _Plan, accelerated: Optional[bool] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each step's time and host time under `plan` (ns), and each activity's replayed end.

    Device times are whole ns in int64 (exact: the unedited replay gives back every recorded time); the host
    warp and the syncs are in float64 ns from the trace start and rounded where they meet the device. The
    sequential pass runs in C (`_replay.c`) when it is built, else in numpy (`_pass_py`): the same numbers."""
    dur = ctx.dur_i if plan.dur_scale is None else np.round(ctx.dur * plan.dur_scale).astype(np.int64)
    gap = ctx.gap_i if plan.gap_i is None else plan.gap_i
    ready = np.round(_warp(plan, ctx.host)).astype(np.int64) + (ctx.latency_i if plan.latency_i is None else plan.latency_i)
    if plan.fused_into is not None:  # a fused group runs as its first kernel, as long as all of them
        member = plan.fused_into >= 0
        dur = dur.copy()
        total = np.bincount(plan.fused_into[member], weights=dur[member], minlength=dur.size)
        leader = member & (plan.fused_into == np.arange(dur.size))
        others = member & ~leader
        dur[leader] = np.round(total[leader]).astype(np.int64)
        dur[others] = 0
        gap = np.where(others, 0, gap)
        ready = np.where(others, _NEVER, ready)
    sync_start = _warp(plan, ctx.sync_start)
    sync_end_w = _warp(plan, ctx.sync_end)
    use_c = ACCELERATED if accelerated is None else accelerated
    end, offsets = (_pass_c if use_c else _pass_py)(ctx, plan, dur, ready, gap, sync_start, sync_end_w)
    return _step_times(ctx, plan, dur, end, offsets)


def _awaited(ctx: _Context, plan: _Plan) -> tuple[np.ndarray, np.ndarray]:
    """The activities each sync may wait for, grouped by sync: all of them, less those no one waits for."""
    if plan.unawaited is None:
        return ctx.joined, ctx.joined_bounds
    joined = ctx.joined[~plan.unawaited[ctx.joined]]
    return joined, np.searchsorted(ctx.joins[joined], np.arange(ctx.syncs.size + 2))


def _pass_c(ctx: _Context, plan: _Plan, dur: np.ndarray, ready: np.ndarray, gap: np.ndarray, sync_start: np.ndarray,
            sync_end_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    end = np.zeros(ctx.acts.size, np.int64)
    offsets = np.zeros(ctx.syncs.size + 1)
    carry = np.full(max(ctx.n_lanes, 1), _NEVER, np.int64)
    factor = None if plan.sync_factor is None else np.ascontiguousarray(plan.sync_factor, np.float64)
    _accel.replay(ctx.seg_order, ctx.seg_bounds, ctx.lane_i, np.ascontiguousarray(ready, np.int64),
                  np.ascontiguousarray(gap, np.int64), np.ascontiguousarray(dur, np.int64),
                  *_awaited(ctx, plan), np.ascontiguousarray(sync_start, np.float64),
                  np.ascontiguousarray(sync_end_w, np.float64), ctx.sync_waited.astype(np.uint8), ctx.sync_own,
                  ctx.sync_tail, factor, end, offsets, carry)
    return end, offsets


def _pass_py(ctx: _Context, plan: _Plan, dur: np.ndarray, ready: np.ndarray, gap: np.ndarray, sync_start: np.ndarray,
             sync_end_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The reference pass: segment by segment, every stream at once in numpy (`_stream_ends`)."""
    end = np.zeros(ctx.acts.size, np.int64)
    carry = np.full(ctx.n_lanes, _NEVER, np.int64)
    offset = 0.0  # what the syncs so far moved host time by
    offsets = np.zeros(ctx.syncs.size + 1)
    completion = -np.inf
    order, bounds = ctx.seg_order, ctx.seg_bounds
    joined, joined_bounds = _awaited(ctx, plan)
    for j in range(ctx.syncs.size + 1):
        lo, hi = bounds[j], bounds[j + 1]
        if hi > lo:
            rows = order[lo:hi]
            g_lo, g_hi = ctx.seg_groups[j], ctx.seg_groups[j + 1]
            end[rows] = _stream_ends(ctx.group_local[lo:hi], ctx.group_start[g_lo:g_hi] - lo, ctx.group_last[g_lo:g_hi] - lo,
                                     ctx.group_lane[g_lo:g_hi], ready[rows] + int(round(offset)), gap[rows],
                                     dur[rows], carry)
        offsets[j] = offset
        if j == ctx.syncs.size:
            break
        awaited = joined[joined_bounds[j]:joined_bounds[j + 1]]
        if awaited.size:
            completion = max(completion, float(end[awaited].max()))
        begin = sync_start[j] + offset
        if ctx.sync_waited[j]:
            finish = max(begin, completion + ctx.sync_tail[j])
        else:
            finish = max(begin + ctx.sync_own[j], completion)
        if plan.sync_factor is not None:
            finish = begin + plan.sync_factor[j] * (finish - begin)
        offset = finish - sync_end_w[j]
    offsets[-1] = offset
    return end, offsets


def _step_times(ctx: _Context, plan: _Plan, dur: np.ndarray, end: np.ndarray,
                offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not ctx.steps.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), end
    # host time of each step boundary: warped, plus what the syncs ended before it moved it by
    def host_time(t: np.ndarray) -> np.ndarray:
        moved = offsets[np.searchsorted(ctx.sync_end, t, side="right")]
        return _warp(plan, t) + moved

    start, stop = host_time(ctx.step_start), host_time(ctx.step_end)
    host_len = stop - start
    # a step is done when the host has ended it and the device has run the work launched inside it; it takes
    # from the previous step's done point to its own, so the steps add up to the whole run
    by_step, step_bounds, has_work = ctx.by_step, ctx.step_bounds, ctx.step_has_work
    device_end = np.full(ctx.steps.size, -np.inf)
    if by_step.size:
        counted = end if plan.unawaited is None else np.where(plan.unawaited, np.iinfo(np.int64).min, end)
        device_end[has_work] = np.maximum.reduceat(counted[by_step], step_bounds[has_work])
    done = np.maximum.accumulate(np.maximum(stop, device_end))
    # before the first step: the host's start, or the end of the backlog the device was still running then
    # (work launched before the window, or outside any step, that started before the first step's work ended)
    first = ctx.first_start if ctx.first_start is not None else float(start[0])
    previous = np.concatenate(([first], done[:-1]))
    return np.round(done - previous).astype(np.int64), np.round(host_len).astype(np.int64), end


_NEVER = -(1 << 62)  # an end before anything: a stream's carry before its first activity


def _stream_ends(group: np.ndarray, starts: np.ndarray, lasts: np.ndarray, lanes: np.ndarray, ready: np.ndarray,
                 gap: np.ndarray, dur: np.ndarray, carry: np.ndarray) -> np.ndarray:
    """Ends of one segment's activities on their streams: the running maximum of the module docstring, for
    every stream at once, continuing from `carry` (each lane's last end) and updating it (int64 ns, exact).
    Rows come in runs of one lane each, in stream order: `group` numbers each row's run, `starts`/`lasts` are
    where each run begins and ends, `lanes` its lane."""
    step = gap + dur
    total = np.cumsum(step)
    c = total - (total[starts] - step[starts])[group]  # cumsum of gap + dur within each run
    value = ready + dur - c
    low = int(value.min())
    span = int(value.max()) - low + 1
    if starts.size * span < (1 << 62):  # one running maximum over keys that rise from run to run
        lift = group * span
        best = np.maximum.accumulate(lift + (value - low)) - lift + low
    else:  # values too far apart to pack: run by run
        best = np.empty_like(value)
        for a, b in zip(starts.tolist(), (lasts + 1).tolist()):
            best[a:b] = np.maximum.accumulate(value[a:b])
    out = c + np.maximum(best, carry[lanes][group])
    carry[lanes] = out[lasts]
    return out


def whatif_entry(result: WhatIf) -> dict:
    """The JSON form: per step the recorded and predicted time, their medians and the saving (µs)."""
    def us(values) -> list[float]:
        return [round(float(v) / 1e3, 3) for v in values]

    predicted = result.predicted_ns
    if not predicted.size:
        return {"edits": list(result.edits), "matched": dict(result.matched), "steps": [],
                "recorded_median_step_us": None, "median_step_us": None, "saving_us": None, "saving_share": None,
                "replay_median_step_us": None, "device_behind": False, "note": NO_STEPS}
    return {
        "edits": list(result.edits),
        "matched": dict(result.matched),
        "steps": [{"name": name, "recorded_us": rec, "predicted_us": pred, "replay_us": rep, "replay_edited_us": ed}
                  for name, rec, pred, rep, ed in zip(result.step_names, us(result.recorded_ns), us(predicted),
                                                       us(result.replayed_ns), us(result.edited_ns))],
        "recorded_median_step_us": round(result.median_recorded_ns / 1e3, 3),
        "median_step_us": round(result.median_predicted_ns / 1e3, 3),
        "saving_us": round(result.saving_ns / 1e3, 3),
        "saving_share": round(result.saving_ns / result.base_ns, 4) if result.base_ns > 0 else None,
        "replay_median_step_us": round(result.median_replayed_ns / 1e3, 3),
        "device_behind": result.device_behind,
    }
