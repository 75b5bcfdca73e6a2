"""What to draw for a time window at a pixel width: every lane's events, merged to a bounded size.

Level of detail (speedscope/uPlot): an event at least `k` pixels wide is drawn as itself; narrower
ones merge with their neighbours at the same (lane, depth) into a coverage block (count, fill) until
a gap of `k` pixels. `k` starts at 1 px and grows only where needed to keep each lane under
RECTS_PER_PX rectangles per pixel and the whole answer under MAX_RECTS.

Item i (in (lane, depth, start) order) starts a rectangle at threshold k exactly when it is the first
of its group in the window or max(width_i, width_{i-1}, gap before i) >= k. That quantity, `m`, is
precomputed per item (lane_index.py), so the smallest k meeting a budget is an order statistic of
`m` (np.partition) rather than a search. Items come from the coarsest precomputed level that is
still finer than a pixel, so the work follows the answer's size, not the trace's.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..trace.kinds import ACTIVITY_KINDS, LAUNCH_KINDS, Kind, LaneKind
from ..trace.model import TraceModel, unique
from .counter_lanes import counters_view
from .lane_index import LaneIndex, Level, owned_activities, window_positions
from .overlays import gaps_overlay, steps_overlay
from .replayed_lanes import replayed_lanes

RECTS_PER_PX = 4  # per lane, across its depths
# Worst-case JSON: 8000 rects x 70 B + names 100 KB + flows 1000 x 80 B + gaps 1500 x 45 B + steps: < 850 KB.
MAX_RECTS = 8_000
MAX_FLOWS = 1_000
MAX_NAME_CHARS = 160  # longer names are cut in lanes (the `event` route has them whole)
NAMES_BUDGET_CHARS = 100_000  # names of the widest events first; the rest go without (name -1)
KIND_NAMES = tuple(k.name.lower() for k in Kind)
LANE_KIND_NAMES = {LaneKind.CPU: "cpu", LaneKind.GPU: "gpu", LaneKind.MARKER: "marker"}


def lanes_view(model: TraceModel, index: LaneIndex, t0_ns: int, t1_ns: int, width_px: int,
               idle: Any = None, steps: Any = None, counters: bool = True, graphs: Any = None) -> dict[str, Any]:
    """The `lanes` payload (see HTTP_API.md) for the window [t0_ns, t1_ns) at `width_px` pixels.

    Args:
        model, index: the trace and its lane index.
        t0_ns, t1_ns: absolute window bounds (t0 < t1).
        width_px: drawing width in pixels.
        idle, steps: the GpuIdle and Steps analyses for the overlays (optional).
        counters: whether to add the counter lanes (counter_lanes.py; off, the answer has `counters` None).
        graphs: the tables' GraphAttribution: the calls graph replays ran, as lanes before their streams'
            (replayed_lanes.py; None: none).
    """
    ns_per_px = (t1_ns - t0_ns) / width_px
    level = index.level_for(ns_per_px)
    pos = window_positions(index, level, t0_ns, t1_ns)
    pos = pos[level.end_ns[pos] > t0_ns]
    rects = _merge(index, level, pos, ns_per_px, width_px)
    names, name_ix = _names(model, rects["row"], rects["width_px"])
    base = model.start_ns
    lanes = _lane_payload(model, index, rects, name_ix, base)
    replayed = replayed_lanes(model, graphs, t0_ns, t1_ns, width_px, names)
    if replayed:  # each right before the stream that ran its kernels
        lanes = [entry for lane in lanes for entry in ((replayed[lane["id"]], lane) if lane["id"] in replayed else (lane,))]
    flows = _flows(model, rects["row"][rects["row"] >= 0], index, base)
    gaps = gaps_overlay(idle, t0_ns, t1_ns, ns_per_px, base)
    merged = bool((rects["count"] > 1).any()) or gaps["hidden"] > 0
    return {"start_us": (t0_ns - base) / 1e3, "end_us": (t1_ns - base) / 1e3, "width_px": width_px,
            "us_per_px": ns_per_px / 1e3, "names": names, "lanes": lanes, "gaps": gaps,
            "steps": steps_overlay(model, steps, t0_ns, t1_ns, ns_per_px, base), "flows": flows,
            "merged": merged, "rects": int(rects["count"].size), "lanes_total": int(model.lane_kind.size),
            "lanes_hidden": int(model.lane_kind.size - index.shown_lanes.size),
            "counters": counters_view(index.counters, t0_ns, t1_ns, width_px) if counters else None}


def _merge(index: LaneIndex, level: Level, pos: np.ndarray, ns_per_px: float, width_px: int) -> dict[str, np.ndarray]:
    """Rectangles of the visible items: extent, event count, fill, group, and the model row of the
    event when the rectangle is a single event (-1 for a coverage block)."""
    n = pos.size
    m = level.m_ns[pos] / ns_per_px
    if n:
        m[0] = np.inf
        m[np.flatnonzero(pos[1:] != pos[:-1] + 1) + 1] = np.inf  # an item whose predecessor is off-window
    group = level.group[pos]
    k = _thresholds(m, index.group_lane[group], RECTS_PER_PX * width_px, MAX_RECTS)
    starts = np.flatnonzero(m >= k)
    at = pos[starts]
    if n:
        start, end = level.start_ns[at], np.maximum.reduceat(level.end_ns[pos], starts)
        count, busy = np.add.reduceat(level.count[pos], starts), np.add.reduceat(level.busy_ns[pos], starts)
    else:
        start = end = count = busy = np.zeros(0, np.int64)
    extent = np.maximum(end - start, 1)
    return {"row": np.where(count == 1, level.first_row[at], -1), "count": count, "start": start, "end": end,
            "fill": np.where(count == 1, 1.0, np.minimum(busy / extent, 1.0)), "group": group[starts],
            "kind_row": level.first_row[at], "width_px": (end - start) / ns_per_px}


def _thresholds(m: np.ndarray, lane: np.ndarray, lane_cap: int, total_cap: int) -> np.ndarray:
    """Per row, the merge threshold k (px): the smallest meeting the per-lane and total budgets."""
    k = np.ones(m.size)
    bounds = np.flatnonzero(np.concatenate(([True], lane[1:] != lane[:-1], [True]))) if m.size else [0]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        k[lo:hi] = _order_threshold(m[lo:hi], lane_cap)
    kept = np.where(m >= k, m, -1.0)
    return np.maximum(k, _order_threshold(kept, total_cap))


def _order_threshold(m: np.ndarray, cap: int) -> float:
    """Smallest k >= 1 with at most `cap` values of m >= k (infinite values always count)."""
    if np.count_nonzero(m >= 1.0) <= cap:
        return 1.0
    v = -np.partition(-m, cap)[cap]  # the (cap+1)-th largest
    return max(float(np.nextafter(v, np.inf)), 1.0)


def _names(model: TraceModel, rows: np.ndarray, width_px: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The names table of the answer, widest events first, within NAMES_BUDGET_CHARS.

    Returns:
        (names, name index per rectangle: -1 for blocks and for names beyond the budget).
    """
    name_ix = np.full(rows.size, -1, np.int64)
    real_at = np.flatnonzero(rows >= 0)
    if real_at.size == 0:
        return [], name_ix
    by_width = real_at[np.argsort(-width_px[real_at], kind="stable")]
    uniq, first_seen = np.unique(model.name_id[rows[by_width]], return_index=True)
    uniq = uniq[np.argsort(first_seen)]
    texts = [_short(model.names[i]) for i in uniq.tolist()]
    fits = np.cumsum([len(t) + 3 for t in texts]) <= NAMES_BUDGET_CHARS
    uniq, texts = uniq[fits], [t for t, ok in zip(texts, fits) if ok]
    lookup = np.full(len(model.names), -1, np.int64)
    lookup[uniq] = np.arange(uniq.size)
    name_ix[real_at] = lookup[model.name_id[rows[real_at]]]
    return texts, name_ix


