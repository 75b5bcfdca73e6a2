"""Window overlays of the lanes view: GPU idle gaps by cause, steps and DataLoader waits.

Each overlay keeps what is at least one pixel wide (narrower shapes cannot be seen, and the lanes'
coverage `fill` already shows their share) and at most a fixed count, longest first.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.idle.gpu_idle import CAUSE_NAMES
from ..trace.model import TraceModel

MAX_GAPS = 1_500  # in all devices together
MAX_STEPS = 500
MAX_WAITS = 500


def in_window(start_ns: np.ndarray, end_ns: np.ndarray, t0_ns: int, t1_ns: int) -> np.ndarray:
    """Indices of sorted, non-overlapping intervals that overlap [t0, t1)."""
    lo = int(np.searchsorted(end_ns, t0_ns, side="right"))
    hi = int(np.searchsorted(start_ns, t1_ns, side="left"))
    return np.arange(lo, max(lo, hi))


def _visible(start_ns, end_ns, sel: np.ndarray, ns_per_px: float, cap: int) -> np.ndarray:
    """Of `sel`, those at least a pixel wide, at most `cap` of them (the longest), in time order."""
    length = end_ns[sel] - start_ns[sel]
    sel = sel[length >= ns_per_px]
    if sel.size > cap:
        sel = np.sort(sel[np.argsort(-(end_ns[sel] - start_ns[sel]), kind="stable")[:cap]])
    return sel


def _us(ns: np.ndarray, base: int) -> list[float]:
    return np.round((ns - base) / 1e3, 3).tolist()


def gaps_overlay(idle: Any, t0_ns: int, t1_ns: int, ns_per_px: float, base: int) -> dict[str, Any]:
    """Idle gaps of every device in the window, MAX_GAPS at most in all (`hidden`: those left out): at most MAX_GAPS
    per device first (the longest), then the longest MAX_GAPS of all, in device then time order. All devices'
    gaps are searched together (`GpuIdle.all_gaps`), one binary search per device."""
    gaps = idle.all_gaps if idle is not None else None
    if gaps is None or gaps.start_ns.size == 0:
        empty: list = []
        return {"device": empty, "start_us": empty, "end_us": empty, "cause": empty, "hidden": 0}
    start, end = gaps.start_ns, gaps.end_ns
    overlapping = gaps.overlapping(t0_ns, t1_ns)
    sel = overlapping[end[overlapping] - start[overlapping] >= ns_per_px]  # ascending
    for k in np.flatnonzero(np.bincount(gaps.owner(sel), minlength=gaps.device.size) > MAX_GAPS).tolist():
        mine = (sel >= gaps.ptr[k]) & (sel < gaps.ptr[k + 1])  # that device's longest MAX_GAPS
        sel = np.sort(np.concatenate((sel[~mine], _visible(start, end, sel[mine], 0, MAX_GAPS))))
    if sel.size > MAX_GAPS:
        sel = sel[np.sort(np.argsort(start[sel] - end[sel], kind="stable")[:MAX_GAPS])]
    return {"device": gaps.device[gaps.owner(sel)].tolist(), "start_us": _us(start[sel], base),
            "end_us": _us(end[sel], base), "cause": [CAUSE_NAMES[c] for c in gaps.cause[sel].tolist()],
            "hidden": int(overlapping.size) - int(sel.size)}


def steps_overlay(model: TraceModel, steps: Any, t0_ns: int, t1_ns: int, ns_per_px: float,
                  base: int) -> dict[str, Any]:
    """Steps overlapping the window (all of them, up to MAX_STEPS) and the visible DataLoader waits."""
    if steps is None:
        empty: dict[str, Any] = {"name": [], "start_us": [], "end_us": [], "stalled": []}
        return {**empty, "dataloader": {"start_us": [], "end_us": []}}
    sel = np.flatnonzero((steps.start_ns < t1_ns) & (steps.end_ns > t0_ns))[:MAX_STEPS]
    waits = _visible(steps.dl_start_ns, steps.dl_end_ns,
                     in_window(steps.dl_start_ns, steps.dl_end_ns, t0_ns, t1_ns), ns_per_px, MAX_WAITS)
    return {"name": [model.shown_names[i] for i in steps.name_id[sel].tolist()],
            "start_us": _us(steps.start_ns[sel], base), "end_us": _us(steps.end_ns[sel], base),
            "stalled": steps.stalled[sel].tolist(),
            "dataloader": {"start_us": _us(steps.dl_start_ns[waits], base), "end_us": _us(steps.dl_end_ns[waits], base)}}
