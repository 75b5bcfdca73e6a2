"""The op calls a graph replayed, drawn as op bars above the stream that ran their kernels (`lanes` answers).

A graph replay's kernels carry no op; `analysis/graphs` gives each to a *replayed call* of the reference that captured
it. The replayed calls become one more lane per stream, placed right before that stream's GPU lane: each call on the
stream of its first kernel (its own or a descendant's: a graph that forks onto several streams draws each branch
above its own stream), nested as the reference nested them (its depth counts the enclosing calls drawn on the same
stream), each bar spanning its kernels (device time), named by its op:

    lane id = the model's lane count + the GPU lane's id     kind "gpu", label "ops replayed by graphs · ..."
    events: row -1 (no trace event), kind "replayed_op", count > 1 for bars merged below a pixel

Level of detail: a call at least a pixel wide is its own bar; narrower ones at one depth merge per pixel into one
bar with their count, and the pixel widens until the answer holds at most MAX_REPLAYED_RECTS bars.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..trace.model import TraceModel

MAX_REPLAYED_RECTS = 4_000  # bars across the replayed lanes of one answer
MAX_NAME_CHARS = 160
KIND = "replayed_op"


def replayed_lanes(model: TraceModel, graphs: Any, t0_ns: int, t1_ns: int, width_px: int,
                   names: list[str]) -> dict[int, dict[str, Any]]:
    """GPU lane id -> the lane entry of the calls replayed on it in [t0_ns, t1_ns) (see the module docstring);
    the bars' names are appended to `names` (the answer's table) where missing."""
    if graphs is None or graphs.size == 0:
        return {}
    lane = _call_lanes(model, graphs)
    depth = _depths_on_lane(graphs.call_parent, lane)
    keep = np.flatnonzero((lane >= 0) & (graphs.call_end_ns > t0_ns) & (graphs.call_start_ns < t1_ns)
                          & (graphs.call_end_ns > graphs.call_start_ns))
    ns_per_px = (t1_ns - t0_ns) / max(width_px, 1)
    bars = _bars(graphs, keep, lane, depth, ns_per_px, t0_ns)
    while bars["start"].size > MAX_REPLAYED_RECTS:
        ns_per_px *= 2
        bars = _bars(graphs, keep, lane, depth, ns_per_px, t0_ns)
    index = {n: i for i, n in enumerate(names)}
    label = _label(graphs.reference)
    out: dict[int, dict[str, Any]] = {}
    base = model.start_ns
    for g in np.unique(bars["lane"]).tolist():
        sel = np.flatnonzero(bars["lane"] == g)
        ids = []
        for c, k in zip(bars["call"][sel].tolist(), bars["count"][sel].tolist()):
            ids.append(_name_index(model, graphs, c, index, names) if k == 1 else -1)
        out[g] = {"id": int(model.lane_kind.size + g), "kind": "gpu", "label": f"ops replayed by graphs \u00b7 {label}",
                  "device": int(model.lane_pid[g]), "stream": int(model.lane_tid[g]), "replayed_ops": True,
                  "max_depth": int(bars["depth"][sel].max()) if sel.size else 0,
                  "events": {"row": [-1] * sel.size,
                             "start_us": np.round((bars["start"][sel] - base) / 1e3, 3).tolist(),
                             "dur_us": np.round((bars["end"][sel] - bars["start"][sel]) / 1e3, 3).tolist(),
                             "depth": bars["depth"][sel].tolist(), "name": ids, "kind": [KIND] * sel.size,
                             "count": bars["count"][sel].tolist(), "fill": np.round(bars["fill"][sel], 2).tolist()}}
    return out


def _label(reference: str) -> str:
    return "the trace's own launches" if reference == "self" else f"from {os.path.basename(reference)}"


def _name_index(model: TraceModel, graphs: Any, call: int, index: dict[str, int], names: list[str]) -> int:
    name = model.shown_names[int(graphs.call_name[call])]
    name = name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "\u2026"
    if name not in index:
        index[name] = len(names)
        names.append(name)
    return index[name]


def _call_lanes(model: TraceModel, graphs: Any) -> np.ndarray:
    """Per replayed call, the GPU lane of the first kernel it or a descendant issued (-1: none attributed)."""
    out = np.full(graphs.size, -1, np.int64)
    mine = np.flatnonzero(graphs.act_call >= 0)
    if mine.size == 0:
        return out
    rows = graphs.act_rows[mine]
    ts, lane, call = model.ts_ns[rows], model.lane[rows].astype(np.int64), graphs.act_call[mine].astype(np.int64)
    order = np.argsort(ts, kind="stable")[::-1]  # latest first: the earliest kernel's lane is written last
    ts, lane, call = ts[order], lane[order], call[order]
    parent = graphs.call_parent.astype(np.int64)
    while call.size:  # each kernel up its calls' chain, to the calls whose first kernel it is
        first = graphs.call_start_ns[call] == ts
        out[call[first]] = lane[first]
        up = parent[call]
        go = up >= 0
        ts, lane, call = ts[go], lane[go], up[go]
    return out


def _depths_on_lane(parent: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """Per call, how many of its enclosing calls are drawn on its lane."""
    parent = parent.astype(np.int64)
    depth = np.zeros(parent.size, np.int64)
    me = np.arange(parent.size)
    up = parent.copy()
    while me.size:
        go = up >= 0
        me, up = me[go], up[go]
        depth[me] += lane[up] == lane[me]
        up = parent[up]
    return depth


def _bars(graphs: Any, keep: np.ndarray, lane: np.ndarray, depth: np.ndarray, ns_per_px: float,
          t0_ns: int) -> dict[str, np.ndarray]:
    """The bars of the kept calls at `ns_per_px`: wide calls alone, narrow ones merged per (lane, depth, pixel)."""
    start, end = graphs.call_start_ns[keep], graphs.call_end_ns[keep]
    wide = (end - start) >= ns_per_px
    pixel = np.floor((start - t0_ns) / ns_per_px).astype(np.int64)
    key = np.stack([lane[keep], depth[keep], wide.astype(np.int64), np.where(wide, np.arange(keep.size), pixel)])
    _, first, group = np.unique(key, axis=1, return_index=True, return_inverse=True)
    group = group.ravel()
    n = first.size
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(lo, group, start)
    np.maximum.at(hi, group, end)
    count = np.bincount(group, minlength=n)
    busy = np.bincount(group, weights=(end - start).astype(np.float64), minlength=n)
    return {"lane": lane[keep][first], "depth": depth[keep][first], "call": keep[first], "start": lo, "end": hi,
            "count": count, "fill": np.where(count == 1, 1.0, np.minimum(busy / np.maximum(hi - lo, 1), 1.0))}
