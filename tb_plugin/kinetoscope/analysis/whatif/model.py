"""The replay model of one trace: its timeline relative to its start and the dependencies the replay honours (streams,
launches, main-thread syncs, steps), read once per trace (`Context`); and what a set of edits changes (`Plan`).
`replay.py` holds the replay itself and lists the dependencies."""
from __future__ import annotations

from typing import Optional

import msgspec
import numpy as np

from ...trace.kinds import LaneKind
from ...trace.model import TraceModel, unique_inverse
from ..core.selectors import iteration_rows, launch_call_rows, sync_rows
from .edits import EditError

MAX_REPLAY_SPAN_NS = 1 << 61  # 73 years: every replayed time (span plus the edits' shifts) stays far inside int64 ns


class Plan(msgspec.Struct):
    """What the edits change: host intervals with their new share of length, a per-activity duration scale,
    and per-sync factors on the waits."""

    cut_start: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0))
    cut_end: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0))
    cut_factor: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0))
    dur_scale: Optional[np.ndarray] = None  # per activity (ctx order)
    sync_factor: Optional[np.ndarray] = None  # per main-thread sync
    fused_into: Optional[np.ndarray] = None  # per activity: the activity it is fused into (itself: the fused kernel), -1
    gap_i: Optional[np.ndarray] = None  # per activity: its stream gap, where an edit changes it (comm=hidden)
    latency_i: Optional[np.ndarray] = None  # per activity: its launch latency, where an edit changes it
    unawaited: Optional[np.ndarray] = None  # per activity: no sync and no step end waits for it (comm=hidden)
    notes: dict = msgspec.field(default_factory=dict)  # edit -> what it could not change, and why


class Context(msgspec.Struct, frozen=True):
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
    cache: dict = msgspec.field(default_factory=dict)  # what plans share (`cached`)
    # where the first step's time starts, in every replay alike: the first step's host start, or the end of the
    # backlog the device was still running then (work launched before the window, or outside any step, that
    # started before the first step's own work ended), as recorded
    first_start: Optional[float] = None
    # each step's name; a trace without steps has one, the window replayed (`_window_step`), and `steps` empty
    step_names: tuple[str, ...] = ()

    @staticmethod
    def of(model: TraceModel) -> Context:
        """The timeline and dependencies of `model`, as the replay reads them.

        Raises:
            EditError: the trace spans more than MAX_REPLAY_SPAN_NS: its replayed times would pass int64 ns.
        """
        t0 = model.start_ns
        if model.stop_ns - t0 > MAX_REPLAY_SPAN_NS:
            raise EditError(f"the trace's events span {(model.stop_ns - t0) / 3.15576e16:.3g} years: too long to replay "
                            f"(at most {MAX_REPLAY_SPAN_NS / 3.15576e16:.0f} years: its times would pass int64 ns)")
        steps = iteration_rows(model)
        main = int(np.bincount(model.lane[steps]).argmax()) if steps.size else -1
        step_start = (model.ts_ns[steps] - t0).astype(np.float64)
        step_end = (model.end_ns[steps] - t0).astype(np.float64)
        step_names = tuple(model.shown_names[i] for i in model.name_id[steps].tolist())
        if not steps.size:  # no steps: the launching thread's whole span is replayed as one
            main, step_start, step_end, step_names = _window_step(model)
        acts, lane, start, dur, host, linked, first, queued, latency, gap = _streams(model, t0)
        end = start + dur
        syncs, sync_start, sync_end = _main_syncs(model, main, t0)
        # replayed in stream order: an activity without a launch call follows the segment of the one before it
        segment = lane_running_max(np.searchsorted(sync_start, host, side="right"), first)
        joins, waited, sync_own, sync_tail = _sync_waits(segment, end, sync_start, sync_end)
        seg_order = np.argsort(segment, kind="stable")  # (lane, start) order kept inside each segment
        seg_bounds = np.searchsorted(segment[seg_order], np.arange(syncs.size + 2))
        lane_i = unique_inverse(lane)[1]
        ordered = lane_i[seg_order]
        seg_groups, group_local, group_start, group_last = _segment_runs(ordered, seg_bounds, acts.size)
        in_step, by_step, step_bounds, step_has_work, first_start = _step_work(step_start, step_end, host, linked,
                                                                             start, end)
        joined = np.argsort(joins, kind="stable")
        joined_bounds = np.searchsorted(joins[joined], np.arange(syncs.size + 2))
        return Context(model, steps, step_start, step_end, acts, lane, start, dur, host, linked, queued,
                       segment, joins, syncs, sync_start, sync_end, waited, sync_own, sync_tail,
                       dur_i=model.dur_ns[acts].astype(np.int64),
                       latency_i=np.round(latency).astype(np.int64), gap_i=np.round(gap).astype(np.int64),
                       lane_i=lane_i, n_lanes=int(lane_i.max(initial=-1)) + 1, seg_order=seg_order,
                       seg_bounds=seg_bounds, seg_groups=seg_groups, group_local=group_local.astype(np.int64),
                       group_start=group_start, group_last=group_last, group_lane=ordered[group_start],
                       joined=joined, joined_bounds=joined_bounds,
                       in_step=in_step, by_step=by_step, step_bounds=step_bounds, step_has_work=step_has_work,
                       first_start=first_start, step_names=step_names)


