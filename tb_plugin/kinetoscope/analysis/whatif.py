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

A step's predicted time is the later of its host time and its device period (from the end of the previous
step's device work to the end of its own): the host cannot run ahead of the device for long (the launch queue
and the caching allocator stop it), and a device cannot finish a step before the host has issued it.

Edits, as the CLI and the routes spell them:

    dataloader=0            remove every DataLoader wait
    dataloader-workers=K    each step's DataLoader wait becomes max(0, wait / K - the step's time without it):
                            K workers load batches in parallel, overlapped with the previous step
    sync:NAME=0             remove the syncs made by the call NAME or inside an op NAME (`sync:aten::item=0`)
    sync:NAME*F             shorten those syncs' waits to a fraction F
    host:NAME*F             scale the host time of the ops (or annotation regions) named NAME by F
    kernel:PATTERN*F        scale the device time of kernels whose name contains PATTERN (a glob with * or ?)
"""
from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..trace.kinds import LaneKind
from ..trace.model import TraceModel
from . import intervals
from .selectors import cpu_rows, dataloader_union, iteration_rows, parent_rows, sync_rows

MAX_EDITS = 16  # edits one request may apply
MAX_NAME = 1000  # characters of a NAME or PATTERN
MAX_FACTOR = 100.0  # the largest scale factor an edit may give
NOT_YET = ("fuse:", "comm=", "straggler=")  # edits of the issue this version does not replay yet

NO_STEPS = "the trace has no steps (ProfilerStep#N or serving iterations) to re-time"
SPELLINGS = ("dataloader=0", "dataloader-workers=K", "sync:NAME=0", "sync:NAME*F", "host:NAME*F", "kernel:PATTERN*F")


class EditError(ValueError):
    """An edit that cannot be read or applied; the message names it."""


@dataclass(frozen=True)
class Edit:
    """One change to replay: `kind` is dataloader, dataloader-workers, sync, host or kernel."""

    kind: str
    target: str = ""  # NAME or PATTERN
    factor: float = 0.0  # new length as a share of the recorded one (0 removes it); for dataloader-workers, K
    text: str = ""


def parse_edit(text: str) -> Edit:
    """Reads one edit in the CLI's spelling (module docstring).

    Raises:
        EditError: an unknown spelling, an empty name, or a factor that is not a number in [0, MAX_FACTOR].
    """
    t = text.strip()
    if t == "dataloader=0":
        return Edit("dataloader", "", 0.0, t)
    m = re.fullmatch(r"dataloader-workers=(\d{1,4})", t)
    if m:
        workers = int(m.group(1))
        if workers < 1:
            raise EditError(f"{t!r}: K must be at least 1")
        return Edit("dataloader-workers", "", float(workers), t)
    for kind in ("sync", "host", "kernel"):
        if t.startswith(kind + ":"):
            body = t[len(kind) + 1:]
            if body.endswith("=0"):
                name, factor = body[:-2], 0.0
            else:
                name, star, number = body.rpartition("*")
                if not star:
                    raise EditError(f"{t!r}: write {kind}:NAME*F or {kind}:NAME=0")
                try:
                    factor = float(number)
                except ValueError:
                    raise EditError(f"{t!r}: {number!r} is not a number") from None
            if not name or len(name) > MAX_NAME:
                raise EditError(f"{t!r}: the name must have 1 to {MAX_NAME} characters")
            if not (math.isfinite(factor) and 0.0 <= factor <= MAX_FACTOR):
                raise EditError(f"{t!r}: the factor must be a number from 0 to {MAX_FACTOR:g}")
            return Edit(kind, name, factor, t)
    if t.startswith(NOT_YET):
        raise EditError(f"{t!r}: this edit is not replayed yet; this version replays {', '.join(SPELLINGS)}")
    raise EditError(f"{t[:200]!r} is not an edit; write one of {', '.join(SPELLINGS)}")


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
    def predicted_ns(self) -> np.ndarray:
        """The recorded step less the replay's saving, and never less than the host's own edited time: with no
        edit, exactly the recorded step. Where the device runs behind the host (the replay's step is longer than
        the recorded one), a device-side saving counts only beyond that lag."""
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
        """Median step time saved: the recorded median minus the predicted one."""
        return self.median_recorded_ns - self.median_predicted_ns


def whatif(model: TraceModel, edits: tuple[Edit, ...] = ()) -> WhatIf:
    """Re-times the steps of `model` with `edits` applied (module docstring). A trace without steps gives
    empty arrays (`whatif_entry` says why).

    Raises:
        EditError: more than MAX_EDITS edits are given.
    """
    if len(edits) > MAX_EDITS:
        raise EditError(f"at most {MAX_EDITS} edits at once")
    ctx = _Context.of(model)
    matched: dict[str, int] = {}
    base, _, _ = _replay(ctx, _Plan())
    plan = _plan(ctx, edits, matched)
    workers = [e for e in edits if e.kind == "dataloader-workers"]
    if workers:
        plan = _with_workers(ctx, plan, int(workers[-1].factor), matched, workers[-1].text)
    edited, edited_host, _ = _replay(ctx, plan)
    names = tuple(model.shown_names[i] for i in model.name_id[ctx.steps])
    return WhatIf(names, (ctx.step_end - ctx.step_start).astype(np.int64), base, edited, edited_host,
                  tuple(e.text for e in edits), matched)


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
    latency: np.ndarray  # L: launch to start, for the activity that waits only for its launch
    gap: np.ndarray  # B: the recorded gap after the stream's previous activity, for a queued one
    segment: np.ndarray  # how many main-thread syncs began before the launch
    joins: np.ndarray  # the first sync that may wait for the activity (syncs.size: none)
    syncs: np.ndarray  # main-thread sync rows, by start
    sync_start: np.ndarray
    sync_end: np.ndarray
    sync_waited: np.ndarray  # bool: the device was still running work the sync waited for when it began
    sync_own: np.ndarray  # the call's own length when it did not wait for the device, else 0
    sync_tail: np.ndarray  # from the end of the awaited device work to the sync's return, when it waited

    @staticmethod
    def of(model: TraceModel) -> "_Context":
        t0 = model.start_ns
        steps = iteration_rows(model)
        main = int(np.bincount(model.lane[steps]).argmax()) if steps.size else -1
        step_start = (model.ts_ns[steps] - t0).astype(np.float64)
        step_end = (model.end_ns[steps] - t0).astype(np.float64)
        acts = np.flatnonzero(model.activity_mask() & (model.lane_kind[model.lane] == LaneKind.GPU))
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
        return _Context(model, steps, step_start, step_end, acts, lane, start, dur, host, linked, latency, gap,
                        segment, joins, syncs, sync_start, sync_end, waited, sync_own, sync_tail)


def _lane_running_max(values: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Running maximum of `values` that restarts where `first` is True (rows grouped by lane)."""
    out = values.copy()
    starts = np.flatnonzero(first)
    bounds = np.append(starts, values.size)
    for a, b in zip(bounds[:-1], bounds[1:]):
        out[a:b] = np.maximum.accumulate(values[a:b])
    return out


