"""Device idle time per device, every idle gap with exactly one cause, and the CPU work behind it.

Device work is every kernel, memcpy and memset on an accelerator (CUDA, ROCm, XPU, MTIA, HPU,
privateuse1). Per device, busy time is the union of these intervals over all streams, so overlapping
streams are never double-counted (HTA sums per-stream idle time). A gap is a hole of that union
inside the device's window. Its cause, with k the activity that ends the gap, L the launch call of k,
and T the CPU thread of L, is the first that holds, in this order:

    CPU T   ...[sync)....[L: cudaLaunchKernel)...
    GPU     [k-1)               gap               [k)...

    graph       k is a node of a replayed CUDA graph other than its first: the replay was already on
                the device, and k waited on the graph's own dependencies (or another stream's event)
    dataloader  DataLoader waits cover >= half the gap (the input pipeline starved the step)
    comm        CPU-side collectives (record_param_comms, nccl:*, gloo:*, c10d::*) cover >= half the
                gap: the host was waiting on communication with other ranks
    unlinked    k has no launch call in the trace (but see below: launched before the trace)
    sync        a blocking synchronization call on T ended inside the gap (the CPU drained the device
                first); polls such as cudaEventQuery/cudaStreamQuery never block and never count
    host        L started after the gap began (the CPU had not asked for the work yet)
    launch      L started before the gap began (requested in time, reached the device late)

Work launched before the trace: an activity with no launch call that runs before the device's first
activity with one was launched before the file begins (the previous step's kernels draining into this
one), so its launch came before the gap too: `launch`, not `unlinked` (`launched_before_trace`).

Work the trace does not show: when k's launch call returned at least HELD_MIN_US before k started and
the device sat idle all that while, k was queued behind device work missing from the file (launched
before it began, or on a stream it waited on). That part of the gap is `unseen` (`unseen_work`): the
figures keep it as idle, as measured, but the verdict does not judge it.

The lead: a step that begins before the device's first activity starts with device idle time that is
not a gap of the device window; it gets a cause by the same rules (`DeviceIdle.lead_*`) so that a step
whose host spends its first 200 ms preprocessing is judged with them. No device work precedes it, so
no synchronization can have drained any: never `sync`.

The lead's culprit, when no op runs through it, is the innermost Python frame covering half of it
(`selectors.covering_frame`: host preprocessing outside any op).

The culprit of a host or comm gap is what T was doing at the gap's midpoint: the innermost operator
running then (or the one T finished last, when none runs), with the innermost user annotation around
it. A sync gap's culprit is the sync call, with the operator that made it.
"""
from __future__ import annotations

import enum
from functools import cached_property
from typing import Optional

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.kinds import LAUNCH_KINDS
from ...trace.model import TraceModel, unique
from ..core import thresholds as T
from ..core.selectors import (
    OpIndex,
    activity_rows_by_device,
    collective_union,
    covering_frame,
    dataloader_union,
    first_of_launch,
    graph_launch_mask,
    sync_rows,
)


class Cause(enum.IntEnum):
    """Why a GPU gap happened; exactly one per gap."""

    DATALOADER = 0
    SYNC = 1
    HOST = 2
    LAUNCH = 3
    UNLINKED = 4
    COMM = 5
    GRAPH = 6


CAUSE_NAMES = ("dataloader", "sync", "host", "launch", "unlinked", "comm", "graph")  # by code: CAUSE_NAMES[Cause.X]
# The one order in which causes are shown, wherever they are listed (text and markdown reports, the tab's
# legend and colours in frontend/model/colors.js, which a test holds to it): the input pipeline and the other
# ranks first, then the host's own causes, then what the trace cannot attribute.
CAUSE_ORDER = ("dataloader", "comm", "sync", "host", "launch", "graph", "unlinked")