def _short(name: str) -> str:
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "\u2026"


def _lane_payload(model, index, rects, name_ix, base) -> list[dict[str, Any]]:
    """One entry per shown lane (the same lanes for every window, so the layout is stable while panning),
    events columnar; events of lanes beyond MAX_LANES are left out."""
    rect_lane = index.group_lane[rects["group"]]
    cols = {
        "row": rects["row"].tolist(),
        "start_us": np.round((rects["start"] - base) / 1e3, 3).tolist(),
        "dur_us": np.round((rects["end"] - rects["start"]) / 1e3, 3).tolist(),
        "depth": index.group_depth[rects["group"]].tolist(),
        "name": name_ix.tolist(),
        "kind": [KIND_NAMES[k] for k in model.kind[rects["kind_row"]].tolist()],
        "count": rects["count"].tolist(),
        "fill": np.round(rects["fill"], 2).tolist(),
    }
    lanes = index.shown_lanes
    lo, hi = np.searchsorted(rect_lane, lanes, "left"), np.searchsorted(rect_lane, lanes, "right")
    return [_lane_entry(model, index, lane, {key: col[a:b] for key, col in cols.items()})
            for lane, a, b in zip(lanes.tolist(), lo.tolist(), hi.tolist())]


def _lane_entry(model: TraceModel, index: LaneIndex, lane: int, events: dict) -> dict[str, Any]:
    kind = LaneKind(int(model.lane_kind[lane]))
    entry: dict[str, Any] = {"id": lane, "kind": LANE_KIND_NAMES[kind], "label": _short(model.lane_label[lane])}
    a, b = int(model.lane_pid[lane]), int(model.lane_tid[lane])
    entry.update({"device": a, "stream": b} if kind == LaneKind.GPU else {"pid": a, "tid": b})
    entry["max_depth"] = int(index.lane_max_depth[lane])
    entry["events"] = events
    return entry


