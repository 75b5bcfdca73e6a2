"""The paged gap and stall tables: idle gaps of one device, per-step DataLoader stalls (the `gaps` and `stalls` routes)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..analysis.idle.gpu_idle import CAUSE_NAMES
from ..trace.model import MAX_SHOWN_CHARS, TraceModel

GAP_SORTS = ("start", "-start", "dur", "-dur")
STALL_ADVICE = ("raise DataLoader(num_workers=...) and set pin_memory=True and persistent_workers=True; "
                "move heavy per-sample work out of __getitem__ or onto the GPU")


def gaps_view(model: TraceModel, device: Any, *, causes: Optional[Sequence[int]] = None, min_ns: int = 0,
              t0_ns: Optional[int] = None, t1_ns: Optional[int] = None, sort: str = "start",
              offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """One page of a device's idle gaps after filtering and sorting: its lead (the idle judged before its first
    activity, `DeviceIdle.listed`) first, flagged `lead`, then the gaps of its window.

    Args:
        model: the trace.
        device: the DeviceIdle of the device.
        causes: Cause values to keep (None: all).
        min_ns: shortest gap kept.
        t0_ns, t1_ns: keep gaps overlapping this absolute window (None: unbounded).
        sort: one of GAP_SORTS.
        offset, limit: the page.
    """
    device = device.listed  # its lead, where it has one, is the first gap
    start, end = device.gap_start_ns, device.gap_end_ns
    keep = (end - start) >= min_ns
    if causes is not None:
        keep &= np.isin(device.gap_cause, np.asarray(causes, np.int8))
    if t0_ns is not None:
        keep &= end > t0_ns
    if t1_ns is not None:
        keep &= start < t1_ns
    sel = np.flatnonzero(keep)
    if sort != "start":
        key = start[sel] if sort == "-start" else end[sel] - start[sel]
        sel = sel[np.argsort(-key if sort.startswith("-") else key, kind="stable")]
    page = sel[offset: offset + limit]
    return {"device": device.device, "total": int(sel.size), "offset": offset, "limit": limit,
            **_gap_columns(model, device, page)}


NAMES_BUDGET_CHARS = 400_000  # a page's names table: 5,000 gaps with four distinct names each still fit 2 MB


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars - 1] + "\u2026"


def _name_index(model: TraceModel, rows: np.ndarray, ids: list[int]) -> list[int]:
    """Index of each row's name in the page's shared `names` table (appended to `ids`), -1 for no row."""
    table = {name_id: k for k, name_id in enumerate(ids)}
    out = []
    for row in rows.tolist():
        if row < 0:
            out.append(-1)
            continue
        name_id = int(model.name_id[row])
        if name_id not in table:
            table[name_id] = len(ids)
            ids.append(name_id)
        out.append(table[name_id])
    return out


def _gap_columns(model: TraceModel, device: Any, page: np.ndarray) -> dict[str, Any]:
    base = model.start_ns
    culprit = device.gap_culprit_row[page]
    ids: list[int] = []
    culprit_ix = _name_index(model, culprit, ids)
    annotation_ix = _name_index(model, device.gap_annotation_row[page], ids)
    caller_ix = _name_index(model, device.gap_caller_row[page], ids)
    next_ix = _name_index(model, device.gap_next_row[page], ids)
    per_name = max(16, min(MAX_SHOWN_CHARS, NAMES_BUDGET_CHARS // max(len(ids), 1)))
    launch = device.gap_launch_row[page]
    launch_us = np.round((model.ts_ns[np.maximum(launch, 0)] - base) / 1e3, 3).tolist()
    start, end = device.gap_start_ns[page], device.gap_end_ns[page]
    return {"names": [_cut(model.names[i], per_name) for i in ids],
            "gaps": {"start_us": np.round((start - base) / 1e3, 3).tolist(),
                     "dur_us": np.round((end - start) / 1e3, 3).tolist(),
                     "cause": [CAUSE_NAMES[c] for c in device.gap_cause[page].tolist()],
                     "culprit": culprit_ix,
                     "culprit_row": culprit.tolist(),
                     "culprit_after": device.gap_culprit_after[page].tolist(),
                     "caller": caller_ix,
                     "annotation": annotation_ix,
                     "next_kernel": next_ix,
                     "next_row": device.gap_next_row[page].tolist(),
                     "launch_us": [us if row >= 0 else None for us, row in zip(launch_us, launch.tolist())],
                     "lead": (start < device.window_start_ns).tolist()}}


def stalls_view(model: TraceModel, steps: Any, verdict: Any, *, offset: int = 0, limit: int = 1000) -> dict[str, Any]:
    """One page of steps: DataLoader wait, its share of the step, GPU idle during it, and the stall flag.

    `total` counts every step and `stalled_steps` every stalled one, whatever the page.
    """
    base = model.start_ns
    sel = slice(offset, offset + limit)
    dur = steps.end_ns[sel] - steps.start_ns[sel]
    share = np.divide(steps.dataloader_ns[sel], dur, out=np.zeros(dur.size), where=dur > 0)
    stalled = int(np.count_nonzero(steps.stalled))
    rows = [{"name": model.shown_names[n], "start_us": round((s - base) / 1e3, 3), "dur_us": d / 1e3,
             "dataloader_us": w / 1e3, "dataloader_share": round(float(f), 4), "gpu_idle_during_dataloader_us": i / 1e3,
             "stalled": bool(x)}
            for n, s, d, w, f, i, x in zip(steps.name_id[sel].tolist(), steps.start_ns[sel].tolist(), dur.tolist(),
                                           steps.dataloader_ns[sel].tolist(), share.tolist(),
                                           steps.dataloader_gpu_idle_ns[sel].tolist(), steps.stalled[sel].tolist())]
    if verdict is not None and verdict.bound == "dataloader-bound":
        suggestion: Optional[str] = verdict.suggestion
    else:
        suggestion = STALL_ADVICE if stalled else None
    return {"stalled_steps": stalled, "total": steps.count, "offset": offset, "limit": limit, "steps": rows,
            "suggestion": suggestion}
