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
                            any of OP1|OP2|... (once per kernel however many of these ops nest around its launch),
                            and of those a graph replayed for such an op (analysis/graphs)
    roofline:CATEGORY>=P%   the kernels launched by the op calls of CATEGORY (gemm, attention, conv, elementwise,
                            norm, reduce, copy, other) that run below P% of their roof (analysis/roofline) run at P%:
                            their length times (their share of the roof) / P
    precision:bf16          the GEMM, convolution and attention op calls running in fp32 or tf32 run in bf16 (or
                            fp16) at their share of the roof: their kernels take their time at the bf16 roof (the
                            bf16 peak, half the bytes) over their time at the roof now (analysis/roofline/precision.py)
    fuse:NAME               the kernels launched inside each occurrence of the op or region NAME become one kernel
                            per stream, as long as all of them; the other launch calls cost no host time
    comm=hidden             communication hidden under compute: communication kernels keep their length on their
                            own streams, but no other stream, sync or step end waits for them any more, and
                            the host stops waiting in CPU collectives
    graph                   each step's launches between syncs captured once and replayed as a CUDA graph: the host
                            time from a region's first launch to its last becomes one graph launch, its kernels
                            follow each other a graph node's latency apart; steps with another kernel sequence
                            (dynamic shapes) stay eager (analysis/whatif/capture.py)
    prep=overlap            the host work inside each step before its first launch runs ahead, beside the step
                            before (moved into the DataLoader's workers or a prefetch thread): its time w becomes
                            max(0, w - the step's time without it)
    warmup=median           the first step as fast as the median of the others: its host time and the device
                            time of the work launched inside it scaled by median / first (one-time costs gone)
    straggler=median        a multi-rank run's stragglers as fast as its median rank (analysis/distributed/straggler.py)
"""
from __future__ import annotations

import math
from typing import Any, Optional

import msgspec
import numpy as np

from ...trace import intervals
from ...trace.model import TraceModel
from ..core.selectors import dataloader_union
from ..roofline.figures import Roofline
from ..tables.index import TableIndex
from .edits import MAX_EDITS, NO_STEPS, STRAGGLER, Edit, EditError
from .model import Context, Plan, cached
from .plan import disjoint, plan_of

try:
    from . import _replay as _accel
except ImportError:  # built without a C compiler: the numpy pass
    _accel = None
ACCELERATED = _accel is not None

DEVICE_BEHIND = 1.05  # replayed / recorded median step above which the device runs behind the host



class WhatIf(msgspec.Struct, frozen=True):
    """Per step (in time order): the recorded time, the replay's step time without and with the edits, and the
    predicted time: the recorded one less what the edits saved in the replay (ns)."""

    step_names: tuple[str, ...]
    recorded_ns: np.ndarray  # the step's recorded length (ProfilerStep start to end, as `steps` gives it)
    replayed_ns: np.ndarray  # the unedited replay's step time (host time or device period, the later)
    edited_ns: np.ndarray  # the same with the edits applied
    edited_host_ns: np.ndarray  # the edited replay's host time per step (ProfilerStep start to end)
    edits: tuple[str, ...]
    matched: dict[str, int] = msgspec.field(default_factory=dict)  # edit -> how many events it changed
    notes: dict[str, str] = msgspec.field(default_factory=dict)  # edit -> what it could not change, and why

    @property
    def device_behind(self) -> bool:
        """The device runs behind the host: the replay's median step is over DEVICE_BEHIND times the recorded one
        (the launch queue grows through the window; the recorded host steps are not the run's pace)."""
        return bool(self.recorded_ns.size) and self.median_replayed_ns > DEVICE_BEHIND * self.median_recorded_ns

    @property
    def base_ns(self) -> float:
        """The median step savings are shares of: the recorded one, or the replay's where the device runs behind."""
        return self.median_replayed_ns if self.device_behind else self.median_recorded_ns

    def share_base(self, judged_ns: float) -> tuple[float, str]:
        """The step a saving's share is of, and its name: the verdict's judged step (`judged_step_ns`) where given
        and the device keeps the host's pace ("judged"), else `base_ns` ("replayed" or "recorded")."""
        if judged_ns > 0 and not self.device_behind:
            return judged_ns, "judged"
        return self.base_ns, "replayed" if self.device_behind else "recorded"

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

    def __init__(self, model: TraceModel, roofline: Optional[Roofline] = None, tables: Optional[TableIndex] = None) -> None:
        """`roofline`: the trace's Roofline (analysis.roofline), for `roofline:` edits (else one is made); `tables`:
        its TableIndex, whose graph attribution `kernel:in:OP` reaches replayed kernels through (else one is made
        when the trace replays graphs)."""
        self.ctx = Context.of(model)
        if roofline is not None:
            self.ctx.cache["roofline"] = roofline
        if tables is not None:
            self.ctx.cache["tables"] = tables
        self.base = _replay(self.ctx, Plan())[0]

    def apply(self, edits: tuple[Edit, ...] = ()) -> WhatIf:
        """The steps re-timed with `edits` (see `whatif`)."""
        if len(edits) > MAX_EDITS:
            raise EditError(f"at most {MAX_EDITS} edits at once")
        if any(e.kind == "straggler" for e in edits):
            raise EditError(f"{STRAGGLER} re-times a multi-rank run (its folder), not one trace")
        ctx, matched = self.ctx, {}
        plan = plan_of(ctx, edits, matched)
        workers = [e for e in edits if e.kind == "dataloader-workers"]
        if workers:
            plan = _with_workers(ctx, plan, int(workers[-1].factor), matched, workers[-1].text)
        prep = [e for e in edits if e.kind == "prep"]
        if prep:
            s, e = prep_intervals(ctx)
            matched[prep[-1].text] = int(s.size)
            plan = _run_ahead(ctx, plan, s, e, 1)
        edited, edited_host, _ = _replay(ctx, plan)
        return WhatIf(ctx.step_names, (ctx.step_end - ctx.step_start).astype(np.int64), self.base, edited, edited_host,
                      tuple(e.text for e in edits), matched, dict(plan.notes))



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
    ctx = Context.of(model)
    _, _, end = _replay(ctx, Plan())
    return ctx.acts, ctx.start + ctx.dur, end



def _with_workers(ctx: Context, plan: Plan, workers: int, matched: dict[str, int], text: str) -> Plan:
    """The plan with each step's DataLoader wait w replaced by max(0, w / K - the step's time without it)."""
    model, t0 = ctx.model, ctx.model.start_ns
    s, e = cached(ctx, "dataloader", lambda: dataloader_union(model))
    s, e = (s - t0).astype(np.float64), (e - t0).astype(np.float64)
    matched[text] = int(s.size)
    return _run_ahead(ctx, plan, s, e, workers)


def prep_intervals(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """`prep=overlap`'s host intervals (ns from the trace start): in each step, from its start to its first launch
    call (the data preparation a prefetch thread or the DataLoader's workers would run ahead)."""
    bounds = np.append(ctx.step_bounds, ctx.by_step.size)
    starts, ends = [], []
    for k in range(ctx.step_start.size):
        mine = ctx.by_step[bounds[k]:bounds[k + 1]]
        first = float(ctx.host[mine].min()) if mine.size else float(ctx.step_end[k])
        if first > ctx.step_start[k]:
            starts.append(float(ctx.step_start[k]))
            ends.append(min(first, float(ctx.step_end[k])))
    return np.array(starts, np.float64), np.array(ends, np.float64)


def _run_ahead(ctx: Context, plan: Plan, s: np.ndarray, e: np.ndarray, workers: int) -> Plan:
    """The plan with each step's host intervals `s`-`e` (a DataLoader wait, data preparation) run ahead by
    `workers` threads beside the step: their time w becomes max(0, w / K - the step's time without it)."""
    if not s.size or not ctx.step_start.size:
        return plan
    without = Plan(*disjoint(np.concatenate((plan.cut_start, s)), np.concatenate((plan.cut_end, e)),
                               np.concatenate((plan.cut_factor, np.zeros(s.size)))),
                    dur_scale=plan.dur_scale, sync_factor=plan.sync_factor)
    bare, _, _ = _replay(ctx, without)
    wait = intervals.covered(s.astype(np.int64), e.astype(np.int64), ctx.step_start.astype(np.int64),
                             ctx.step_end.astype(np.int64)).astype(np.float64)
    new_wait = np.maximum(wait / workers - bare, 0.0)
    share = np.divide(new_wait, wait, out=np.ones_like(wait), where=wait > 0)
    step = np.clip(np.searchsorted(ctx.step_start, s, side="right") - 1, 0, None)
    factor = np.where(s < ctx.step_start[0], share[0], share[step])
    return Plan(*disjoint(np.concatenate((plan.cut_start, s)), np.concatenate((plan.cut_end, e)),
                            np.concatenate((plan.cut_factor, factor))),
                 dur_scale=plan.dur_scale, sync_factor=plan.sync_factor)



def _warp(plan: Plan, t: np.ndarray) -> np.ndarray:
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



def _replay(ctx: Context, plan: Plan, accelerated: Optional[bool] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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



def _awaited(ctx: Context, plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """The activities each sync may wait for, grouped by sync: all of them, less those no one waits for."""
    if plan.unawaited is None:
        return ctx.joined, ctx.joined_bounds
    joined = ctx.joined[~plan.unawaited[ctx.joined]]
    return joined, np.searchsorted(ctx.joins[joined], np.arange(ctx.syncs.size + 2))



def _pass_c(ctx: Context, plan: Plan, dur: np.ndarray, ready: np.ndarray, gap: np.ndarray, sync_start: np.ndarray,
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



def _pass_py(ctx: Context, plan: Plan, dur: np.ndarray, ready: np.ndarray, gap: np.ndarray, sync_start: np.ndarray,
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



def _step_times(ctx: Context, plan: Plan, dur: np.ndarray, end: np.ndarray,
                offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not ctx.step_start.size:
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
    device_end = np.full(ctx.step_start.size, -np.inf)
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



MAX_WHATIF_STEPS = 1000  # steps one what-if answer lists (a file of 200,000 steps made a 23 MB answer); `steps_offset` pages


def whatif_entry(result: WhatIf, offset: int = 0, limit: int = MAX_WHATIF_STEPS, judged_ns: float = math.nan) -> dict:
    """The JSON form: per step the recorded and predicted time (steps `offset` to `offset + limit`, at most
    MAX_WHATIF_STEPS), their medians, p90s and the saving (µs), and the step the edits changed most. `judged_ns`:
    the verdict's judged step (`judged_step_ns`), which the saving's share is of where given (`share_of`)."""
    def us(values) -> list[float]:
        return [round(float(v) / 1e3, 3) for v in values]

    predicted = result.predicted_ns
    if not predicted.size:
        return {"edits": list(result.edits), "matched": dict(result.matched), "steps": [],
                "recorded_median_step_us": None, "median_step_us": None, "saving_us": None, "saving_share": None,
                "share_of": None, "share_base_us": None,
                "replay_median_step_us": None, "device_behind": False, "note": NO_STEPS}
    lo = min(max(int(offset), 0), predicted.size)
    hi = min(lo + min(max(int(limit), 0), MAX_WHATIF_STEPS), predicted.size)
    page = slice(lo, hi)
    changed = int(np.argmax(np.abs(result.recorded_ns - predicted)))
    return {
        "edits": list(result.edits),
        "matched": dict(result.matched),
        "steps": [{"name": name, "recorded_us": rec, "predicted_us": pred, "replay_us": rep, "replay_edited_us": ed}
                  for name, rec, pred, rep, ed in zip(result.step_names[page], us(result.recorded_ns[page]),
                                                       us(predicted[page]), us(result.replayed_ns[page]),
                                                       us(result.edited_ns[page]))],
        "recorded_median_step_us": round(result.median_recorded_ns / 1e3, 3),
        "median_step_us": round(result.median_predicted_ns / 1e3, 3),
        "saving_us": round(result.saving_ns / 1e3, 3),
        **_share(result, judged_ns),
        "replay_median_step_us": round(result.median_replayed_ns / 1e3, 3),
        "device_behind": result.device_behind,
        **({"notes": dict(result.notes)} if result.notes else {}),
        **({} if lo == 0 and hi == predicted.size else _paged(result, predicted, lo, changed)),
    }


def judged_step_ns(analysis: Any) -> float:
    """The verdict's judged time per unit (step, or the window): the denominator of its share, which the savings'
    shares take too (NaN where the analysis has no breakdown: a CPU verdict)."""
    parts = getattr(analysis, "breakdown", None)
    if parts is None or not parts.units or parts.judged_ns <= 0:
        return math.nan
    return parts.judged_ns / parts.units


def _share(result: WhatIf, judged_ns: float) -> dict:
    """The saving as a share of `result.share_base(judged_ns)`, never over the whole step."""
    base, of = result.share_base(judged_ns)
    share = round(min(result.saving_ns / base, 1.0), 4) if base > 0 else None
    return {"saving_share": share, "share_of": of, "share_base_us": round(base / 1e3, 3) if base > 0 else None}


def _paged(result: WhatIf, predicted: np.ndarray, lo: int, changed: int) -> dict:
    """What an answer listing part of the steps adds: where its page starts, how many steps there are, the p90s
    and the step the edits changed most (its index into every step)."""
    def us(value) -> float:
        return round(float(value) / 1e3, 3)
    return {"steps_offset": lo, "steps_total": int(predicted.size),
            "recorded_p90_step_us": us(np.percentile(result.recorded_ns, 90)), "p90_step_us": us(np.percentile(predicted, 90)),
            "most_changed_step": {"index": changed, "name": result.step_names[changed],
                                  "recorded_us": us(result.recorded_ns[changed]), "predicted_us": us(predicted[changed])}}
