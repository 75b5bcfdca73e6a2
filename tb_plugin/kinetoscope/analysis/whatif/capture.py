"""`graph`: each step's device work captured once and replayed (CUDA graphs, `torch.compile(mode="reduce-overhead")`),
planned from the trace's own launches (`capture_plan`).

Inside a step, the launches between two blocking syncs (a sync ends a capture: `item()`, `.cpu()`, a synchronous
copy) make one captured region. Its host time, from the region's first launch call to the end of its last, becomes
one graph launch: the Python and framework work between the launches, and the launch calls themselves, are gone (a
DataLoader wait among them stays: loading a batch is not device work).
On the device its kernels follow one another in stream order with a graph node's latency between them (where they
did not overlap already). What the step does outside the regions stays as recorded: the host work before the first
launch (data preparation), after the last, and the syncs.

What cannot be captured stays eager and the plan says why: steps whose kernel sequence differs from the most common
step's (dynamic shapes, data-dependent control flow: a graph replays one sequence) and work already replayed from a
graph.

A graph launch costs the host in proportion to the nodes it replays (under the profiler: each traced node is
instrumented), and its first node starts only once the launch call has returned, so a region of n nodes becomes a
launch call of n times the cost per node and its nodes are issued at that call's end. The two device figures come
from the trace itself where it replays graphs (the median `cudaGraphLaunch` call per node it replays, and the median
gap between consecutive nodes of one replay), else from the H200 `cuda_graph` sample
(`samples/logs/cuda_h200/cuda_graph`, CUDA 13: a 48-node graph's launch call takes 36.8 µs, 766 ns a node; its nodes
follow each other 256 ns apart).
"""
from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np

from ...trace import intervals
from ..core.selectors import dataloader_union, graph_launch_mask
from .model import Context, cached

GRAPH_LAUNCH_NODE_NS = 36_766.0 / 48  # median cudaGraphLaunch call per node, samples/logs/cuda_h200/cuda_graph (H200)
NODE_GAP_NS = 256.0  # median gap between consecutive kernels of one replay there


class CapturePlan(msgspec.Struct, frozen=True):
    """Host cuts, the activities whose stream gap becomes a graph node's, and why some steps stay eager."""

    cut_start: np.ndarray  # float64 ns from the trace start
    cut_end: np.ndarray
    captured: np.ndarray  # int64 positions in the context's activities
    release: np.ndarray  # float64 ns per captured activity: when its region's graph launch call returns
    node_gap_ns: float
    launches: int  # launch calls captured
    note: str


def capture_plan(ctx: Context) -> CapturePlan:
    """The `graph` edit's plan for the context's steps (see the module docstring)."""
    model = ctx.model
    launch_ns, node_ns, measured = _graph_costs(ctx)
    replayed = graph_launch_mask(model, model.launch_idx[ctx.acts])
    graph_host = (model.ts_ns[np.unique(model.launch_idx[ctx.acts[replayed]])] - model.start_ns).astype(np.float64)
    signatures = []
    bounds = np.append(ctx.step_bounds, ctx.by_step.size)
    for s in range(ctx.step_start.size):
        mine = ctx.by_step[bounds[s]:bounds[s + 1]]
        mine = mine[ctx.linked[mine] & ~replayed[mine]]
        signatures.append((mine, model.name_id[ctx.acts[mine[np.argsort(ctx.host[mine], kind="stable")]]].tobytes()))
    common = Counter(sig for mine, sig in signatures if mine.size).most_common(1)
    starts, ends, captured, release, launches, dynamic = [], [], [], [], 0, 0
    for mine, sig in signatures:
        if not mine.size:
            continue
        if sig != common[0][0]:
            dynamic += 1
            continue
        launch = model.launch_idx[ctx.acts[mine]]
        for seg in np.unique(ctx.segment[mine]).tolist():
            part = mine[ctx.segment[mine] == seg]
            rows = np.unique(launch[ctx.segment[mine] == seg])
            lo = float(model.ts_ns[rows].min() - model.start_ns)
            hi = float(model.end_ns[rows].max() - model.start_ns)
            if np.any((graph_host >= lo) & (graph_host < hi)):
                continue  # a region already replaying a graph keeps its timing, the launches around it too
            call = launch_ns * part.size
            if hi - lo > call:
                starts.append(lo + call)
                ends.append(hi)
            captured.append(part)
            release.append(np.full(part.size, lo + min(call, hi - lo)))
            launches += int(rows.size)
    notes = []
    if dynamic:
        notes.append(f"{dynamic} of {sum(1 for m, _ in signatures if m.size)} steps launch another kernel sequence than "
                     f"the most common step's (dynamic shapes or control flow): they stay eager")
    if replayed.any():
        notes.append("work already replayed from a graph keeps its timing, and so do the launches between the same "
                     "syncs")
    if not measured:
        notes.append("graph launch and node costs from the H200 cuda_graph sample (the trace replays no graph)")
    starts, ends = _outside_dataloader(ctx, np.array(starts, np.float64), np.array(ends, np.float64))
    return CapturePlan(starts, ends, np.concatenate(captured) if captured else np.zeros(0, np.int64),
                       np.concatenate(release) if release else np.zeros(0), node_ns, launches, "; ".join(notes))


def _outside_dataloader(ctx: Context, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cuts without the DataLoader waits inside them: loading a batch is not device work a graph captures."""
    s, e = cached(ctx, "dataloader", lambda: dataloader_union(ctx.model))
    if not s.size or not starts.size:
        return starts, ends
    t0 = ctx.model.start_ns
    lo, hi = intervals.subtract(np.rint(starts).astype(np.int64), np.rint(ends).astype(np.int64), s - t0, e - t0)
    return lo.astype(np.float64), hi.astype(np.float64)


def _graph_costs(ctx: Context) -> tuple[float, float, bool]:
    """(graph launch call ns per node replayed, gap between consecutive nodes ns, measured in this trace): the
    trace's own medians where it replays graphs, else the sample's."""
    model = ctx.model
    replayed = np.flatnonzero(graph_launch_mask(model, model.launch_idx[ctx.acts]))
    if replayed.size < 2:
        return GRAPH_LAUNCH_NODE_NS, NODE_GAP_NS, False
    launch = model.launch_idx[ctx.acts[replayed]]
    order = replayed[np.lexsort((ctx.start[replayed], launch))]
    same = model.launch_idx[ctx.acts[order]][1:] == model.launch_idx[ctx.acts[order]][:-1]
    gaps = (ctx.start[order][1:] - (ctx.start[order] + ctx.dur[order])[:-1])[same]
    gaps = gaps[gaps >= 0]
    calls, nodes = np.unique(launch, return_counts=True)
    node = float(np.median(gaps)) if gaps.size else NODE_GAP_NS
    return float(np.median(model.dur_ns[calls] / nodes)), node, True
