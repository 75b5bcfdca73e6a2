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
    unlinked    k has no launch call in the trace
    sync        a blocking synchronization call on T ended inside the gap (the CPU drained the device
                first); polls such as cudaEventQuery/cudaStreamQuery never block and never count
    host        L started after the gap began (the CPU had not asked for the work yet)
    launch      L started before the gap began (requested in time, reached the device late)

The culprit of a host or comm gap is what T was doing at the gap's midpoint: the innermost operator
running then (or the one T finished last, when none runs), with the innermost user annotation around
it. A sync gap's culprit is the sync call, with the operator that made it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..trace.model import TraceModel
from . import intervals
from . import thresholds as T
from .selectors import OpIndex, activity_rows_by_device, collective_union, dataloader_union, first_of_launch, graph_launch_mask, sync_rows


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


@dataclass(frozen=True)
class DeviceIdle:
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
    busy_starts_ns: np.ndarray = field(repr=False, default_factory=lambda: intervals.EMPTY)
    busy_ends_ns: np.ndarray = field(repr=False, default_factory=lambda: intervals.EMPTY)

    @property
    def window_ns(self) -> int:
        return self.window_end_ns - self.window_start_ns

    @property
    def idle_pct(self) -> float:
        return 100.0 * self.idle_ns / self.window_ns if self.window_ns > 0 else 0.0

    def idle_by_cause_ns(self) -> dict[str, int]:
        """Idle time per cause; the values add up to `idle_ns`."""
        length = self.gap_end_ns - self.gap_start_ns
        sums = np.bincount(self.gap_cause.astype(np.int64), weights=length, minlength=len(Cause))
        return {name: int(sums[c]) for c, name in enumerate(CAUSE_NAMES)}


@dataclass(frozen=True)
class GpuIdle:
    """Idle analysis of every device with GPU activity."""

    devices: tuple[DeviceIdle, ...]

    def busiest(self) -> Optional[DeviceIdle]:
        """The device with the most busy time (None without GPU activity)."""
        return max(self.devices, key=lambda d: d.busy_ns, default=None)


def gpu_idle(model: TraceModel, *, dataloader_share: float = T.GAP_COVER_SHARE, comm_share: float = T.GAP_COVER_SHARE,
             ops: Optional[OpIndex] = None, acts: Optional[dict[int, np.ndarray]] = None) -> GpuIdle:
    """Find and classify the idle gaps of every device.

    Args:
        model: the trace.
        dataloader_share: fraction of a gap DataLoader waits must cover for the `dataloader` cause.
        comm_share: fraction of a gap CPU-side collectives must cover for the `comm` cause.
        ops: a prebuilt OpIndex of the model (built here when not given).
        acts: the model's `activity_rows_by_device` (computed here when not given).

    Returns:
        One DeviceIdle per device, sorted by device index.
    """
    ops = ops or OpIndex(model)
    context = _Context(dl=dataloader_union(model), comm=collective_union(model), syncs=sync_rows(model),
                       first=first_of_launch(model), dataloader_share=dataloader_share, comm_share=comm_share)
    devices = [_device_idle(model, dev, rows, context, ops) for dev, rows in sorted((acts or activity_rows_by_device(model)).items())]
    return GpuIdle(tuple(devices))


@dataclass(frozen=True)
class _Context:
    """What classifying gaps needs from the whole trace, computed once for every device."""

    dl: tuple[np.ndarray, np.ndarray]
    comm: tuple[np.ndarray, np.ndarray]
    syncs: np.ndarray
    first: np.ndarray
    dataloader_share: float
    comm_share: float


def _device_idle(model, device, rows, context: _Context, ops: OpIndex) -> DeviceIdle:
    starts, ends = model.ts_ns[rows], model.end_ns[rows]
    busy_s, busy_e = intervals.union(starts, ends)
    gap_s, gap_e = intervals.gaps_between(busy_s, busy_e)
    next_row = rows[np.minimum(np.searchsorted(starts, gap_e, side="left"), rows.size - 1)]
    launch_row = model.launch_idx[next_row]
    cause, sync_row = _classify(model, gap_s, gap_e, next_row, launch_row, context)
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
    return DeviceIdle(device=device, window_start_ns=window_s, window_end_ns=window_e, busy_ns=busy,
                      idle_ns=window_e - window_s - busy, gap_start_ns=gap_s, gap_end_ns=gap_e,
                      gap_cause=cause, gap_next_row=next_row, gap_launch_row=launch_row,
                      gap_culprit_row=culprit, gap_annotation_row=annotation, gap_culprit_after=after,
                      gap_caller_row=caller, busy_starts_ns=busy_s, busy_ends_ns=busy_e)


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
    for lane in np.intersect1d(np.unique(thread), np.unique(sync_lane)):
        on_lane = syncs[sync_lane == lane]
        on_lane = on_lane[np.argsort(model.end_ns[on_lane], kind="stable")]
        sync_end = model.end_ns[on_lane]
        sel = np.flatnonzero(thread == lane)
        last = np.searchsorted(sync_end, gap_e[sel], "right") - 1
        inside = (last >= 0) & (sync_end[np.maximum(last, 0)] > gap_s[sel])
        result[sel[inside]] = on_lane[last[inside]]
    return result