def _flows(model: TraceModel, shown_rows: np.ndarray, index: LaneIndex, base: int) -> dict[str, list]:
    """Launch -> GPU activity pairs with at least one end drawn as an individual event."""
    activity = np.isin(model.kind[shown_rows], np.array(ACTIVITY_KINDS, np.int8))
    gpu = shown_rows[activity & (model.launch_idx[shown_rows] >= 0)]
    launches = shown_rows[np.isin(model.kind[shown_rows], np.array(LAUNCH_KINDS, np.int8))]
    _, owned = owned_activities(index, launches)
    gpu_rows = unique(np.concatenate((gpu, owned)))
    truncated = gpu_rows.size > MAX_FLOWS
    gpu_rows = gpu_rows[np.argsort(model.ts_ns[gpu_rows], kind="stable")][:MAX_FLOWS]
    launch_rows = model.launch_idx[gpu_rows]
    return {"launch_row": launch_rows.tolist(), "gpu_row": gpu_rows.tolist(),
            "launch_us": np.round((model.ts_ns[launch_rows] - base) / 1e3, 3).tolist(),
            "gpu_us": np.round((model.ts_ns[gpu_rows] - base) / 1e3, 3).tolist(),
            "launch_lane": model.lane[launch_rows].tolist(), "gpu_lane": model.lane[gpu_rows].tolist(),
            "launch_depth": model.depth[launch_rows].tolist(), "gpu_depth": model.depth[gpu_rows].tolist(),
            "truncated": bool(truncated)}


def window_ns(model: TraceModel, start_us: Optional[float], end_us: Optional[float]) -> tuple[int, int]:
    """Absolute [t0, t1) from optional µs offsets relative to the trace start (defaults: whole trace)."""
    base = model.start_ns
    t0 = base if start_us is None else base + int(round(start_us * 1e3))
    t1 = max(model.stop_ns, base + 1) if end_us is None else base + int(round(end_us * 1e3))
    return t0, t1