def _streams(model: TraceModel, t0: int) -> tuple[np.ndarray, ...]:
    """The GPU activities by (lane, start) and what the replay reads of each: (rows, lane, start, duration, host
    time of its launch, linked to a launch call, first of its stream, queued, launch latency L, stream gap B)."""
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
    prev_end = np.where(first, -np.inf, lane_running_max(np.where(first, -np.inf, previous), first))
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
    return acts, lane, start, dur, host, linked, first, queued, latency, gap


def _main_syncs(model: TraceModel, main: int, t0: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The blocking syncs of the main thread (the one holding the steps) by start: rows, starts and ends."""
    syncs = sync_rows(model)
    syncs = syncs[model.lane[syncs] == main] if main >= 0 else syncs[:0]
    syncs = syncs[np.argsort(model.ts_ns[syncs], kind="stable")]
    return syncs, (model.ts_ns[syncs] - t0).astype(np.float64), (model.end_ns[syncs] - t0).astype(np.float64)


def _sync_waits(segment: np.ndarray, end: np.ndarray, sync_start: np.ndarray,
                sync_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which sync each activity joins, and per sync: whether it waited for the device, its own length when it did
    not, and its tail after the awaited work when it did."""
    # the device work a sync waited for: launched before it began, and ended before it returned (a stream
    # sync does not wait for the other streams). Each activity joins the first sync that may have waited for it
    joins = np.maximum(segment, np.searchsorted(sync_end, end, side="left"))
    by_sync = np.full(sync_start.size + 1, -np.inf)
    np.maximum.at(by_sync, joins, end)
    awaited = np.maximum.accumulate(by_sync)[:sync_start.size]
    waited = awaited > sync_start
    sync_own = np.where(waited, 0.0, sync_end - sync_start)
    sync_tail = np.where(waited, sync_end - awaited, 0.0)
    return joins, waited, sync_own, sync_tail


def _segment_runs(ordered: np.ndarray, seg_bounds: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """The runs of one lane each inside every segment (`ordered`: each activity's dense lane in segment order):
    where each segment's runs begin among all runs, each position's run numbered from its segment's first, and
    where each run begins and ends."""
    seg_first = np.ones(n, bool)  # a run of one lane begins (inside a segment)
    seg_first[1:] = ordered[1:] != ordered[:-1]
    seg_first[seg_bounds[(seg_bounds > 0) & (seg_bounds < n)]] = True
    group_start = np.flatnonzero(seg_first)
    group_last = np.append(group_start[1:], n) - 1
    seg_groups = np.searchsorted(group_start, seg_bounds)
    group_global = np.cumsum(seg_first) - 1
    segment_of_pos = np.searchsorted(seg_bounds, np.arange(n), side="right") - 1
    group_local = group_global - seg_groups[np.clip(segment_of_pos, 0, seg_groups.size - 1)]
    return seg_groups, group_local, group_start, group_last


def _window_step(model: TraceModel) -> tuple[int, np.ndarray, np.ndarray, tuple[str, ...]]:
    """For a trace without steps: the thread that launches the most device work and its span (from its first event
    to its last), as one step named by its window; none where no thread launches any."""
    calls = launch_call_rows(model)
    calls = calls[model.on_lanes(LaneKind.CPU)[calls]]
    if not calls.size:
        return -1, np.zeros(0), np.zeros(0), ()
    main = int(np.bincount(model.lane[calls]).argmax())
    lo, hi = int(model.lane_ptr[main]), int(model.lane_ptr[main + 1])
    t0 = model.start_ns
    start, end = float(model.ts_ns[lo:hi].min() - t0), float(model.end_ns[lo:hi].max() - t0)
    name = f"{WINDOW_STEP} {start / 1e3:.3f}-{end / 1e3:.3f} µs"
    return main, np.array([start]), np.array([end]), (name,)


WINDOW_STEP = "no steps: the launching thread's span"  # the name of a step-less trace's one replayed step


def _step_work(step_start: np.ndarray, step_end: np.ndarray, host: np.ndarray, linked: np.ndarray,
               start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Optional[float]]:
    """The activities launched inside each step, grouped by step (for the steps' device ends), and where the first
    step's time starts (`Context.first_start`)."""
    steps = step_start
    step_of = np.searchsorted(step_start, host, side="right") - 1
    in_step = linked & (step_of >= 0) & (host < step_end[np.maximum(step_of, 0)]) if steps.size else np.zeros(host.size, bool)
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
    return in_step, by_step, step_bounds, step_has_work, first_start


def cached(ctx: Context, key: str, compute):
    """A value every plan of one trace shares (the CPU rows, the op nesting), computed once per context."""
    if key not in ctx.cache:
        ctx.cache[key] = compute()
    return ctx.cache[key]



def lane_running_max(values: np.ndarray, first: np.ndarray) -> np.ndarray:
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

