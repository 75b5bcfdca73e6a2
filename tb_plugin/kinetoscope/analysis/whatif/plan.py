"""The plan of a set of edits (`plan_of`): which host time goes or shrinks, which activities get longer or shorter or
are fused, which syncs wait less, which communication no one waits for. The edits' spellings are `edits.py`'s."""
from __future__ import annotations

import fnmatch
from typing import Optional

import numpy as np

from ...trace import intervals
from ...trace.kinds import GRAPH_LAUNCH_CALLS, Kind, is_collective_name
from ...trace.model import TraceModel, unique
from ..core.selectors import comm_mask, cpu_compute_union, cpu_rows, dataloader_union, launch_call_rows
from ..roofline.figures import activity_shares, trace_roofline
from ..roofline.precision import precision_scales
from ..roofline.work import CATEGORIES
from ..tables.index import TableIndex
from .capture import capture_plan
from .edits import OP_SEP, Edit
from .model import Context, Plan, cached, lane_running_max

Cuts = list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # host intervals (start, end, the share of them kept)


def plan_of(ctx: Context, edits: tuple[Edit, ...], matched: dict[str, int]) -> Plan:
    """The plan of `edits`, in their order; `matched` gets how many events each edit changed."""
    cuts: Cuts = []
    plan = Plan()
    scaled_in = np.zeros(ctx.acts.size, bool)  # kernels a `kernel:in:` edit scaled already
    for edit in edits:
        handler = _HANDLERS.get(edit.kind)
        if handler is not None:
            matched[edit.text] = handler(ctx, plan, edit, cuts, scaled_in)
    if cuts:
        plan.cut_start, plan.cut_end, plan.cut_factor = disjoint(*(np.concatenate(parts) for parts in zip(*cuts)))
    return plan


