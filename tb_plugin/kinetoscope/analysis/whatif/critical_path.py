"""The critical path of each step: the chain of work that set when the step was done, walked back through the
what-if replay's dependencies (analysis/whatif/replay.py).

A step is done when the host has ended it and the device has run the work launched inside it. From that point
the walk goes back:

- from a device activity: to the stream's previous activity when it was queued behind it (the gap between
  them is a `wait` on the path: a graph's dependency bubble, a wait on another stream), else to its launch
  call on the host (the time from the call to the start is `launch` latency);
- from a host time on the main thread: back along the host to the last blocking sync before it. A sync that
  waited for the device hands the path to the device work it waited for (its return latency is `sync`);
  one that did not wait is host time like any other. DataLoader waits inside host time are `dataloader`;
- the walk stops at the step's start (the previous step's done point).

Each step's path is split into shares: `host`, `dataloader`, `sync`, `launch`, `wait`, `comm` (communication
kernels, and a stream's wait while communication ran), `backlog` (device work launched before the window) and
one entry per stream (`stream LABEL`: device work). The shares add up to the path's length.
Launches from other threads are followed to their call, and from there along the main thread's host time.
"""
from __future__ import annotations

from typing import Any, Optional

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.model import TraceModel
from ..core.selectors import comm_mask, dataloader_union
from .edits import EditError
from .model import Context
from .replay import Replayer

MAX_SEGMENTS = 2000  # segments of one step's path in an answer (a step may hold 100k kernels)
MAX_WALK = 1_000_000  # nodes one step's walk may visit


class _Walk(msgspec.Struct, frozen=True):
    """What every step's walk reads: the replay's context, the activities' ends and kinds, the intervals that
    name a wait (communication, DataLoader), each sync's awaited activity and each step's done point."""

    ctx: Context
    end: np.ndarray  # each activity's end (ns from the trace start)
    comm: np.ndarray  # bool: a communication kernel
    first: np.ndarray  # bool: the first activity of its stream
    comm_s: np.ndarray
    comm_e: np.ndarray
    dl_s: np.ndarray
    dl_e: np.ndarray
    awaited: np.ndarray  # per sync: the activity that set its completion (-1: none)
    device_last: np.ndarray  # per step: its own work's last-ending activity (-1: none)
    done: np.ndarray  # per step: when it was done
    main: int  # the thread holding the steps
    labels: tuple


def critical_paths(model: TraceModel, replayer: Optional[Replayer] = None,
                   step_indices: Optional[list[int]] = None, with_segments: bool = False) -> list[dict[str, Any]]:
    """Per step (all, or `step_indices`): its path length, shares and (with_segments) its segments, µs."""
    try:
        replayer = replayer or Replayer(model)
    except EditError:  # too long to replay (Context.of): no step has a path
        return []
    ctx = replayer.ctx
    if not ctx.steps.size:
        return []
    walk = _walk_of(model, ctx)
    out = []
    for s in (range(ctx.steps.size) if step_indices is None else step_indices):
        if 0 <= s < ctx.steps.size:
            floor = float(ctx.step_start[s]) if s == 0 else float(walk.done[s - 1])
            out.append(_entry(model, walk, s, floor, _one_time_one_segment(_step_segments(walk, s, floor)), with_segments))
    return out