class DeviceIdle(msgspec.Struct, frozen=True, dict=True):  # dict: its cached properties
    """One device's window, busy/idle totals and gaps (gap arrays are parallel)."""

    device: int
    window_start_ns: int
    window_end_ns: int
    busy_ns: int
    idle_ns: int
    gap_start_ns: np.ndarray
    gap_end_ns: np.ndarray
    gap_cause: np.ndarray  # int8 Cause
    gap_next_row: np.ndarray  # row of the activity that ends the gap
    gap_launch_row: np.ndarray  # row of its launch call, -1 when unlinked
    gap_culprit_row: np.ndarray  # host/comm: innermost op on T at the gap midpoint (or last before); sync: the call; else -1
    gap_annotation_row: np.ndarray  # the innermost user annotation around the culprit, -1
    gap_culprit_after: np.ndarray  # bool: no op ran at the midpoint; the culprit is the op T finished last
    gap_caller_row: np.ndarray  # sync: the innermost op that made the call; else -1
    busy_starts_ns: np.ndarray = msgspec.field(default_factory=lambda: intervals.EMPTY)
    busy_ends_ns: np.ndarray = msgspec.field(default_factory=lambda: intervals.EMPTY)
    unseen_starts_ns: np.ndarray = msgspec.field(default_factory=lambda: intervals.EMPTY)  # see `unseen_work`
    unseen_ends_ns: np.ndarray = msgspec.field(default_factory=lambda: intervals.EMPTY)
    lead_start_ns: int = 0  # judged idle before the window (== window_start_ns: none), see the module docstring
    lead_cause: int = -1  # Cause of the lead, -1 without one
    lead_culprit_row: int = -1  # host/comm: what its thread was doing (as gap_culprit_row)
    lead_annotation_row: int = -1
    pre_window_rows: int = 0  # activities launched before the trace (`launched_before_trace`)

    @property
    def window_ns(self) -> int:
        return self.window_end_ns - self.window_start_ns

    @property
    def idle_pct(self) -> float:
        return 100.0 * self.idle_ns / self.window_ns if self.window_ns > 0 else 0.0

    @property
    def has_lead(self) -> bool:
        return self.lead_cause >= 0 and self.lead_start_ns < self.window_start_ns

    @cached_property
    def listed(self) -> DeviceIdle:
        """This device with its lead (judged idle before its first activity), where it has one, as its first gap:
        its cause, culprit and annotation as judged, no next activity or launch (-1). What the gap list, the
        lanes' overlay and the culprit tables read, so the idle a verdict counts before the device's first kernel
        (TimeSformer's 215 ms of preprocessing) is listed like any other gap. The device window's own figures
        (`idle_ns`, the gap count, `idle_by_cause_ns` of the device itself) stay the window's. Made once per device
        (the report, the overlay and every `gaps` request read it)."""
        if not self.has_lead:
            return self
        one = lambda value, column: np.concatenate((np.array([value], column.dtype), column))  # noqa: E731
        return msgspec.structs.replace(self, gap_start_ns=one(self.lead_start_ns, self.gap_start_ns),
                       gap_end_ns=one(self.window_start_ns, self.gap_end_ns), gap_cause=one(self.lead_cause, self.gap_cause),
                       gap_next_row=one(-1, self.gap_next_row), gap_launch_row=one(-1, self.gap_launch_row),
                       gap_culprit_row=one(self.lead_culprit_row, self.gap_culprit_row),
                       gap_annotation_row=one(self.lead_annotation_row, self.gap_annotation_row),
                       gap_culprit_after=one(False, self.gap_culprit_after), gap_caller_row=one(-1, self.gap_caller_row))

    def idle_by_cause_ns(self) -> dict[str, int]:
        """Idle time per cause; the values add up to `idle_ns`."""
        length = self.gap_end_ns - self.gap_start_ns
        sums = np.bincount(self.gap_cause.astype(np.int64), weights=length, minlength=len(Cause))
        return {name: int(sums[c]) for c, name in enumerate(CAUSE_NAMES)}


