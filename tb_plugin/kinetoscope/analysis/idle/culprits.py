"""What the CPU was doing during the idle gaps of one cause, grouped by what it was doing.

A gap's culprit (see `gpu_idle`) is an op row, a flag saying that no op ran and the row is the op
finished last, the op that made a sync call, and the user annotation around it. Gaps are grouped by
the names of those rows (one packed int64 key per gap, so no per-gap Python), and each group is named
once: `aten::copy_ in ## forward ##`, `after aten::mm`, `cudaStreamSynchronize in aten::item`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...trace.model import TraceModel
from ..core.selectors import NO_OP
from .gpu_idle import Cause, DeviceIdle

TOP_CULPRITS = 10


def _culprit_keys(model: TraceModel, device: DeviceIdle, sel: np.ndarray) -> tuple[list[tuple], np.ndarray]:
    """Distinct (culprit name, after, caller name, annotation name) ids over the gaps, and each gap's key index."""
    def name_ids(rows: np.ndarray) -> np.ndarray:  # name id + 1, 0 for no row
        return np.where(rows >= 0, model.name_id[np.maximum(rows, 0)].astype(np.int64) + 1, 0)
    sync = device.gap_cause[sel] == Cause.SYNC
    base = len(model.names) + 1
    culprit, caller = name_ids(device.gap_culprit_row[sel]), np.where(sync, name_ids(device.gap_caller_row[sel]), 0)
    annotation, after = name_ids(device.gap_annotation_row[sel]), device.gap_culprit_after[sel].astype(np.int64)
    if base < (1 << 20):  # one int64 key: ((culprit * base + caller) * base + annotation) * 2 + after < 2^62
        packed, inverse = np.unique(((culprit * base + caller) * base + annotation) * 2 + after, return_inverse=True)
        after_k, rest = packed % 2, packed // 2
        table = np.stack([rest // (base * base), after_k, (rest // base) % base, rest % base], axis=1)
    else:
        table, inverse = np.unique(np.stack([culprit, after, caller, annotation], axis=1), axis=0, return_inverse=True)
    return [(c - 1, a, k - 1, n - 1) for c, a, k, n in table.tolist()], inverse.reshape(-1)


def _culprit_name(model: TraceModel, key: tuple) -> tuple[str, Optional[str]]:
    culprit, after, caller, annotation = key
    text = model.shown_names[culprit] if culprit >= 0 else NO_OP
    if after:
        text = f"after {text}"
    if caller >= 0:
        text = f"{text} in {model.shown_names[caller]}"
    return text, (model.shown_names[annotation] if annotation >= 0 else None)


def _idle_by_culprit(model: TraceModel, device: DeviceIdle, cause: Cause) -> tuple[list[tuple], np.ndarray]:
    """The distinct culprit keys of one cause's gaps (`_culprit_keys`) and the idle time behind each (ns)."""
    sel = np.flatnonzero(device.gap_cause == cause)
    if sel.size == 0:
        return [], np.zeros(0)
    keys, inverse = _culprit_keys(model, device, sel)
    return keys, np.bincount(inverse, weights=device.gap_end_ns[sel] - device.gap_start_ns[sel], minlength=len(keys))


def top_culprits(model: TraceModel, device: DeviceIdle, cause: Cause = Cause.HOST, top: int = TOP_CULPRITS) -> list[dict]:
    """What the CPU was doing during the most idle time of one cause, largest first.

    Each row: `name` (see `culprit_names`), `annotation` (or None), `label` (both in one phrase) and `idle_us`.
    """
    keys, idle = _idle_by_culprit(model, device, cause)
    rows = []
    for i in np.argsort(-idle, kind="stable")[:top].tolist():
        name, annotation = _culprit_name(model, keys[i])
        rows.append({"name": name, "annotation": annotation, "label": f"{name} in {annotation}" if annotation else name,
                     "idle_us": float(idle[i]) / 1e3})
    return rows


def culprit_targets(model: TraceModel, device: DeviceIdle, cause: Cause, top: int = 3) -> list[tuple[str, float]]:
    """The ops an edit can name for the top culprits of one cause, with the idle time behind each (ns), largest
    first: the sync's calling op (else the call) for sync gaps, the op itself for the others. A gap after an op
    (no op running) or with no op names nothing to edit and is left out."""
    keys, idle = _idle_by_culprit(model, device, cause)
    out: dict[str, float] = {}
    for i in np.argsort(-idle, kind="stable").tolist():
        culprit, after, caller, _ = keys[i]  # name ids, -1 for none
        name_id = caller if caller >= 0 else culprit
        if after or name_id < 0:
            continue
        name = model.names[name_id]
        out[name] = out.get(name, 0.0) + float(idle[i])
        if len(out) >= top:
            break
    return sorted(out.items(), key=lambda kv: -kv[1])


def sync_culprit(model: TraceModel, device: Optional[DeviceIdle]) -> Optional[str]:
    """`cudaStreamSynchronize in aten::item`: the sync call (and its op) behind most sync idle time."""
    if device is None:
        return None
    top = top_culprits(model, device, Cause.SYNC, 1)
    return top[0]["label"] if top else None


def lead_culprit(model: TraceModel, device: DeviceIdle, cause: Cause = Cause.HOST) -> Optional[dict]:
    """The culprit of the device's lead (idle judged before its first activity, see `gpu_idle`) when the
    lead has that cause: `name`, `annotation`, `label` and `idle_us` like a `top_culprits` row, else None."""
    if device.lead_cause != cause or not device.has_lead:
        return None
    name = model.shown_names[model.name_id[device.lead_culprit_row]] if device.lead_culprit_row >= 0 else NO_OP
    annotation = model.shown_names[model.name_id[device.lead_annotation_row]] if device.lead_annotation_row >= 0 else None
    return {"name": name, "annotation": annotation, "label": f"{name} in {annotation}" if annotation else name,
            "idle_us": (device.window_start_ns - device.lead_start_ns) / 1e3}


def host_culprit(model: TraceModel, device: DeviceIdle) -> Optional[str]:
    """The label of what kept the host busiest while the device waited for it: the lead's culprit or the
    top host-gap culprit, whichever holds more idle time."""
    rows = top_culprits(model, device, Cause.HOST, 1) + [r for r in (lead_culprit(model, device),) if r]
    return max(rows, key=lambda r: r["idle_us"])["label"] if rows else None