def _walk_of(model: TraceModel, ctx: Context) -> _Walk:
    end = ctx.start + ctx.dur
    comm = comm_mask(model, ctx.acts)
    first = np.ones(ctx.acts.size, bool)
    first[1:] = ctx.lane[1:] != ctx.lane[:-1]
    t0 = model.start_ns
    dl_s, dl_e = dataloader_union(model)
    dl_s, dl_e = (dl_s - t0).astype(np.float64), (dl_e - t0).astype(np.float64)
    comm_s, comm_e = intervals.union(ctx.start[comm], end[comm]) if comm.any() else (np.zeros(0), np.zeros(0))
    # the activity that set each sync's completion: the latest end among the activities it waited for
    # (the running argmax of the ends in join order, read at each sync's last joined activity; ties keep the first)
    order = ctx.joined
    ends = end[order]
    new_best = np.concatenate(([True], ends[1:] > np.maximum.accumulate(ends)[:-1])) if order.size else np.zeros(0, bool)
    best = order[np.maximum.accumulate(np.where(new_best, np.arange(order.size), 0))] if order.size else order
    last = ctx.joined_bounds[1:ctx.syncs.size + 1] - 1
    awaited = np.where(last >= 0, best[np.maximum(last, 0)] if order.size else -1, -1).astype(np.int64)
    # device end of each step's own work and the done points (as replay._step_times, unedited)
    n_steps = ctx.steps.size
    device_last = np.full(n_steps, -1, np.int64)
    for s in range(n_steps):
        lo = ctx.step_bounds[s]
        hi = ctx.step_bounds[s + 1] if s + 1 < n_steps else ctx.by_step.size
        if ctx.step_has_work[s] and hi > lo:
            rows = ctx.by_step[lo:hi]
            device_last[s] = rows[np.argmax(end[rows])]
    device_end = np.full(n_steps, -np.inf)
    device_end[device_last >= 0] = end[device_last[device_last >= 0]]
    done = np.maximum.accumulate(np.maximum(ctx.step_end, device_end))
    main = int(np.bincount(model.lane[ctx.steps]).argmax())  # the thread holding the steps
    return _Walk(ctx, end, comm, first, comm_s, comm_e, dl_s, dl_e, awaited, device_last, done, main, model.lane_label)


def _step_segments(w: _Walk, s: int, floor: float) -> list[tuple[str, float, float, int]]:
    """The path of step `s`, walked back from its done point to `floor`: (kind, start, end, lane) segments."""
    ctx, end = w.ctx, w.end
    segments: list[tuple[str, float, float, int]] = []
    if w.device_last[s] >= 0 and end[w.device_last[s]] >= ctx.step_end[s]:
        node: tuple[str, float, int] = ("device", 0.0, int(w.device_last[s]))
    else:
        node = ("host", float(ctx.step_end[s]), -1)
    for _ in range(MAX_WALK):
        kind, t, i = node
        found = _from_device(w, segments, i, floor) if kind == "device" else _from_host(w, segments, t, floor)
        if found is None:
            break
        node = found
    return segments


def _from_device(w: _Walk, segments: list, i: int, floor: float) -> Optional[tuple[str, float, int]]:
    """Activity `i` on the path, and the node before it: the stream's previous activity when it was queued behind
    it, else its launch call (None: the walk ends here)."""
    ctx, end = w.ctx, w.end
    lo = max(float(ctx.start[i]), floor)
    label = "comm" if w.comm[i] else f"stream {w.labels[int(ctx.lane[i])]}"
    lane = int(ctx.lane[i])
    segments.append((label, lo, float(end[i]), lane))
    if ctx.start[i] <= floor:
        return None
    if ctx.queued[i] and not w.first[i]:
        prev_end = float(end[i - 1])
        if ctx.start[i] > prev_end:
            _wait(segments, max(prev_end, floor), float(ctx.start[i]), w.comm_s, w.comm_e, lane)
        return ("device", 0.0, i - 1)
    if ctx.linked[i]:
        call = float(ctx.host[i])
        segments.append(("launch", max(call, floor), float(ctx.start[i]), lane))
        return ("host", call, -1)
    segments.append(("backlog", floor, float(ctx.start[i]), lane))  # launched before the window: the device's backlog
    return None


