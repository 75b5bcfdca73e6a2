"""Distributions and curves: the launch-offset histogram and downsampled memory series."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..analysis.memory.timeline import downsample_minmax
from ..trace.model import TraceModel, union

MAX_GROWTH_STEPS = 1000  # growth per step is listed for the first steps only (a trace may hold a million)
# Samples in one memory answer, all devices together: a sample is three numbers (~40 bytes of JSON), so 20,000
# keep the answer under 1 MB, within the 2 MB every route promises (100,000 per device answered 2.6 MB), and
# still 4x the pixels of a wide screen (uPlot's rule) for one device.
MAX_TOTAL_POINTS = 20_000


def log_histogram(series: dict[str, np.ndarray], bins: int) -> dict[str, Any]:
    """Counts of several µs series over one set of log-spaced edges.

    The edges span the positive values of all series; zero and negative values (a kernel may start
    before its launch call returns) fall into bin 0, values past the last edge into the last bin.

    Args:
        series: name -> values in µs.
        bins: number of bins.

    Returns:
        {"scale": "log10", "edges_us": [bins + 1 edges], name: [bins counts], ...}; no edges and
        empty counts when no value is positive.
    """
    values = [np.asarray(v, np.float64) for v in series.values()]
    positive = np.concatenate([v[v > 0] for v in values]) if values else np.zeros(0)
    if positive.size == 0:
        return {"scale": "log10", "edges_us": [], **{name: [] for name in series}}
    lo, hi = np.log10(positive.min()), np.log10(positive.max())
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.logspace(lo, hi, bins + 1)
    out: dict[str, Any] = {"scale": "log10", "edges_us": [float(f"{e:.6g}") for e in edges]}
    for name, v in zip(series, values):
        which = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, bins - 1)
        out[name] = np.bincount(which, minlength=bins).tolist()
    return out


def memory_view(model: TraceModel, memory: Sequence[Any], *, max_points: int, device: Optional[str] = None,
                t0_ns: Optional[int] = None, t1_ns: Optional[int] = None) -> dict[str, Any]:
    """Every device's curve (or one device's) in the window, at most `max_points` samples each and
    MAX_TOTAL_POINTS in all (shared equally among the devices shown)."""
    base = model.start_ns
    shown = [s for s in memory if device is None or s.device == device]
    per_device = max(16, min(max_points, MAX_TOTAL_POINTS // max(1, len(shown))))
    return {"devices": [_series_entry(s, base, per_device, t0_ns, t1_ns) for s in shown],
            "max_points": per_device}


def _series_entry(s: Any, base: int, max_points: int, t0_ns: Optional[int], t1_ns: Optional[int]) -> dict[str, Any]:
    lo = 0 if t0_ns is None else max(int(np.searchsorted(s.ts_ns, t0_ns, side="right")) - 1, 0)
    hi = s.ts_ns.size if t1_ns is None else int(np.searchsorted(s.ts_ns, t1_ns, side="left"))
    ts, alloc, reserved = s.ts_ns[lo:hi], s.allocated_bytes[lo:hi], s.reserved_bytes[lo:hi]
    recorded = s.peak_reserved_bytes is not None
    if ts.size <= max_points:
        keep = np.arange(ts.size)
    elif not recorded:
        keep = downsample_minmax(ts, alloc, max_points)
    else:  # half the budget per curve: the extremes of both survive
        keep = union(downsample_minmax(ts, alloc, max_points // 2),
                          downsample_minmax(ts, reserved, max_points // 2))
    return {"device": s.device, "downsampled": bool(keep.size < ts.size), "points": int(keep.size),
            "source_points": int(ts.size), "ts_us": np.round((ts[keep] - base) / 1e3, 3).tolist(),
            "allocated_bytes": alloc[keep].tolist(), "reserved_bytes": reserved[keep].tolist() if recorded else None,
            "relative": bool(s.relative),
            "peak_allocated_bytes": s.peak_allocated_bytes, "peak_reserved_bytes": s.peak_reserved_bytes,
            "peak_at_us": round((s.peak_at_ns - base) / 1e3, 3), "peak_op": s.peak_op,
            "leak_suspect": bool(s.leak_suspect), "step_growth_bytes": s.step_growth_bytes[:MAX_GROWTH_STEPS].tolist(),
            "step_growth_total": int(s.step_growth_bytes.size)}