class AllGaps(msgspec.Struct, frozen=True):
    """Every device's gaps end to end, device after device (each device's in time order, as its DeviceIdle holds
    them), read together wherever a window spans all devices: a trace of 100,000 one-kernel devices made a loop
    over the devices 1.5 s a request.

    `start_key` and `end_key` order the whole column: `t + position * span`, where `span` exceeds the time from
    the first gap's start to the last gap's end, so one binary search per device finds its gaps in a window
    (`overlapping`). With one device they are its own columns (no copy). They are None when the keys would not fit
    in int64 (times spread over centuries); a window is then a pass over every gap, with the same answer."""

    device: np.ndarray  # int64 device index per position
    ptr: np.ndarray  # int64 CSR offsets: position k's gaps are [ptr[k], ptr[k + 1])
    start_ns: np.ndarray
    end_ns: np.ndarray
    cause: np.ndarray  # int8 Cause
    base_ns: int  # the first gap's start
    span: int
    start_key: Optional[np.ndarray]
    end_key: Optional[np.ndarray]

    @classmethod
    def of(cls, devices: tuple[DeviceIdle, ...]) -> AllGaps:
        sizes = np.array([d.gap_start_ns.size for d in devices], np.int64)

        def joined(arrays: list[np.ndarray], dtype) -> np.ndarray:  # one array as it is, several copied together
            whole = arrays[0] if len(arrays) == 1 else np.concatenate(arrays or [np.zeros(0, dtype)])
            return whole.astype(dtype, copy=False)

        start = joined([d.gap_start_ns for d in devices], np.int64)
        end = joined([d.gap_end_ns for d in devices], np.int64)
        base = int(start.min()) if start.size else 0
        span = (int(end.max()) - base + 2) if end.size else 2
        start_key = end_key = None
        if -(1 << 62) < base - 1 and base + span * max(len(devices), 1) < (1 << 62):
            start_key, end_key = start, end
            if len(devices) > 1:
                shift = np.repeat(np.arange(len(devices), dtype=np.int64) * span, sizes)
                start_key, end_key = start + shift, end + shift
        return cls(np.array([d.device for d in devices], np.int64), np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
                   start, end, joined([d.gap_cause for d in devices], np.int8), base, span, start_key, end_key)

    def overlapping(self, t0_ns: int, t1_ns: int) -> np.ndarray:
        """Positions (ascending: device then time order) of the gaps overlapping [t0, t1). Each device's gaps are
        sorted and disjoint: those ending after t0 and starting before t1 are one range of its own."""
        if self.start_key is None:
            return np.flatnonzero((self.end_ns > t0_ns) & (self.start_ns < t1_ns))
        first, last = self.base_ns - 1, self.base_ns + self.span - 1  # every key of a device lies between (exclusive)
        return intervals.packed_window(self.start_key, self.end_key, self.device.size, self.span,
                                       min(max(t0_ns, first), last), min(max(t1_ns, first + 1), last + 1))

    def owner(self, positions: np.ndarray) -> np.ndarray:
        """The device position (index into `device`) of each gap position."""
        return np.searchsorted(self.ptr, positions, side="right") - 1


class GpuIdle(msgspec.Struct, frozen=True, dict=True):  # dict: its cached properties
    """Idle analysis of every device with GPU activity."""

    devices: tuple[DeviceIdle, ...]

    def busiest(self) -> Optional[DeviceIdle]:
        """The device with the most busy time (None without GPU activity)."""
        return max(self.devices, key=lambda d: d.busy_ns, default=None)

    @cached_property
    def all_gaps(self) -> AllGaps:
        """The devices' listed gaps (`DeviceIdle.listed`: their leads too) as one column (built on first use, then
        kept with the analysis)."""
        return AllGaps.of(tuple(d.listed for d in self.devices))


def gpu_idle(model: TraceModel, *, dataloader_share: float = T.GAP_COVER_SHARE, comm_share: float = T.GAP_COVER_SHARE,
             ops: Optional[OpIndex] = None, acts: Optional[dict[int, np.ndarray]] = None,
             judged_from_ns: Optional[int] = None) -> GpuIdle:
    """Find and classify the idle gaps of every device.

    Args:
        model: the trace.
        dataloader_share: fraction of a gap DataLoader waits must cover for the `dataloader` cause.
        comm_share: fraction of a gap CPU-side collectives must cover for the `comm` cause.
        ops: a prebuilt OpIndex of the model (built here when not given).
        acts: the model's `activity_rows_by_device` (computed here when not given).
        judged_from_ns: where the judged time begins (the first step's start); a device whose first
            activity comes later gets a lead from there (None: no lead).

    Returns:
        One DeviceIdle per device, sorted by device index.
    """
    ops = ops or OpIndex(model)
    context = _Context(dl=dataloader_union(model), comm=collective_union(model), syncs=sync_rows(model),
                       first=first_of_launch(model), dataloader_share=dataloader_share, comm_share=comm_share,
                       first_launch_corr=first_launch_correlation(model))
    devices = [_device_idle(model, dev, rows, context, ops, judged_from_ns)
               for dev, rows in sorted((acts or activity_rows_by_device(model)).items())]
    return GpuIdle(tuple(devices))