def _host_cut(model: TraceModel, s: np.ndarray, e: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t0 = model.start_ns
    return (s - t0).astype(np.float64), (e - t0).astype(np.float64), factor


def _durations(ctx: Context, plan: Plan) -> np.ndarray:
    """The plan's per-activity duration scale, made (all ones) the first time an edit scales one."""
    if plan.dur_scale is None:
        plan.dur_scale = np.ones(ctx.acts.size)
    return plan.dur_scale


def _dataloader(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    s, e = cached(ctx, "dataloader", lambda: dataloader_union(ctx.model))
    cuts.append(_host_cut(ctx.model, s, e, np.zeros(s.size)))
    return int(s.size)


def _host(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    model = ctx.model
    rows = cached(ctx, "cpu_rows", lambda: cpu_rows(model))
    target = edit.target
    ids = model.name_ids_where(lambda n, target=target: n == target)
    rows = rows[model.name_in(ids, rows)]
    s, e = intervals.union(model.ts_ns[rows], model.end_ns[rows])
    cuts.append(_host_cut(model, s, e, np.full(s.size, edit.factor)))
    return int(rows.size)


def _kernel(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    model, pattern = ctx.model, edit.target
    glob = any(ch in pattern for ch in "*?[")
    low = pattern.lower()
    ids = model.name_ids_where(lambda n, pattern=pattern, glob=glob, low=low:
                               n == pattern or (fnmatch.fnmatchcase(n, pattern) if glob else low in n.lower()))
    hit = model.name_in(ids, ctx.acts)
    _durations(ctx, plan)[hit] *= edit.factor
    return int(hit.sum())


def _kernel_in(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    hit = _launched_inside(ctx, edit.target.split(OP_SEP))
    fresh = hit & ~scaled_in  # a kernel inside two such ops (conv2d > cudnn_convolution) is scaled once
    _durations(ctx, plan)[fresh] *= edit.factor
    scaled_in |= hit
    return int(hit.sum())


def _fuse(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    fused, calls = _fusion(ctx, edit.target)
    plan.fused_into = fused if plan.fused_into is None else np.where(plan.fused_into >= 0, plan.fused_into, fused)
    cuts.append(_host_cut(ctx.model, ctx.model.ts_ns[calls], ctx.model.end_ns[calls], np.zeros(calls.size)))
    return int(np.count_nonzero(fused >= 0))


def _comm(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    plan.gap_i, plan.latency_i, host, n = _hidden_comm(ctx)
    plan.unawaited = comm_mask(ctx.model, ctx.acts)
    cuts.append(host)
    return n


def _first_step(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    factor, rows = _warmup(ctx)
    if rows is None:
        return 0
    cuts.append((ctx.step_start[:1], ctx.step_end[:1], np.array([factor])))
    _durations(ctx, plan)[rows] *= factor
    return 1 + int(rows.size)


def _roofline(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    """`roofline:CATEGORY>=P%`: each kernel (memcpy, memset) launched by an op call of CATEGORY whose share of the
    roof is below P runs at P: its length times share / P (the call's time at the roof over P, its kernels in
    proportion). Calls without a model, or on a device without peaks, keep their length."""
    category, share = cached(ctx, "roofline_shares", lambda: roof_shares(ctx))
    hit = (category == CATEGORIES.index(edit.target)) & (share < edit.factor)
    _durations(ctx, plan)[hit] *= share[hit] / edit.factor
    return int(hit.sum())


def _precision(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    """`precision:bf16` (or fp16): the matrix-unit op calls running in fp32 or tf32 run in that dtype at their
    share of the roof (`roofline.precision`): their kernels take their time at the new roof over their time at
    the roof now."""
    scale = cached(ctx, f"precision:{edit.target}",
                   lambda: precision_scales(_roofline_of(ctx), ctx.acts, edit.target))
    _durations(ctx, plan)[:] *= scale
    return int(np.count_nonzero(scale < 1))


def _roofline_of(ctx: Context):
    """The Roofline the replayer was given, else one made with the built-in peaks."""
    roof = ctx.cache.get("roofline")
    if roof is None:
        model = ctx.model
        roof = ctx.cache["roofline"] = trace_roofline(model, tables_of(ctx))
    return roof


def tables_of(ctx: Context) -> TableIndex:
    """The trace's TableIndex the replayer was given, else one built once for every plan."""
    return cached(ctx, "tables", lambda: TableIndex.build(ctx.model))


def roof_shares(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """Per activity of the context: the category index of the op call that launched it and that call's share of
    the roof (`roofline.figures.activity_shares`), from the Roofline the replayer was given (else one made with
    the built-in peaks)."""
    return activity_shares(_roofline_of(ctx), ctx.acts)


def _graph(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    """`graph`: each step's launches between syncs captured and replayed as one graph (`capture.capture_plan`)."""
    found = cached(ctx, "capture", lambda: capture_plan(ctx))
    cuts.append((found.cut_start, found.cut_end, np.zeros(found.cut_start.size)))
    if found.captured.size:
        gap = ctx.gap_i.copy() if plan.gap_i is None else plan.gap_i
        mine = found.captured[gap[found.captured] >= 0]  # overlapping nodes (programmatic dependent launch) keep theirs
        gap[mine] = np.rint(found.node_gap_ns).astype(np.int64)
        plan.gap_i = gap
        if plan.latency_i is None:
            plan.latency_i = ctx.latency_i.copy()
        # a node is issued once its graph's launch call returns, after the launch latency the trace shows
        typical = float(np.median(ctx.latency_i[ctx.linked])) if ctx.linked.any() else 0.0
        wait = np.rint(found.release - ctx.host[found.captured] + typical).astype(np.int64)
        plan.latency_i[found.captured] = np.maximum(plan.latency_i[found.captured], wait)
    if found.note:
        plan.notes[edit.text] = found.note
    return found.launches


def _sync(ctx: Context, plan: Plan, edit: Edit, cuts: Cuts, scaled_in: np.ndarray) -> int:
    hit = _syncs_named(ctx, edit.target)
    if plan.sync_factor is None:
        plan.sync_factor = np.ones(ctx.syncs.size)
    plan.sync_factor[hit] *= edit.factor
    return int(hit.sum())


# Each kind of edit (`edits.py`) and what it does to the plan: returns how many events it changed.
_HANDLERS = {"dataloader": _dataloader, "host": _host, "kernel": _kernel, "kernel-in": _kernel_in, "fuse": _fuse,
             "comm": _comm, "warmup": _first_step, "sync": _sync, "roofline": _roofline,
             "precision": _precision, "graph": _graph}


def _warmup(ctx: Context) -> tuple[float, Optional[np.ndarray]]:
    """(median / first step time, the activities launched inside the first step) for `warmup=median`; (1, None)
    when there is no second step or the first is no slower than the median of the others."""
    if ctx.step_start.size < 2:
        return 1.0, None
    durs = ctx.step_end - ctx.step_start
    median = float(np.median(durs[1:]))
    if durs[0] <= median:  # durations are never negative: a first step above the median is above 0
        return 1.0, None
    return median / float(durs[0]), ctx.by_step[ctx.step_bounds[0]:ctx.step_bounds[1]]



def _occurrences(ctx: Context, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outermost intervals of the ops or regions named `names` on each thread: (lane, start, end) arrays,
    sorted by (lane, start)."""
    model = ctx.model
    wanted = set(names)
    ids = model.name_ids_where(lambda n: n in wanted)
    rows = cached(ctx, "cpu_rows", lambda: cpu_rows(model))
    rows = rows[model.name_in(ids, rows)] if ids.size else rows[:0]
    if not rows.size:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    rows = rows[np.lexsort((model.ts_ns[rows], model.lane[rows]))]
    lane = model.lane[rows].astype(np.int64)
    start, end = model.ts_ns[rows], model.end_ns[rows]
    new_lane = np.concatenate(([True], lane[1:] != lane[:-1]))
    reach = lane_running_max(np.concatenate(([np.iinfo(np.int64).min], end[:-1])), new_lane)
    outer = new_lane | (start >= reach)
    bounds = np.flatnonzero(outer)
    return lane[outer], start[outer], np.maximum.reduceat(end, bounds)



def _in_occurrence(ctx: Context, occ: tuple[np.ndarray, np.ndarray, np.ndarray], calls: np.ndarray) -> np.ndarray:
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



def _launched_inside(ctx: Context, names: list[str]) -> np.ndarray:
    """Which activities are kernels whose launch call ran inside an op or region named in `names`, or that a graph
    replayed for a replayed call of such an op or inside one (`analysis/graphs`)."""
    launch = ctx.model.launch_idx[ctx.acts]
    kernels = (ctx.model.kind[ctx.acts] == Kind.KERNEL) & (launch >= 0)
    hit = np.zeros(ctx.acts.size, bool)
    hit[kernels] = _in_occurrence(ctx, _occurrences(ctx, names), launch[kernels]) >= 0
    return hit | (_replayed_inside(ctx, names) & kernels)


def _replayed_inside(ctx: Context, names: list[str]) -> np.ndarray:
    """Which activities a graph replayed for a replayed call named in `names` or nested in one."""
    model = ctx.model
    out = np.zeros(ctx.acts.size, bool)
    if not any(n in GRAPH_LAUNCH_CALLS for n in model.names):
        return out
    graphs = tables_of(ctx).graphs
    if graphs is None or not graphs.size:
        return out
    wanted = set(names)
    named = np.isin(graphs.call_name, model.name_ids_where(lambda n: n in wanted))
    inside, up = named.copy(), graphs.call_parent.astype(np.int64)
    while (up >= 0).any():  # a call inside a named one: up its chain of replayed parents
        inside |= (up >= 0) & named[np.maximum(up, 0)]
        up = np.where(up >= 0, graphs.call_parent[np.maximum(up, 0)], -1)
    rows = graphs.act_rows[(graphs.act_call >= 0) & inside[np.maximum(graphs.act_call, 0)]]
    out[np.isin(ctx.acts, rows)] = True  # ctx.acts is in (lane, start) order, not ascending
    return out



def _fusion(ctx: Context, name: str) -> tuple[np.ndarray, np.ndarray]:
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



def _hidden_comm(ctx: Context) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], int]:
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
    rows = cached(ctx, "cpu_rows", lambda: cpu_rows(model))
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



def _syncs_named(ctx: Context, name: str) -> np.ndarray:
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



def disjoint(start: np.ndarray, end: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted, disjoint host intervals: where two edits' intervals overlap, the earlier-starting one keeps the
    overlap and the later one is trimmed to begin at its end."""
    order = np.argsort(start, kind="stable")
    start, end, factor = start[order], end[order], factor[order]
    reach = np.maximum.accumulate(np.concatenate(([-np.inf], end[:-1])))
    start = np.maximum(start, reach)
    keep = end > start
    return start[keep], end[keep], factor[keep]