def _plan(ctx: _Context, edits: tuple[Edit, ...], matched: dict[str, int]) -> _Plan:
    model, t0 = ctx.model, ctx.model.start_ns
    cuts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    plan = _Plan()
    for edit in edits:
        if edit.kind == "dataloader":
            s, e = dataloader_union(model)
            cuts.append(((s - t0).astype(np.float64), (e - t0).astype(np.float64), np.zeros(s.size)))
            matched[edit.text] = int(s.size)
        elif edit.kind == "host":
            rows = cpu_rows(model)
            ids = model.name_ids_where(lambda n: n == edit.target)
            rows = rows[model.name_in(ids, rows)]
            s, e = intervals.union(model.ts_ns[rows], model.end_ns[rows])
            cuts.append(((s - t0).astype(np.float64), (e - t0).astype(np.float64), np.full(s.size, edit.factor)))
            matched[edit.text] = int(rows.size)
        elif edit.kind == "kernel":
            pattern = edit.target
            glob = any(ch in pattern for ch in "*?[")
            low = pattern.lower()
            ids = model.name_ids_where(lambda n: fnmatch.fnmatchcase(n, pattern) if glob else low in n.lower())
            hit = model.name_in(ids, ctx.acts)
            scale = plan.dur_scale if plan.dur_scale is not None else np.ones(ctx.acts.size)
            scale[hit] *= edit.factor
            plan.dur_scale = scale
            matched[edit.text] = int(hit.sum())
        elif edit.kind == "sync":
            hit = _syncs_named(ctx, edit.target)
            factor = plan.sync_factor if plan.sync_factor is not None else np.ones(ctx.syncs.size)
            factor[hit] *= edit.factor
            plan.sync_factor = factor
            matched[edit.text] = int(hit.sum())
    if cuts:
        plan.cut_start, plan.cut_end, plan.cut_factor = _disjoint(*(np.concatenate(parts) for parts in zip(*cuts)))
    return plan


def _syncs_named(ctx: _Context, name: str) -> np.ndarray:
    """Which main-thread syncs are the call `name` or run inside an op named `name` (any enclosing level)."""
    model = ctx.model
    ids = model.name_ids_where(lambda n: n == name)
    hit = model.name_in(ids, ctx.syncs)
    if ctx.syncs.size and ids.size:
        parent = parent_rows(model)
        current = parent[ctx.syncs]
        while np.any(current >= 0):
            alive = current >= 0
            hit[alive] |= model.name_in(ids, current[alive])
            current = np.where(alive, parent[np.maximum(current, 0)], -1)
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
    s, e = dataloader_union(model)
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