class _Context(msgspec.Struct, frozen=True):
    """What classifying gaps needs from the whole trace, computed once for every device."""

    dl: tuple[np.ndarray, np.ndarray]
    comm: tuple[np.ndarray, np.ndarray]
    syncs: np.ndarray
    first: np.ndarray
    dataloader_share: float
    comm_share: float
    first_launch_corr: Optional[int] = None  # the lowest correlation id of a launch call in the trace


def first_launch_correlation(model: TraceModel) -> Optional[int]:
    """The lowest correlation id of the trace's launch calls (None: no launch call carries one)."""
    corr = model.correlation[model.kind_in(LAUNCH_KINDS)]
    corr = corr[corr >= 0]
    return int(corr.min()) if corr.size else None


def launched_before_trace(model: TraceModel, rows: np.ndarray, first_launch_corr: Optional[int] = None) -> np.ndarray:
    """Which of one device's activities (rows, sorted by start) were launched before the trace begins: those
    with no launch call that start before the device's first activity that has one, or whose correlation id
    is below every launch call's in the trace (`first_launch_corr`; the runtime numbers them in launch order).
    A trace with no launch links at all says nothing either way (all False)."""
    linked = np.flatnonzero(model.launch_idx[rows] >= 0)
    if linked.size == 0:
        return np.zeros(rows.size, bool)
    unlinked = model.launch_idx[rows] < 0
    early = np.arange(rows.size) < linked[0]
    if first_launch_corr is not None:
        corr = model.correlation[rows]
        early |= (corr >= 0) & (corr < first_launch_corr)
    return unlinked & early


def unseen_work(model: TraceModel, gap_s: np.ndarray, gap_e: np.ndarray, next_row: np.ndarray,
                first: np.ndarray, held_min_ns: float = T.HELD_MIN_US * 1e3) -> tuple[np.ndarray, np.ndarray]:
    """The parts of gaps in which the device held work that had already been launched: from the later of
    the gap's start and the return of k's launch call, to k's start, when that is at least `held_min_ns`.
    An idle device starts launched work within microseconds, so it was busy with work the trace does not
    show. Only the first activity of a launch counts (later graph nodes wait on the graph itself).

    Returns:
        (starts, ends) of those parts, sorted.
    """
    launch = model.launch_idx[next_row]
    sel = (launch >= 0) & first[next_row]
    held_s = np.maximum(gap_s[sel], model.end_ns[launch[sel]])
    keep = gap_e[sel] - held_s >= held_min_ns
    return held_s[keep], gap_e[sel][keep]


def _device_idle(model, device, rows, context: _Context, ops: OpIndex, judged_from_ns: Optional[int]) -> DeviceIdle:
    starts, ends = model.ts_ns[rows], model.end_ns[rows]
    busy_s, busy_e = intervals.union(starts, ends)
    gap_s, gap_e = intervals.gaps_between(busy_s, busy_e)
    next_row = rows[np.minimum(np.searchsorted(starts, gap_e, side="left"), rows.size - 1)]
    launch_row = model.launch_idx[next_row]
    pre_window = launched_before_trace(model, rows, context.first_launch_corr)
    cause, sync_row = _classify(model, gap_s, gap_e, next_row, launch_row, context)
    early = np.zeros(model.n_events, bool)
    early[rows[pre_window]] = True
    cause[(cause == Cause.UNLINKED) & early[next_row]] = Cause.LAUNCH
    culprit = np.where(cause == Cause.SYNC, sync_row, -1)
    annotation, after, caller = np.full(gap_s.size, -1, np.int64), np.zeros(gap_s.size, bool), np.full(gap_s.size, -1, np.int64)
    on_host = np.flatnonzero((cause == Cause.HOST) | (cause == Cause.COMM))
    if on_host.size:
        mid = gap_s[on_host] + (gap_e[on_host] - gap_s[on_host]) // 2
        culprit[on_host], annotation[on_host], after[on_host] = ops.culprit_at(model.lane[launch_row[on_host]], mid)
    synced = np.flatnonzero(cause == Cause.SYNC)
    if synced.size:
        sync = sync_row[synced]
        caller[synced], annotation[synced], none_running = ops.culprit_at(model.lane[sync], model.ts_ns[sync])
        caller[synced[none_running]] = -1  # a bare call: no op made it, and the one before did not either
    window_s, window_e = int(busy_s[0]), int(busy_e[-1])
    busy = intervals.total(busy_s, busy_e)
    unseen_s, unseen_e = unseen_work(model, gap_s, gap_e, next_row, context.first)
    lead = _lead(model, rows[0], judged_from_ns, window_s, context, ops)
    return DeviceIdle(device=device, window_start_ns=window_s, window_end_ns=window_e, busy_ns=busy,
                      idle_ns=window_e - window_s - busy, gap_start_ns=gap_s, gap_end_ns=gap_e,
                      gap_cause=cause, gap_next_row=next_row, gap_launch_row=launch_row,
                      gap_culprit_row=culprit, gap_annotation_row=annotation, gap_culprit_after=after,
                      gap_caller_row=caller, busy_starts_ns=busy_s, busy_ends_ns=busy_e, unseen_starts_ns=unseen_s,
                      unseen_ends_ns=unseen_e, pre_window_rows=int(np.count_nonzero(pre_window)), **lead)