def _from_host(w: _Walk, segments: list, t: float, floor: float) -> Optional[tuple[str, float, int]]:
    """Host time up to `t` on the path, back to the last sync that waited for the device (its awaited activity is
    the node before it; None: the walk reached the floor)."""
    ctx = w.ctx
    j = int(np.searchsorted(ctx.sync_end, t, side="right")) - 1
    while j >= 0 and not ctx.sync_waited[j] and ctx.sync_end[j] > floor:
        j -= 1  # a sync that did not wait is host time like any other
    if j >= 0 and ctx.sync_end[j] > floor and w.awaited[j] >= 0:
        _host(segments, float(ctx.sync_end[j]), t, w.dl_s, w.dl_e, w.main)
        completion = float(w.end[w.awaited[j]])
        segments.append(("sync", max(completion, floor), float(ctx.sync_end[j]), w.main))
        return None if completion <= floor else ("device", 0.0, int(w.awaited[j]))
    _host(segments, floor, t, w.dl_s, w.dl_e, w.main)
    return None


def _one_time_one_segment(segments: list[tuple[str, float, float, int]]) -> list[tuple[float, float, str, int]]:
    """Where two segments overlap (kernels overlapping on a stream by PDL), the later one starts where the earlier
    ends, so the shares add up to the path's length."""
    kept: list[tuple[float, float, str, int]] = []
    reach = -np.inf
    for a, b, label, lane in sorted((a, b, label, lane) for label, a, b, lane in segments if b > a):
        a = max(a, reach)
        if b > a:
            kept.append((a, b, label, lane))
            reach = b
    return kept


def _entry(model: TraceModel, w: _Walk, s: int, floor: float, kept: list, with_segments: bool) -> dict[str, Any]:
    shares: dict[str, float] = {}
    for a, b, label, _lane in kept:
        shares[label] = shares.get(label, 0.0) + (b - a) / 1e3
    entry: dict[str, Any] = {"step": model.shown_names[int(model.name_id[w.ctx.steps[s]])], "index": s,
                             "start_us": round(floor / 1e3, 3), "end_us": round(float(w.done[s]) / 1e3, 3),
                             "length_us": round(sum(shares.values()), 3),
                             "shares_us": {k: round(v, 3) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])}}
    if with_segments:
        entry["segments"] = [{"kind": label, "lane": lane, "start_us": round(a / 1e3, 3), "end_us": round(b / 1e3, 3)}
                             for a, b, label, lane in kept[:MAX_SEGMENTS]]
        entry["segments_total"] = len(kept)
    return entry


def _wait(segments: list, a: float, b: float, comm_s: np.ndarray, comm_e: np.ndarray, lane: int) -> None:
    """A stream's wait [a, b) on the path: `comm` where a communication kernel ran meanwhile, else `wait`."""
    covered = float(intervals.covered(comm_s, comm_e, np.array([a]), np.array([b]))[0]) if comm_s.size else 0.0
    if covered > 0:
        segments.append(("comm", a, a + covered, lane))
        if b - a - covered > 0:
            segments.append(("wait", a + covered, b, lane))
    else:
        segments.append(("wait", a, b, lane))


def _host(segments: list, a: float, b: float, dl_s: np.ndarray, dl_e: np.ndarray, lane: int) -> None:
    """Host time [a, b) on the path, its DataLoader waits apart."""
    if b <= a:
        return
    waits = intervals.covered(dl_s, dl_e, np.array([a]), np.array([b]))[0] if dl_s.size else 0.0
    if waits > 0:
        # the waits inside, as their own segments (clipped to [a, b))
        k0 = int(np.searchsorted(dl_e, a, side="right"))
        k1 = int(np.searchsorted(dl_s, b, side="left"))
        cursor = a
        for k in range(k0, k1):
            s, e = max(float(dl_s[k]), a), min(float(dl_e[k]), b)
            if s > cursor:
                segments.append(("host", cursor, s, lane))
            if e > s:
                segments.append(("dataloader", s, e, lane))
            cursor = max(cursor, e)
        if b > cursor:
            segments.append(("host", cursor, b, lane))
    else:
        segments.append(("host", a, b, lane))