def _replay(ctx: _Context, plan: _Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each step's time and host time under `plan` (ns), and each activity's replayed end."""
    dur = ctx.dur if plan.dur_scale is None else ctx.dur * plan.dur_scale
    warped_host = _warp(plan, ctx.host)
    end = np.zeros(ctx.acts.size)
    carry: dict[int, float] = {}
    offset = 0.0  # what the syncs so far moved host time by
    offsets = np.zeros(ctx.syncs.size + 1)
    completion = -np.inf
    order = np.argsort(ctx.segment, kind="stable")  # (lane, start) order kept inside each segment
    bounds = np.searchsorted(ctx.segment[order], np.arange(ctx.syncs.size + 2))
    joined = np.argsort(ctx.joins, kind="stable")
    joined_bounds = np.searchsorted(ctx.joins[joined], np.arange(ctx.syncs.size + 2))
    sync_start = _warp(plan, ctx.sync_start)
    sync_end_w = _warp(plan, ctx.sync_end)
    for j in range(ctx.syncs.size + 1):
        rows = order[bounds[j]:bounds[j + 1]]
        if rows.size:
            a = warped_host[rows] + offset + ctx.latency[rows]
            end[rows] = _stream_ends(ctx.lane[rows], a, ctx.gap[rows], dur[rows], carry)
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
    if not ctx.steps.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), end
    # host time of each step boundary: warped, plus what the syncs ended before it moved it by
    def host_time(t: np.ndarray) -> np.ndarray:
        moved = offsets[np.searchsorted(ctx.sync_end, t, side="right")]
        return _warp(plan, t) + moved

    start, stop = host_time(ctx.step_start), host_time(ctx.step_end)
    host_len = stop - start
    # device period: from the end of the previous step's device work to the end of this step's
    step_of = np.searchsorted(ctx.step_start, ctx.host, side="right") - 1
    inside = ctx.linked & (step_of >= 0) & (ctx.host < ctx.step_end[np.maximum(step_of, 0)])
    device_end = np.full(ctx.steps.size, -np.inf)
    np.maximum.at(device_end, step_of[inside], end[inside])
    previous = np.concatenate(([-np.inf], device_end[:-1]))
    has = np.isfinite(device_end) & np.isfinite(previous)
    period = np.where(has, device_end - np.maximum(previous, start), 0.0)
    return np.round(np.maximum(host_len, period)).astype(np.int64), np.round(host_len).astype(np.int64), end


def _stream_ends(lane: np.ndarray, a: np.ndarray, gap: np.ndarray, dur: np.ndarray, carry: dict[int, float]) -> np.ndarray:
    """Ends of activities on their streams (rows grouped by lane, in stream order): the running maximum of
    the module docstring, continuing from `carry` (each lane's last end) and updating it."""
    out = np.empty(lane.size)
    first = np.ones(lane.size, bool)
    first[1:] = lane[1:] != lane[:-1]
    bounds = np.append(np.flatnonzero(first), lane.size)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key = int(lane[lo])
        c = np.cumsum(gap[lo:hi] + dur[lo:hi])
        best = np.maximum.accumulate(a[lo:hi] + dur[lo:hi] - c)
        best = np.maximum(best, carry.get(key, -np.inf))
        out[lo:hi] = c + best
        carry[key] = float(out[hi - 1])
    return out


def whatif_entry(result: WhatIf) -> dict:
    """The JSON form: per step the recorded and predicted time, their medians and the saving (µs)."""
    def us(values) -> list[float]:
        return [round(float(v) / 1e3, 3) for v in values]

    predicted = result.predicted_ns
    if not predicted.size:
        return {"edits": list(result.edits), "matched": dict(result.matched), "steps": [],
                "recorded_median_step_us": None, "median_step_us": None, "saving_us": None, "saving_share": None,
                "replay_median_step_us": None, "note": NO_STEPS}
    return {
        "edits": list(result.edits),
        "matched": dict(result.matched),
        "steps": [{"name": name, "recorded_us": rec, "predicted_us": pred, "replay_us": rep, "replay_edited_us": ed}
                  for name, rec, pred, rep, ed in zip(result.step_names, us(result.recorded_ns), us(predicted),
                                                       us(result.replayed_ns), us(result.edited_ns))],
        "recorded_median_step_us": round(result.median_recorded_ns / 1e3, 3),
        "median_step_us": round(result.median_predicted_ns / 1e3, 3),
        "saving_us": round(result.saving_ns / 1e3, 3),
        "saving_share": round(result.saving_ns / result.median_recorded_ns, 4) if result.median_recorded_ns > 0 else None,
        "replay_median_step_us": round(result.median_replayed_ns / 1e3, 3),
    }