def _lead(model, first_row: int, judged_from_ns: Optional[int], window_s: int, context: _Context, ops: OpIndex) -> dict:
    """The lead (judged idle before the device's first activity) as DeviceIdle fields: its cause by the
    gap rules, and for host time what the launching thread was doing."""
    if judged_from_ns is None or judged_from_ns >= window_s:
        return {"lead_start_ns": window_s}
    start, end = np.array([judged_from_ns], np.int64), np.array([window_s], np.int64)
    row, launch = np.array([first_row]), model.launch_idx[[first_row]]
    no_syncs = msgspec.structs.replace(context, syncs=np.zeros(0, np.int64))  # no device work before it: no sync drained any
    cause = int(_classify(model, start, end, row, launch, no_syncs)[0][0])
    culprit = annotation = -1
    if cause in (Cause.HOST, Cause.COMM) and launch[0] >= 0:
        op, ann, after = ops.culprit_at(model.lane[launch], start + (end - start) // 2)
        frame = covering_frame(model, int(model.lane[launch[0]]), int(start[0]), int(end[0])) if after[0] or op[0] < 0 else -1
        culprit, annotation = (frame if frame >= 0 else int(op[0])), int(ann[0])
    return {"lead_start_ns": int(judged_from_ns), "lead_cause": cause, "lead_culprit_row": culprit,
            "lead_annotation_row": annotation}


def _classify(model, gap_s, gap_e, next_row, launch_row, context: _Context) -> tuple[np.ndarray, np.ndarray]:
    """One cause per gap, in the order of precedence the module docstring gives (later assignments
    win), and the sync call (row, -1 if none) that ended inside each gap."""
    cause = np.full(gap_s.size, Cause.LAUNCH, np.int8)
    linked = launch_row >= 0
    safe_launch = np.maximum(launch_row, 0)
    cause[linked & (model.ts_ns[safe_launch] > gap_s)] = Cause.HOST
    sync_row = _sync_ended_inside(model, gap_s, gap_e, model.lane[safe_launch], context.syncs)
    cause[linked & (sync_row >= 0)] = Cause.SYNC
    cause[~linked] = Cause.UNLINKED
    length = gap_e - gap_s
    cause[intervals.covered(*context.comm, gap_s, gap_e) >= context.comm_share * length] = Cause.COMM
    cause[intervals.covered(*context.dl, gap_s, gap_e) >= context.dataloader_share * length] = Cause.DATALOADER
    cause[graph_launch_mask(model, launch_row) & ~context.first[next_row]] = Cause.GRAPH
    return cause, sync_row


def _sync_ended_inside(model, gap_s, gap_e, thread, syncs) -> np.ndarray:
    """Per gap, the last synchronization call on its launching thread that ended in (gap_s, gap_e], or -1."""
    result = np.full(gap_s.size, -1, np.int64)
    if syncs.size == 0:
        return result
    sync_lane = model.lane[syncs]
    for lane in np.intersect1d(unique(thread), unique(sync_lane)):
        on_lane = syncs[sync_lane == lane]
        on_lane = on_lane[np.argsort(model.end_ns[on_lane], kind="stable")]
        sync_end = model.end_ns[on_lane]
        sel = np.flatnonzero(thread == lane)
        last = np.searchsorted(sync_end, gap_e[sel], "right") - 1
        inside = (last >= 0) & (sync_end[np.maximum(last, 0)] > gap_s[sel])
        result[sel[inside]] = on_lane[last[inside]]
    return result
